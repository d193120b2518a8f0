"""Background work: jobs run in worker threads with progress, live records, cancel and errors.

One :class:`JobManager` serves the whole app (the app keeps it with ``st.cache_resource``), so a
job survives page reruns and every tab sees it. A job is a function ``fn(progress)``; the
:class:`Progress` handle it receives is neutral (it knows nothing of estimators): ``begin(total)``
starts a stage of work, ``record(values)`` reports one step and raises
:class:`~models.ground.errors.TrainingCancelled` once :meth:`JobManager.cancel` was called, and
``stages(n)`` announces several stages (a λ path fits several models). The adapter that turns an
estimator's callbacks into these calls lives with the training glue
(:class:`treeviz.services.experiments.training.ProgressCallback`). Cancellation is cooperative: the job ends
"cancelled" when ``fn`` returns or raises after the request. Between the request and that end the
job's status is "cancelling", so a page can say at once that the stop was heard (a fit stops at its
next check, which can be seconds away).

A snapshot carries ``eta_s``, the seconds left estimated from the work done against the work
planned (:func:`time_left`). A stage's work is counted in its own units (epochs, iterations, μ
steps, trees): each record is one unit, unless the job reports the units done itself
(``advance(done, total)``, which may also revise the planned total, as a fit that stops early does).
The pace is the work done per second over the recent half of the time since the stage's first
report, so neither the set-up before it (imports, data checks, a first compilation) nor a phase
long past sets the pace of the rest; the seconds since the last report count against the estimate.

Each job runs under the thread budget of :mod:`models.ground.threads`: the machine's cores shared
between the ``max_workers`` jobs that may run at once, so two jobs never oversubscribe the CPU. A
job run in a worker thread enters its budget (:func:`models.ground.threads.budget`) for its own
duration, in its own thread, and leaves the process as it found it; two jobs at once keep their
own budgets.
With ``processes=True`` (the app's setting) each worker thread hands its jobs to its own
persistent child process (:class:`treeviz.services.jobs.worker_process.WorkerProcess`), so two jobs do not
contend for one Python interpreter lock either; a job function that cannot be pickled (a lambda,
a closure) runs in the worker thread itself. The child is started on a worker's first job and
stops when the worker retires after ``idle_s`` seconds without work, unless the manager was
primed (:meth:`JobManager.prime`, the app): then a child is started and warmed before the first
job, and a retiring worker keeps its child for the next one (:mod:`treeviz.services.jobs.spare`).

Nothing raised by ``fn`` leaves the worker thread: the job ends "failed" with a one-sentence
``message`` (a :class:`~models.ground.errors.TreevizError`'s own text, else
``"Training failed: <Type>: <text>"``) and the full ``traceback`` for logs.

Every field of a :class:`Job` is read under its lock; :meth:`Job.snapshot` returns one
consistent, immutable view for a page to render.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import queue
import secrets
import threading
import time
import traceback as tb
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError
from treeviz.services.jobs.pace import time_left
from treeviz.services.jobs.spare import Spare
from treeviz.services.jobs.worker_process import SUPPORTED, NotPicklable, RemoteFailure, WorkerProcess

DONE_STATUSES = ("finished", "failed", "cancelled")
#: Statuses of a job not yet done: waiting for a worker, running, or asked to stop but still running.
ACTIVE_STATUSES = ("queued", "running", "cancelling")
#: The phase of a running job while numba compiles a kernel (:meth:`Progress.phase`): the first
#: training after an install, before the warm-up has filled numba's cache.
COMPILING = "compiling"
#: The clock of every job time stamp (a test replaces it to control elapsed time).
_now = time.time


@dataclass(frozen=True)
class JobSnapshot:
    """One consistent view of a job at an instant (safe to keep and render).

    ``status`` is one of :data:`ACTIVE_STATUSES` or :data:`DONE_STATUSES`; ``progress`` the
    fraction done, which never goes back; ``total`` the planned units of the current stage (rounded
    up); ``eta_s`` the estimated seconds left while the job runs (None when queued, cancelling, done
    other than finished, or too early to tell; 0 once finished).
    """

    id: str
    label: str
    status: str
    progress: float
    total: int | None
    epochs: int
    records: tuple[dict[str, Any], ...]
    message: str | None
    result: Any
    submitted: float
    started: float | None
    finished: float | None
    elapsed: float
    cancel_requested: bool
    eta_s: float | None = None
    #: What the running job is doing apart from its steps (:data:`COMPILING`), or None.
    phase: str | None = None

    @property
    def done(self) -> bool:
        return self.status in DONE_STATUSES


class Job:
    """A unit of background work; created by :meth:`JobManager.submit`, never by hand."""

    def __init__(self, job_id: str, label: str, fn: Callable[[Progress], Any],
                 meta: dict[str, Any] | None = None) -> None:
        self.id = job_id
        self.label = label
        self.meta = dict(meta or {})
        self._fn = fn
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._status = "queued"
        self._phase: str | None = None  # set by Progress.phase
        self._total: float | None = None
        self._epochs = 0
        self._stage_epochs = 0
        self._stage_done: float | None = None  # units done as the job reported them (else: records)
        self._marks: list[tuple[float, float]] = []  # (time, units done) of this stage: its start, each report
        self._stage_seconds: list[float] = []  # how long each finished stage took
        self._peak = 0.0  # the progress shown so far (it never goes back)
        self._n_stages = 1  # fits this job will run (a sweep runs several)
        self._stage_index = -1
        self._records: list[dict[str, Any]] = []
        self._message: str | None = None
        self._traceback: str | None = None
        self._result: Any = None
        self.submitted = _now()
        self._started: float | None = None
        self._finished: float | None = None

    def __repr__(self) -> str:
        return f"Job({self.id!r}, {self.label!r}, status={self.status!r})"

    # ------------------------------------------------------------------ reading
    def _get(self, name: str) -> Any:
        with self._lock:
            return getattr(self, name)

    status = property(lambda self: self._get("_status"), doc="One of ACTIVE_STATUSES or DONE_STATUSES.")
    message = property(lambda self: self._get("_message"), doc="Why the job failed (a sentence).")
    traceback = property(lambda self: self._get("_traceback"), doc="Full traceback, for logs only.")
    result = property(lambda self: self._get("_result"), doc="What ``fn`` returned.")
    started = property(lambda self: self._get("_started"))
    finished = property(lambda self: self._get("_finished"))
    def _shown_total(self) -> int | None:
        return None if self._total is None else math.ceil(self._total - 1e-9)

    @property
    def total(self) -> int | None:
        """Planned units of the current stage (epochs, iterations, trees), rounded up."""
        with self._lock:
            return self._shown_total()

    @property
    def records(self) -> list[dict[str, Any]]:
        """A copy of the history records seen so far (thread-safe)."""
        with self._lock:
            return [dict(r) for r in self._records]

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    def _done_units(self) -> float:
        return self._stage_epochs if self._stage_done is None else self._stage_done

    def _progress(self) -> float:
        if self._status == "finished":
            return 1.0
        return self._peak

    def _raw_progress(self) -> float:
        within = min(1.0, self._done_units() / self._total) if self._total else 0.0
        if self._n_stages <= 1:
            return within
        done = min(max(self._stage_index, 0), self._n_stages - 1)
        return min(1.0, (done + within) / self._n_stages)

    def _moved(self) -> None:
        """After an update (caller holds the lock): mark the work done now and raise the peak."""
        if self._marks and self._done_units() != self._marks[-1][1]:
            self._marks.append((_now(), self._done_units()))
        self._peak = max(self._peak, self._raw_progress())

    @property
    def progress(self) -> float:
        """Fraction done in [0, 1]: units done over the planned total, over the stages (1.0 once
        finished; it never goes back, even when a stage's planned total grows)."""
        with self._lock:
            return self._progress()

    def _elapsed(self) -> float:
        if self._started is None:
            return 0.0
        return (self._finished or _now()) - self._started

    @property
    def elapsed(self) -> float:
        """Seconds spent running (so far, or in total once done)."""
        with self._lock:
            return self._elapsed()

    def _eta(self) -> float | None:
        if self._status == "finished":
            return 0.0
        if self._status != "running" or not self._marks:  # queued, stopping or stopped, or no stage yet
            return None
        now = _now()
        left = time_left(self._marks, self._total, now)
        later = self._n_stages - 1 - max(self._stage_index, 0)
        if later <= 0:
            return left
        in_stage = now - self._marks[0][0]
        if self._stage_seconds:  # the later stages take as long as the finished ones did
            per = sum(self._stage_seconds) / len(self._stage_seconds)
            left = max(0.0, per - in_stage) if left is None else left
        elif left is None:
            return None
        else:
            per = in_stage + left
        return left + later * per

    @property
    def eta_s(self) -> float | None:
        """Estimated seconds left (see :func:`time_left`); None when there is nothing to estimate."""
        with self._lock:
            return self._eta()

    def snapshot(self) -> JobSnapshot:
        """Every field at one instant, copied (records included)."""
        with self._lock:
            return JobSnapshot(
                id=self.id, label=self.label, status=self._status, progress=self._progress(),
                total=self._shown_total(), epochs=self._epochs,
                records=tuple(dict(r) for r in self._records), message=self._message,
                result=self._result, submitted=self.submitted, started=self._started,
                finished=self._finished, elapsed=self._elapsed(),
                cancel_requested=self._cancel.is_set(), eta_s=self._eta(),
                phase=self._phase if self._status == "running" else None,
            )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job is done (or ``timeout`` seconds pass); True if it is done."""
        return self._done.wait(timeout)

    # ------------------------------------------------------------------ updates (worker side)
    def _begin_stage(self, total: float | None) -> None:
        with self._lock:
            now = _now()
            if self._marks:
                self._stage_seconds.append(now - self._marks[0][0])
            self._total = float(total) if total else None
            self._stage_epochs = 0
            self._stage_done = None
            self._stage_index += 1
            self._marks = [(now, 0.0)]
            self._moved()

    def _set_stages(self, n: int) -> None:
        with self._lock:
            self._n_stages = max(1, int(n))
            self._moved()

    def _add_record(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._records.append(dict(record))
            self._epochs += 1
            self._stage_epochs += 1
            self._moved()

    def _advance(self, done: float | None, total: float | None = None) -> None:
        with self._lock:
            if total is not None:
                self._total = float(total) if total > 0 else None
            if done is not None:
                self._stage_done = max(float(done), self._stage_done or 0.0)
            self._moved()

    def _set_phase(self, phase: str | None) -> None:
        with self._lock:
            self._phase = phase

    def _request_cancel(self) -> bool:
        """Set the cancel flag; a queued job ends at once, a running one is "cancelling" until its
        function stops. False if the job was already done."""
        with self._lock:
            if self._status in DONE_STATUSES:
                return False
            self._cancel.set()
            if self._status == "queued":
                self._finish("cancelled")
            else:
                self._status = "cancelling"
            return True

    def _finish(self, status: str, *, result: Any = None, message: str | None = None,
                trace: str | None = None) -> None:
        # caller holds the lock
        self._status = status
        self._result = result
        self._message = message
        self._traceback = trace
        self._finished = _now()
        self._done.set()

    def _run(self, process: Callable[[], WorkerProcess] | None = None, n_threads: int | None = None) -> None:
        """Run the job here, under a thread budget of ``n_threads`` (:func:`models.ground.threads.budget`;
        None: the calling thread's settings as they are), or in the child process ``process()``
        gives when the function pickles."""
        with self._lock:
            if self._status != "queued":
                return  # cancelled while queued
            self._status = "running"
            self._started = _now()
        try:
            try:
                if process is None:
                    raise NotPicklable("no worker process")
                result = process().run(self._fn, self)
            except NotPicklable:
                with threads.budget(n_threads) if n_threads is not None else contextlib.nullcontext():
                    result = self._fn(Progress(self))
        except TrainingCancelled:
            with self._lock:
                self._finish("cancelled", message="Training was cancelled.")
        except BaseException as err:
            trace = tb.format_exc()
            if isinstance(err, TreevizError):
                message = str(err)
            elif isinstance(err, RemoteFailure):
                message, trace = f"Training failed: {err.type_name}: {err.text}", err.trace
            else:
                message = f"Training failed: {type(err).__name__}: {err}"
            with self._lock:
                status = "cancelled" if self._cancel.is_set() else "failed"
                self._finish(status, message=message, trace=trace)
        else:
            with self._lock:
                self._finish("cancelled" if self._cancel.is_set() else "finished", result=result)
        finally:
            self._fn = None  # free the data the closure holds once the job is done


class Progress:
    """The handle a job function reports through; it knows nothing of estimators.

    ``begin(total)`` starts a stage of ``total`` steps (None if unknown); ``record(values)``
    reports one step with its numbers and raises :class:`TrainingCancelled` once the job was
    asked to stop; ``advance(done, total)`` reports the units of the stage done so far where they
    are not one per record, and may revise its planned total (either may be None: unchanged);
    ``stages(n)`` announces that ``n`` stages follow, so progress spans them all.
    """

    def __init__(self, job: Job) -> None:
        self._job = job

    @property
    def cancelled(self) -> bool:
        return self._job.cancel_requested

    def stages(self, n: int) -> None:
        self._job._set_stages(n)

    def begin(self, total: float | None) -> None:
        self._job._begin_stage(total)

    def advance(self, done: float | None, total: float | None = None) -> None:
        self._job._advance(done, total)

    def phase(self, phase: str | None) -> None:
        """Say what the job does apart from its steps (:data:`COMPILING`), or None when it is back to them."""
        self._job._set_phase(phase)

    def record(self, values: dict[str, Any]) -> None:
        self._job._add_record(values)
        if self._job.cancel_requested:
            raise TrainingCancelled()


_MANAGERS: weakref.WeakSet[JobManager] = weakref.WeakSet()


class JobManager:
    """Runs jobs in daemon worker threads, at most ``max_workers`` at a time (others queue).

    Parameters
    ----------
    max_workers
        How many jobs run at once. Daemon threads end with the process; a run being saved at
        that moment is not damaged because the run store writes atomically.
    keep
        How many finished jobs to remember (older ones are forgotten on the next submit).
    processes
        Run each job whose function pickles in the worker's own child process (see the module
        docstring); False runs every job in the worker thread, as does a platform without
        child-process support (:data:`treeviz.services.jobs.worker_process.SUPPORTED`).
    idle_s
        Seconds a worker (and its child process) waits for a job before it retires.

    Examples
    --------
    >>> manager = JobManager()
    >>> job = manager.submit(lambda progress: 42, label="answer")
    >>> job.wait(10) and job.result
    42
    """

    def __init__(self, max_workers: int = 2, keep: int = 100, *, processes: bool = False,
                 idle_s: float = 5.0) -> None:
        if max_workers < 1:
            raise TreevizError("A job manager needs at least one worker.")
        self.max_workers = int(max_workers)
        self.keep = int(keep)
        self.processes = bool(processes) and SUPPORTED
        self.idle_s = float(idle_s)
        _MANAGERS.add(self)
        self._lock = threading.Lock()
        self._jobs: dict[str, Job] = {}
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._ids = itertools.count(1)
        self._spare, self._primed = Spare(), False
        self._idle = 0  # workers waiting for a job (or started to take one)

    def prime(self, warm: Callable[[Any], Any] | None = None) -> bool:
        """Start a job child process now, in the background, and run ``warm(progress)`` in it (a
        picklable function), so the first job finds its imports done and its kernels loaded; from
        then on a retiring worker keeps its child for the next job (:mod:`treeviz.services.jobs.spare`).
        Once per manager (until :meth:`shutdown`); False when it did nothing (jobs in threads, or
        primed before)."""
        with self._lock:
            if not self.processes or self._primed:
                return False
            self._primed = True
        return self._spare.start(threads.job_budget(self.max_workers), warm)

    def wait_primed(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds for the warm-up :meth:`prime` started; True once none runs."""
        return self._spare.wait(timeout)

    def submit(self, fn: Callable[[Progress], Any], *, label: str,
               meta: dict[str, Any] | None = None) -> Job:
        """Queue ``fn(progress)`` to run in a worker thread and return its :class:`Job`.

        ``meta`` is free-form (for example the browser session that started the job).
        """
        with self._lock:
            job = Job(f"job-{next(self._ids)}-{secrets.token_hex(3)}", str(label), fn, meta)
            self._jobs[job.id] = job
            self._forget_old()
            self._queue.put(job)
            self._add_workers()
        return job

    def _add_workers(self) -> None:
        """Start worker threads while the queued jobs outnumber the idle workers, up to ``max_workers``
        (caller holds the lock). An idle worker takes the next job itself, in the child process it
        already has: a second job started a second worker, and with it a bare child process, while
        the first worker and its warm process sat idle."""
        self._workers = [w for w in self._workers if w.is_alive()]
        while len(self._workers) < self.max_workers and self._idle < self._queue.qsize():
            worker = threading.Thread(target=self._work, name=f"treeviz-job-{len(self._workers)}", daemon=True)
            self._workers.append(worker)
            self._idle += 1  # idle from its start: it takes a queued job first thing
            worker.start()

    def _work(self) -> None:
        budget = threads.job_budget(self.max_workers)
        child: list[WorkerProcess] = []  # this worker's child process: the primed one, or started on first use
        retired = [False]

        def process() -> WorkerProcess:
            if child and not child[0].alive:
                child.pop().stop()
            if not child:
                child.append(self._spare.take() or WorkerProcess(budget))
            return child[0]

        try:
            while True:
                try:
                    job = self._queue.get(timeout=self.idle_s)
                except queue.Empty:
                    with self._lock:  # idle: retire, unless a job slipped in meanwhile
                        if self._queue.empty():
                            self._idle -= 1
                            self._workers = [w for w in self._workers if w is not threading.current_thread()]
                            retired[0] = True
                            return
                    continue
                with self._lock:
                    self._idle -= 1
                    if job is not None:  # a job queued meanwhile may need a worker of its own
                        self._add_workers()
                if job is None:  # shutdown
                    return
                job._run(process if self.processes else None, budget)
                with self._lock:
                    self._idle += 1
        finally:
            for proc in child:  # a primed manager keeps one warm child for the next job
                if not (retired[0] and self._primed and self._spare.give(proc)):
                    proc.stop()

    def shutdown(self) -> None:
        """Cancel what runs, stop the workers and their child processes (the manager stays usable)."""
        for job in self.active():
            job._request_cancel()
        with self._lock:
            workers = list(self._workers)
            self._workers = []
        for _ in workers:
            self._queue.put(None)
        for worker in workers:
            worker.join(timeout=30)
        with self._lock:
            self._idle = 0
        self._spare.close()
        self._primed = False

    @staticmethod
    def shutdown_all() -> None:
        """:meth:`shutdown` every manager of this process (tests call it between tests)."""
        for manager in list(_MANAGERS):
            manager.shutdown()

    def _forget_old(self) -> None:
        done = [j for j in self._jobs.values() if j.done]
        for job in done[: max(0, len(done) - self.keep)]:
            del self._jobs[job.id]

    def get(self, job_id: str) -> Job:
        """The job with this id; a TreevizError sentence if it is unknown."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise TreevizError(f"There is no training job {job_id!r}; it may have been cleared.")
        return job

    def jobs(self) -> list[Job]:
        """Every remembered job, newest first."""
        with self._lock:
            return sorted(self._jobs.values(), key=lambda j: j.submitted, reverse=True)

    def active(self) -> list[Job]:
        """Jobs that are queued or running."""
        return [j for j in self.jobs() if not j.done]

    def cancel(self, job_id: str) -> bool:
        """Ask a job to stop; True if the request was made (False if it was already done)."""
        return self.get(job_id)._request_cancel()

    def forget(self, job_id: str) -> None:
        """Drop a finished job from the list (a running one must be cancelled first)."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is not None and not job.done:
                raise TreevizError("A job that is still running cannot be removed; cancel it first.")
            self._jobs.pop(job_id, None)
