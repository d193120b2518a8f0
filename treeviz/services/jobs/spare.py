"""A job child process started and warmed before the first job needs it, and kept between jobs.

A :class:`~treeviz.services.jobs.worker_process.WorkerProcess` starts as a bare Python process: the
app's first training in it used to pay for importing torch and the family's modules, loading (or
compiling) its numba kernels and, for a forest, starting the pool of tree workers: 6 to 20 s that
the second training did not pay (``benchmarks/speed/first_training.py``). :class:`Spare` starts one
such process in a background thread when the app starts (:meth:`JobManager.prime
<treeviz.services.jobs.manager.JobManager.prime>`) and runs a warm-up function in it (the app's:
:func:`treeviz.services.experiments.warmup.warm_in_worker`, small trainings of every family). The
first job's worker then takes that process (:meth:`Spare.take`) instead of starting a bare one, and
a worker that retires idle hands its process back (:meth:`Spare.give`), so a later training finds
a warm process too. At most one idle process is kept.

A job that arrives while the warm-up still runs asks it to stop (it stops before its next small
training) and waits for that, then runs in the same process: the imports and kernels already
loaded are not paid again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from models.ground.errors import TrainingCancelled
from treeviz.services.jobs.worker_process import WorkerProcess


class _Quiet:
    """The warm-up's relay (:class:`~treeviz.services.jobs.worker_process.Relay`): its progress is
    not shown anywhere; ``cancel_requested`` is how :meth:`Spare.take` stops it."""

    def __init__(self) -> None:
        self.cancel_requested = False

    def _begin_stage(self, total: float | None) -> None:
        pass

    def _set_stages(self, n: int) -> None:
        pass

    def _add_record(self, record: dict[str, Any]) -> None:
        pass

    def _set_phase(self, phase: str | None) -> None:
        pass

    def _advance(self, done: float | None, total: float | None = None) -> None:
        pass


class Spare:
    """At most one idle child process: being started and warmed, or ready for the next job.

    ``status`` says where it is: "none" (no process held), "warming" (started, its warm-up
    running) or "ready"; ``warm_error`` is the warm-up's failure, if it failed (the process is kept
    all the same: a failed warm-up leaves a usable process).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: WorkerProcess | None = None
        self._thread: threading.Thread | None = None
        self._relay: _Quiet | None = None
        self._closed = False
        self.warm_error: str | None = None

    @property
    def status(self) -> str:
        with self._lock:
            if self._thread is not None:
                return "warming"
            return "ready" if self._process is not None else "none"

    def start(self, n_threads: int, warm: Callable[[Any], Any] | None) -> bool:
        """Start a child process on ``n_threads`` threads in a background thread and run
        ``warm(progress)`` in it; False (nothing started) when a process is already held."""
        with self._lock:
            if self._process is not None or self._thread is not None:
                return False
            self._closed = False
            relay = _Quiet()
            thread = threading.Thread(target=self._start, args=(n_threads, warm, relay),
                                      name="treeviz-job-spare", daemon=True)
            self._thread, self._relay = thread, relay
        thread.start()
        return True

    def _start(self, n_threads: int, warm: Callable[[Any], Any] | None, relay: _Quiet) -> None:
        process: WorkerProcess | None = None
        error = None
        try:
            process = WorkerProcess(n_threads)
            if warm is not None and not relay.cancel_requested:
                process.run(warm, relay)
        except TrainingCancelled:  # stopped by take(): nothing went wrong
            pass
        except BaseException as err:  # the warm-up's failure: reported, the process kept if alive
            error = f"{type(err).__name__}: {err}"
        with self._lock:
            self.warm_error = error
            self._thread = self._relay = None
            if process is not None and (self._closed or not process.alive):
                process.stop()
                process = None
            self._process = process

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: as long as it takes) for a warm-up under way;
        True once none is under way."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.status != "warming"

    def take(self) -> WorkerProcess | None:
        """The held process for a job (its warm-up asked to stop and waited for), or None when none
        is held or it died."""
        with self._lock:
            thread, relay = self._thread, self._relay
        if relay is not None:
            relay.cancel_requested = True
        if thread is not None:
            thread.join()
        with self._lock:
            process, self._process = self._process, None
        if process is not None and not process.alive:
            process.stop()
            return None
        return process

    def give(self, process: WorkerProcess) -> bool:
        """Keep ``process`` for the next job; False when one is held already or the spare was
        closed (the caller stops it then)."""
        with self._lock:
            if self._closed or self._process is not None or self._thread is not None or not process.alive:
                return False
            self._process = process
            return True

    def close(self) -> None:
        """Stop the held process (a warm-up under way is stopped first); later :meth:`give` calls
        are refused until the next :meth:`start`."""
        with self._lock:
            self._closed = True
        process = self.take()
        if process is not None:
            process.stop()
