"""Job functions for tests/treeviz/test_job_spare.py that a child process can import quickly
(nothing heavy here: the child unpickles them by reference)."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: The most any wait in those tests lasts.
WAIT_S = 120.0


class MarkWarm:
    """A warm-up that writes its process id into ``path`` (then returns at once, or, with
    ``until_cancelled``, waits until the job that wants the process asks it to stop)."""

    def __init__(self, path: Path, until_cancelled: bool = False) -> None:
        self.path, self.until_cancelled = str(path), until_cancelled

    def __call__(self, progress) -> int:
        Path(self.path).write_text(str(os.getpid()))
        deadline = time.monotonic() + WAIT_S
        while self.until_cancelled and not progress.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
        return os.getpid()


def pid(progress) -> int:
    return os.getpid()
