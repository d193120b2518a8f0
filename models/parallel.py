"""Independent tasks (a forest's trees) in worker processes, results in order, and a cancel that
acts at once: the one place both forests (``models/tao/forest.py``, ``models/dgt/forest.py``) run
their trees.

:func:`run_in_order` calls ``fn(*shared, item, stop)`` for every item and yields the results in
item order. With one worker it runs them here, one after the other, with ``stop`` the caller's
``cancelled``. With more, the calls run in loky's reusable pool of worker processes (joblib's
default pool, kept warm between fits), each worker on one thread; the large arrays of ``shared``
travel once, as files the workers map into memory, and ``stop`` is a
:class:`~models.base.CancelFlag`. While it waits for a result the caller's process asks
``cancelled()`` every :data:`POLL_S` seconds, so a cancel is seen at once even while the worker
processes are still starting (importing torch took 20-28 s on a loaded machine). On a cancel, or
when the caller stops iterating, the flag is set (the calls not started return at once, except the
first, which starts anyway and stops at its own first look at ``stop``, so that a cancel that
reaches a loaded machine's workers before they pick up their first call still leaves the caller
one result: a forest of one tree trained part way, not none), the ones
in training get :data:`GRACE_S` seconds to come back (the next one in order is still yielded: a tree
trained part way), and worker processes still busy after that (or still starting) are killed, so
the caller is back within about ``GRACE_S`` seconds. A pool whose calls all ended stays warm.

:func:`interruptible` is the same promise for one long library call that has no loop to ask in
(a dense eigendecomposition): it runs in a background thread while the caller asks ``stop()``.
"""

from __future__ import annotations

import concurrent.futures
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from joblib.executor import get_memmapping_executor

from models.base import CancelFlag
from models.ground import threads

#: Seconds between two looks at ``cancelled()`` while waiting for a worker.
POLL_S = 0.1
#: Seconds the calls in training get to come back after a cancel before their workers are killed.
GRACE_S = 2.0
#: Seconds an idle worker process stays alive for the next fit (joblib's value).
IDLE_S = 300
#: One thread per worker from its start (each call in a worker also runs under ``threads.budget(1)``).
_ONE_THREAD = dict.fromkeys(("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"),
                            "1")


def run_in_order(fn: Callable[..., Any], shared: tuple, items: Sequence[Any], workers: int,
                 cancelled: Callable[[], bool]) -> Iterator[Any]:
    """``fn(*shared, item, stop)`` for every item, in item order, here (``workers`` ≤ 1) or in
    ``workers`` processes; stops early, as the module says, once ``cancelled()`` is true. ``fn``
    never returns None (None marks a call skipped after a cancel)."""
    if workers <= 1:
        for i, item in enumerate(items):
            if i and cancelled():  # the first call runs, as in workers, and stops at its first look
                return
            yield fn(*shared, item, cancelled)
        return
    yield from _in_workers(fn, shared, items, workers, cancelled)


def _in_workers(fn: Callable[..., Any], shared: tuple, items: Sequence[Any], workers: int,
                cancelled: Callable[[], bool]) -> Iterator[Any]:
    with tempfile.TemporaryDirectory(prefix="treeviz-shared-") as folder, CancelFlag(cancelled) as flag:
        refs = tuple(_share(value, folder, i) for i, value in enumerate(shared))
        pool = worker_pool(workers)
        futures: list[concurrent.futures.Future] = []

        def top_up() -> None:
            # at most ``workers`` calls in the pool at once: loky fails on calls still queued when it
            # kills its workers
            while len(futures) < len(items) and sum(not f.done() for f in futures) < workers:
                futures.append(pool.submit(_call_in_worker, fn, refs, items[len(futures)], flag, not futures))

        stopped = False
        try:
            for i in range(len(items)):
                top_up()
                if not _wait(futures[i], cancelled, top_up):
                    stopped = True
                    _stop(pool, futures, flag)
                    if futures[i].done() and futures[i].exception() is None and futures[i].result() is not None:
                        yield futures[i].result()  # the tree in training, cut short by the flag
                    return
                result = futures[i].result()
                if result is None:  # skipped: the flag was set before the call began
                    return
                yield result
        finally:
            if not stopped:
                _stop(pool, futures, flag)


def worker_pool(workers: int) -> Any:
    """loky's reusable pool with ``workers`` processes, one thread each. It is one per process and
    shared with joblib's ``Parallel``, which needs joblib's kind of it (memory-mapping executor):
    a plain loky pool left behind breaks the next ``Parallel``."""
    return get_memmapping_executor(workers, timeout=IDLE_S, env=_ONE_THREAD)


def _wait(future: concurrent.futures.Future, cancelled: Callable[[], bool], between: Callable[[], None]) -> bool:
    """Wait for ``future``, calling ``between()`` every :data:`POLL_S` s; False as soon as
    ``cancelled()``."""
    while True:
        try:
            future.exception(timeout=POLL_S)
            return True
        except concurrent.futures.TimeoutError:
            if cancelled():
                return False
            between()


def _stop(pool: Any, futures: list[concurrent.futures.Future], flag: CancelFlag) -> None:
    """Set the flag (the calls not started then return at once, those in training soon) and give
    them :data:`GRACE_S` s, then kill the workers if any is still busy (or still starting).

    The futures are not cancelled: loky fails on a cancelled future when it kills its workers."""
    flag.set()
    busy = [f for f in futures if not f.done()]
    if busy:
        deadline = time.monotonic() + GRACE_S
        while busy and time.monotonic() < deadline:
            concurrent.futures.wait(busy, timeout=POLL_S)
            busy = [f for f in busy if not f.done()]
    if busy:
        pool.shutdown(wait=False, kill_workers=True)  # the next fit starts a new pool


class _Shared:
    """A large array of ``shared`` saved once to a file, which every call maps into memory."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> np.ndarray:
        return np.load(self.path, mmap_mode="r")


def _share(value: Any, folder: str, index: int) -> Any:
    if not isinstance(value, np.ndarray) or value.dtype.hasobject or value.nbytes < 1_000_000:
        return value
    path = os.path.join(folder, f"{index}.npy")
    np.save(path, value)
    return _Shared(path)


def _call_in_worker(fn: Callable[..., Any], refs: tuple, item: Any, stop: Callable[[], bool],
                    first: bool = False) -> Any:
    """``fn(*shared, item, stop)`` on one thread; None without calling it once ``stop()``, unless
    it is the ``first`` call (``fn`` then returns at its first look at ``stop``)."""
    if stop() and not first:
        return None
    shared = tuple(ref.load() if isinstance(ref, _Shared) else ref for ref in refs)
    with threads.budget(1):
        return fn(*shared, item, stop)


def interruptible(fn: Callable[..., Any], *args: Any, stop: Callable[[], bool]) -> Any:
    """``fn(*args)`` in a background thread, asking ``stop()`` every :data:`POLL_S` s: its result,
    or None at once when ``stop()`` is true (also before it starts). An abandoned call cannot be
    interrupted: its thread runs on, using a core, until the call ends, and its result is dropped.
    For calls that release the interpreter lock (LAPACK), else the caller could not ask."""
    if stop():
        return None
    out: dict[str, Any] = {}

    def call() -> None:
        try:
            out["result"] = fn(*args)
        except BaseException as err:  # handed to the caller
            out["error"] = err

    thread = threading.Thread(target=call, name="treeviz-interruptible", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(POLL_S)
        if thread.is_alive() and stop():
            return None
    if "error" in out:
        raise out["error"]
    return out["result"]
