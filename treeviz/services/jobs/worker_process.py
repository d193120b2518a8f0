"""A persistent child process that runs job functions, so that jobs do not share one GIL.

Two training jobs in threads of one process contend for Python's global interpreter lock: the
training loops issue many small torch operations, each releasing and re-taking the lock, and on
2 cores two such jobs each ran about 3 times slower than alone (``benchmarks/speed/threads.py``), more
than their share of the machine allows. A :class:`WorkerProcess` is a child started with the
``spawn`` method (no fork of a multi-threaded parent) that lives as long as its worker thread in
:class:`treeviz.services.jobs.manager.JobManager` and runs one job function at a time under the thread budget of
:mod:`models.ground.threads`.

The job function and its result travel by pickle between this process and its own child (never
through a file, so the model-file rule "no pickle" is untouched). Functions that cannot be
pickled (lambdas, closures) are refused with :class:`NotPicklable`; the manager then runs them in
its thread as before. Progress (``begin``, ``stages``, ``record``, ``advance``) flows back over a pipe, a
cancel request flows down, and an exception in the child comes back as the same
:class:`~models.ground.errors.TreevizError` or :class:`~models.ground.errors.TrainingCancelled`, or as a
:class:`RemoteFailure` naming the original type. A child that dies (killed, out of memory) fails
its job with a sentence and is replaced on the next job.

The child is ``python -m treeviz.services.jobs.worker_process``, started with :mod:`subprocess` and two pipes,
not with :mod:`multiprocessing`'s ``spawn``: spawn re-runs the parent's ``__main__`` in the child,
which under ``streamlit run`` is ``app.py`` (a whole app run in every worker) and inside Streamlit's
test harness a generated script that fails outside it. This child imports only this module, then
takes the parent's ``sys.path`` as its first message, so a job function pickled by reference
(``module.Class``) imports in the child exactly as in the parent. Functions defined in a script's
``__main__`` cannot be found that way and run in the worker thread instead. When the parent goes
away, the child's task pipe closes and the child exits at once. POSIX only (inherited pipe
descriptors); elsewhere :class:`treeviz.services.jobs.manager.JobManager` keeps jobs in its threads.
"""

from __future__ import annotations

import os
import pickle
import queue
import subprocess
import sys
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError

#: The folder holding the ``treeviz`` package, which the child needs on its path to start.
_ROOT = str(Path(__file__).resolve().parents[3])
#: Whether this platform can run jobs in child processes (pipes passed as inherited descriptors).
SUPPORTED = os.name == "posix"


class NotPicklable(Exception):
    """The job function cannot be sent to a child process (run it in the thread instead)."""


class RemoteFailure(Exception):
    """An exception other than TreevizError / TrainingCancelled raised in the child process."""

    def __init__(self, type_name: str, text: str, trace: str) -> None:
        super().__init__(text)
        self.type_name, self.text, self.trace = type_name, text, trace


class Relay(Protocol):
    """What the parent side reports into (a :class:`treeviz.services.jobs.manager.Job`'s update methods)."""

    cancel_requested: bool

    def _begin_stage(self, total: float | None) -> None: ...
    def _set_stages(self, n: int) -> None: ...
    def _add_record(self, record: dict[str, Any]) -> None: ...
    def _set_phase(self, phase: str | None) -> None: ...
    def _advance(self, done: float | None, total: float | None = None) -> None: ...


class WorkerProcess:
    """One spawned child process that runs pickled job functions, one at a time."""

    def __init__(self, n_threads: int) -> None:
        task_read, task_write = os.pipe()
        event_read, event_write = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "treeviz.services.jobs.worker_process", str(task_read), str(event_write),
                 str(int(n_threads))],
                pass_fds=(task_read, event_write), env=env, stdin=subprocess.DEVNULL)
        except BaseException:
            for fd in (task_read, task_write, event_read, event_write):
                os.close(fd)
            raise
        os.close(task_read)
        os.close(event_write)
        self._tasks = Connection(task_write, readable=False)
        self._events = Connection(event_read, writable=False)
        self._tasks.send(("path", list(sys.path)))
        self._runs = 0

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def run(self, fn: Any, relay: Relay) -> Any:
        """Run ``fn(progress)`` in the child; returns its result or raises what it raised."""
        if "__main__" in (type(fn).__module__, getattr(fn, "__module__", None)):
            raise NotPicklable("defined in the main script, which the child process does not import")
        try:
            payload = pickle.dumps(fn)
        except Exception as err:  # any pickling failure means "run it in the thread"
            raise NotPicklable(str(err)) from err
        self._runs += 1
        run_id = self._runs
        self._tasks.send(("run", run_id, payload))
        cancel_sent = False
        while True:
            if relay.cancel_requested and not cancel_sent:
                self._tasks.send(("cancel", run_id))
                cancel_sent = True
            try:
                ready = self._events.poll(0.1)
                message = self._events.recv() if ready else None
            except (EOFError, OSError):  # the pipe closed: the child is gone
                self._wait(5)
                message = None
            if message is None:
                if not self.alive:
                    raise TreevizError(f"The training process ended unexpectedly (exit code "
                                       f"{self._process.returncode}); the run was not saved. Try again.")
                continue
            kind, *rest = message
            if kind == "begin":
                relay._begin_stage(rest[0])
            elif kind == "stages":
                relay._set_stages(rest[0])
            elif kind == "record":
                relay._add_record(rest[0])
            elif kind == "phase":
                relay._set_phase(rest[0])
            elif kind == "advance":
                relay._advance(rest[0], rest[1])
            elif kind == "done":
                return rest[0]
            elif kind == "cancelled":
                raise TrainingCancelled()
            elif kind == "treeviz_error":
                raise TreevizError(rest[0])
            else:  # "error"
                raise RemoteFailure(*rest)

    def stop(self) -> None:
        """Ask the child to exit and wait briefly; kill it if it does not."""
        try:
            self._tasks.send(("stop",))
        except (OSError, ValueError):
            pass
        if not self._wait(5):
            self._process.kill()
            self._wait(5)
        for end in (self._tasks, self._events):
            end.close()

    def _wait(self, seconds: float) -> bool:
        """Whether the child has ended within ``seconds``."""
        try:
            self._process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        return True


class _ChildProgress:
    """The progress handle a job function gets in the child: sends its reports to the parent."""

    def __init__(self, events: Any, cancelled: set[int], run_id: int) -> None:
        self._events, self._cancelled, self._run_id = events, cancelled, run_id

    @property
    def cancelled(self) -> bool:
        return self._run_id in self._cancelled

    def stages(self, n: int) -> None:
        self._events.send(("stages", int(n)))

    def begin(self, total: float | None) -> None:
        self._events.send(("begin", total))

    def advance(self, done: float | None, total: float | None = None) -> None:
        self._events.send(("advance", done, total))

    def phase(self, phase: str | None) -> None:
        self._events.send(("phase", phase))

    def record(self, values: dict[str, Any]) -> None:
        self._events.send(("record", dict(values)))
        if self.cancelled:
            raise TrainingCancelled()


def _child_main(tasks: Any, events: Any, n_threads: int) -> None:
    """The child's loop: a listener thread takes tasks and cancel requests; the main thread runs."""
    threads.apply_budget(n_threads)
    todo: queue.SimpleQueue[tuple[int, bytes] | None] = queue.SimpleQueue()
    cancelled: set[int] = set()

    def listen() -> None:
        while True:
            try:
                message = tasks.recv()
            except (EOFError, OSError):  # the parent is gone: nobody wants the result
                os._exit(0)
            if message[0] == "run":
                todo.put((message[1], message[2]))
            elif message[0] == "cancel":
                cancelled.add(message[1])
            else:  # "stop"
                todo.put(None)
                return

    threading.Thread(target=listen, name="treeviz-job-listener", daemon=True).start()
    while (task := todo.get()) is not None:
        run_id, payload = task
        try:
            result = pickle.loads(payload)(_ChildProgress(events, cancelled, run_id))
            reply: tuple[Any, ...] = ("done", result)
        except TrainingCancelled:
            reply = ("cancelled",)
        except TreevizError as err:
            reply = ("treeviz_error", str(err))
        except BaseException as err:  # reported to the parent, which decides
            reply = ("error", type(err).__name__, str(err), traceback.format_exc())
        try:
            events.send(reply)
        except Exception as err:  # e.g. a result that cannot be pickled
            events.send(("error", type(err).__name__, f"the job's result could not be returned: {err}",
                         traceback.format_exc()))


def _main(argv: list[str]) -> None:
    """Entry point of the child: ``python -m treeviz.services.jobs.worker_process TASK_FD EVENT_FD N_THREADS``."""
    tasks = Connection(int(argv[0]), writable=False)
    events = Connection(int(argv[1]), readable=False)
    try:
        kind, path = tasks.recv()
    except (EOFError, OSError):
        return
    if kind == "path":  # the parent's import path, so its job functions import here too
        sys.path[:] = [*path, *(p for p in sys.path if p not in path)]
    _child_main(tasks, events, int(argv[2]))


if __name__ == "__main__":
    _main(sys.argv[1:])
