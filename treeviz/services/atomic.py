"""Atomic writes on a local filesystem.

A folder is published by writing every file into a hidden temporary sibling (``.tmp-*``),
fsyncing the files and their folders, and renaming it into place; the rename never overwrites,
so a crash leaves either nothing or a complete folder. A single file is replaced through a
temporary file and :func:`os.replace`. A folder is deleted by renaming it out of sight
(``.trash-*``) first, then removing it. Nothing here pickles or unpickles.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from models.ground.errors import TreevizError

#: Name prefix of the hidden folder a publish writes into before renaming it into place.
TMP_PREFIX = ".tmp-"
#: Name prefix a folder is renamed to before it is deleted.
TRASH_PREFIX = ".trash-"


def fsync_dir(path: Path) -> None:
    """Flush a folder's entries to disk (a no-op where folders cannot be opened, e.g. Windows).

    Parameters
    ----------
    path
        The folder to fsync.
    """
    if os.name != "posix":  # pragma: no cover - Windows cannot open a folder for fsync
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_synced(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` and fsync the file before returning.

    Parameters
    ----------
    path
        The file to create or truncate.
    data
        Its new content.
    """
    with open(path, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def publish_folder(files: Mapping[str, bytes], parent: Path, name: str) -> bool:
    """Write ``files`` into a temporary folder in ``parent``, then rename it to ``parent/name``.

    Parameters
    ----------
    files
        Relative path (may contain ``/``) to content, for every file of the new folder.
    parent
        The folder that receives the new one; created if missing.
    name
        The new folder's name.

    Returns
    -------
    bool
        True once the folder is in place; False (writing nothing) if ``parent/name`` already
        exists: nothing is overwritten.

    Raises
    ------
    OSError
        If a write or the rename fails for another reason; the temporary folder is removed.
    """
    parent.mkdir(parents=True, exist_ok=True)
    final = parent / name
    tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{name}-", dir=parent))
    try:
        for rel, data in files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            write_synced(target, data)
        for folder in {(tmp / rel).parent for rel in files}:
            fsync_dir(folder)
        if final.exists():
            return False
        try:
            os.rename(tmp, final)  # fails on an existing non-empty folder: never overwrites
        except OSError:
            if final.exists():
                return False
            raise
        fsync_dir(parent)
        return True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def replace_file(path: Path, data: bytes) -> None:
    """Replace the content of ``path`` atomically (temporary sibling file, then ``os.replace``).

    Parameters
    ----------
    path
        The file to replace; its folder must exist.
    data
        The new content.

    Raises
    ------
    FileNotFoundError
        If the file's folder no longer exists.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    try:
        write_synced(Path(tmp), data)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def discard_folder(folder: Path, parent: Path, missing_ok: bool = False) -> None:
    """Rename ``folder`` out of sight first (atomic), then delete it.

    Parameters
    ----------
    folder
        The folder to delete.
    parent
        Its parent, which receives the hidden ``.trash-*`` name.
    missing_ok
        Return quietly, instead of raising, when ``folder`` does not exist.

    Raises
    ------
    TreevizError
        If ``folder`` is already gone and ``missing_ok`` is False.
    """
    trash = parent / f"{TRASH_PREFIX}{folder.name}-{secrets.token_hex(4)}"
    try:
        os.rename(folder, trash)
    except FileNotFoundError:
        if missing_ok:
            return
        raise TreevizError(f"{folder.name} was already deleted (perhaps in another tab).") from None
    shutil.rmtree(trash, ignore_errors=True)
