"""Atomic writes on a local filesystem.

A folder is published by writing every file into a hidden temporary sibling (``.tmp-*``),
fsyncing the files and their folders, and renaming it into place; the rename never overwrites,
so a crash leaves either nothing or a complete folder. A single file is replaced through a
temporary file and :func:`os.replace`. A folder is deleted by renaming it out of sight
(``.trash-*``) first, then removing it. Nothing here pickles or unpickles.

Nothing here writes through a symbolic link: files are created with ``O_NOFOLLOW`` (new ones with
``O_EXCL`` as well), a folder is published only where no entry at all (not even a dangling link)
stands, and deleting a link removes the link, never what it points to.
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


def write_synced(path: Path, data: bytes, *, new: bool = False) -> None:
    """Write ``data`` to ``path`` and fsync the file before returning; never through a link.

    Parameters
    ----------
    path
        The file to create or truncate.
    data
        Its new content.
    new
        Refuse (``FileExistsError``) when anything already stands at ``path``.

    Raises
    ------
    OSError
        If ``path`` is a symbolic link (``ELOOP``), or the write fails.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_EXCL if new else os.O_TRUNC
    with open(os.open(path, flags, 0o666), "wb") as fh:
        _write_all(fh, data)


def _write_all(fh, data: bytes) -> None:
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
        True once the folder is in place; False (writing nothing) if anything already stands at
        ``parent/name``, a symbolic link (even a dangling one) included: nothing is overwritten,
        and nothing is written through a link.

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
            write_synced(target, data, new=True)
        for folder in {(tmp / rel).parent for rel in files}:
            fsync_dir(folder)
        if os.path.lexists(final):  # a folder, a file or a link (dangling or not): taken
            return False
        try:
            os.rename(tmp, final)  # fails on an existing non-empty folder: never overwrites
        except OSError:
            if os.path.lexists(final):
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
    try:
        with open(fd, "wb") as fh:  # the file mkstemp made, by its descriptor: never a link put there
            _write_all(fh, data)
        os.replace(tmp, path)  # a link at ``path`` is replaced itself, never written through
        fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def discard_folder(folder: Path, parent: Path, missing_ok: bool = False) -> None:
    """Rename ``folder`` out of sight first (atomic), then delete it (a symbolic link standing
    there is removed itself: what it points to is never touched).

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
    remove_entry(trash)


def remove_entry(path: Path) -> None:
    """Delete ``path``: a symbolic link or a file is unlinked, a folder removed with what it holds
    (links inside it are unlinked, never followed). Errors are ignored (a leftover is reported by
    whoever lists the folder)."""
    try:
        if os.path.islink(path) or not os.path.isdir(path):
            os.unlink(path)
            return
    except OSError:
        return
    shutil.rmtree(path, ignore_errors=True)
