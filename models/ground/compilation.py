"""Numba's compile time, watched in the calling thread.

The families' CPU kernels are numba functions compiled on their first call with a new signature
and then cached on disk (``cache=True``: in ``__pycache__`` beside the module, or numba's user-wide
cache when that folder cannot be written, or ``NUMBA_CACHE_DIR`` when set). A fit that meets a
kernel not yet in the cache spends seconds to a minute compiling it; one that finds it in the
cache still spends a fraction of a second per process loading it (the first load also imports
numba's own typing modules). :func:`watching` measures both, so a fit's stored duration can leave
them out, and tells a listener when a compilation starts and ends, so a progress bar can say why
nothing moves.

Numba raises its events (``numba.core.event``) in the thread that does the work. Every
compilation and every load from the cache happens under numba's compiler lock, whose
``"numba:compiler_lock"`` event spans the wait for the lock and the work; ``"numba:compile"`` spans
the compiler alone (a load from the cache raises none). A kernel that calls another compiles the
callee inside its own events. So one listener per kind, registered once per process, keeps per
thread the depth of nested events and counts only the outermost ones, for the watches open in
that thread. Work in another thread or process (a forest's worker processes) is not seen.

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


#: The events watched: under the compiler lock (compiling or loading), and compiling alone.
LOCK, COMPILE = "numba:compiler_lock", "numba:compile"


class CompileWatch:
    """What :func:`watching` measured so far: ``seconds`` numba spent compiling kernels or loading
    them from its cache (under its compiler lock), ``compile_seconds`` of them compiling, ``count``
    kernels compiled (outermost compilations), and whether a compilation is under way (``active``)."""

    def __init__(self, on_change: Callable[[bool], None] | None = None) -> None:
        self.seconds = 0.0
        self.compile_seconds = 0.0
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


def _start(kind: str) -> None:
    depths = _local.__dict__.setdefault("depth", {})
    depths[kind] = depths.get(kind, 0) + 1
    if depths[kind] == 1:
        _local.__dict__.setdefault("start", {})[kind] = time.perf_counter()
        if kind == COMPILE:
            for watch in list(_watches()):
                watch._changed(True)


def _end(kind: str) -> None:
    depths = _local.__dict__.setdefault("depth", {})
    depths[kind] = max(0, depths.get(kind, 1) - 1)
    if depths[kind] == 0:
        spent = time.perf_counter() - _local.__dict__.get("start", {}).get(kind, time.perf_counter())
        for watch in list(_watches()):
            if kind == LOCK:
                watch.seconds += spent
            else:
                watch.compile_seconds += spent
                watch.count += 1
                watch._changed(False)


def _register() -> None:
    """Register the process's listeners for numba's events (once)."""
    with _lock:
        if _registered:
            return
        from numba.core import event  # deferred: numba is a heavy import

        class _Listener(event.Listener):
            def on_start(self, ev: Any) -> None:
                _start(ev.kind)

            def on_end(self, ev: Any) -> None:
                _end(ev.kind)

        for kind in (LOCK, COMPILE):
            listener = _Listener()
            event.register(kind, listener)
            _registered.append(listener)


@contextlib.contextmanager
def watching(on_change: Callable[[bool], None] | None = None) -> Iterator[CompileWatch]:
    """Measure the numba compilation (and loading from its cache) done in the calling thread inside
    the block.

    Parameters
    ----------
    on_change
        Called with True when a kernel starts compiling and with False when it is done (in the
        compiling thread; an exception it raises is ignored).

    Yields
    ------
    CompileWatch
        Its ``seconds`` grows as kernels compile or load; read it after the block.
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
