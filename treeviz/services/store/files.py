"""Reading a run store's files without following symbolic links, and knowing a file again by its
identity (inode, modification time in nanoseconds, size)."""

from __future__ import annotations

import json
import os
import stat
from typing import NamedTuple

from models.ground.errors import TreevizError
from treeviz.services.store.record import RunRecord

#: The file of a run folder that holds its record.
RUN_JSON = "run.json"
#: What a store remembers of a file to know it is the one it read: inode, mtime in ns, size.
FileIdentity = tuple[int, int, int]

LINK = "is a symbolic link, which the store never follows"
#: A run folder modified less than this many seconds before a listing is checked file by file at
#: the next listing too: a change within the same tick of the file system's clock leaves its
#: modification time as it was (the "racy" case git's index knows).
RACY_S = 2.0
RUN_JSON_TAIL = os.sep + RUN_JSON


class Known(NamedTuple):
    """A record a store has parsed: the identity of its ``run.json``, the record, and the identity of
    its run folder when the folder may be trusted to show any change of its entries (else None)."""

    json: FileIdentity
    record: RunRecord
    folder: FileIdentity | None = None


def identity_of(st: os.stat_result) -> FileIdentity:
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def lstat_or_none(path: str | os.PathLike) -> os.stat_result | None:
    """``os.lstat`` of ``path`` (a link is not followed), or None when nothing stands there."""
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def is_link(st: os.stat_result | None) -> bool:
    return st is not None and stat.S_ISLNK(st.st_mode)


def read_regular(path: str | os.PathLike) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at ``path`` and its ``fstat``, never through a symbolic link.

    Raises
    ------
    OSError
        ``ELOOP`` if ``path`` is a link; ``FileNotFoundError`` if it is gone; another error if it
        is not a regular file (a folder, a pipe) or cannot be read.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)  # a pipe never blocks
    with open(os.open(path, flags), "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return fh.read(), st


def parse_run_json(data: bytes, run_id: str) -> RunRecord:
    """The record in a run folder's ``run.json`` bytes (the one place a stored record is parsed)."""
    try:
        raw = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise TreevizError("its run.json is not readable JSON.") from None
    record = RunRecord.from_dict(raw)
    if record.run_id != run_id:
        raise TreevizError(f"its run.json names another run ({record.run_id}).")
    return record

