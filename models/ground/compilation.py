"""Numba's compile time, watched in the calling thread.

The families' CPU kernels are numba functions compiled on their first call with a new signature
and then cached on disk (``cache=True``: in ``__pycache__`` beside the module, or numba's user-wide
cache when that folder cannot be written, or ``NUMBA_CACHE_DIR`` when set). A fit that meets a
kernel not yet in the cache spends seconds to a minute compiling it. :func:`watching` measures
that time, so a fit's stored duration can leave it out, and tells a listener when compiling starts
and ends, so a progress bar can say why nothing moves.

Numba announces each compilation as a ``"numba:compile"`` event (``numba.core.event``) in the
thread that compiles, around the compiler only: a signature loaded from the disk cache raises no
event, and a kernel that calls another compiles the callee inside its own event. So one listener,
registered once per process, keeps per thread the depth of nested events and counts only the
outermost ones, for the watches open in that thread. Compilation in another thread or process (a
forest's worker processes) is not seen.

Examples
--------
>>> with watching() as clock:
...     pass
>>> clock.seconds
0.0
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

#: Per thread: ``watches`` (the open :class:`CompileWatch` objects), ``depth`` (nested compile
#: events now open) and ``start`` (when the outermost one began).
_local = threading.local()
_lock = threading.Lock()
_registered: list[Any] = []  # the one listener, once registered


class CompileWatch:
    """What :func:`watching` measured so far: ``seconds`` spent compiling, ``count`` kernels
    compiled (outermost compilations), and whether a compilation is under way (``active``)."""

    def __init__(self, on_change: Callable[[bool], None] | None = None) -> None:
        self.seconds = 0.0
        self.count = 0
        self.active = False
        self._on_change = on_change

    def _changed(self, compiling: bool) -> None:
        self.active = compiling
        if self._on_change is not None:
            try:
                self._on_change(compiling)
            except Exception:  # a listener's failure must never break numba's compilation
                pass


def _watches() -> list[CompileWatch]:
    return _local.__dict__.setdefault("watches", [])


def _start() -> None:
    depth = getattr(_local, "depth", 0)
    _local.depth = depth + 1
    if depth == 0:
        _local.start = time.perf_counter()
        for watch in list(_watches()):
            watch._changed(True)


def _end() -> None:
    depth = max(0, getattr(_local, "depth", 1) - 1)
    _local.depth = depth
    if depth == 0:
        spent = time.perf_counter() - getattr(_local, "start", time.perf_counter())
        for watch in list(_watches()):
            watch.seconds += spent
            watch.count += 1
            watch._changed(False)


def _register() -> None:
    """Register the process's one listener for numba's compile events (once)."""
    with _lock:
        if _registered:
            return
        from numba.core import event  # deferred: numba is a heavy import

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                _start()

            def on_end(self, ev: Any) -> None:
                _end()

        listener = _Listener()
        event.register("numba:compile", listener)
        _registered.append(listener)


@contextlib.contextmanager
def watching(on_change: Callable[[bool], None] | None = None) -> Iterator[CompileWatch]:
    """Measure the numba compilation done in the calling thread inside the block.

    Parameters
    ----------
    on_change
        Called with True when a kernel starts compiling and with False when it is done (in the
        compiling thread; an exception it raises is ignored).

    Yields
    ------
    CompileWatch
        Its ``seconds`` grows as kernels compile; read it after the block.
    """
    _register()
    watch = CompileWatch(on_change)
    watches = _watches()
    watches.append(watch)
    try:
        yield watch
    finally:
        watches.remove(watch)
        if watch.active:  # left by an exception while compiling
            watch._changed(False)
