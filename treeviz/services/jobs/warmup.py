"""The app's background warm-up: numba's kernels compiled in a child process when the app starts.

With the app's jobs in threads (``TREEVIZ_JOB_PROCESSES=0``), :func:`treeviz.ui.state.warm_jobs`
calls :func:`start_background` after every script run (with jobs in child processes, the default,
the warm-up runs in the first job process instead: ``JobManager.prime``). The first call in a process
starts one daemon thread, which runs ``python -m treeviz.services.experiments.warmup`` (the warm-up
that ``treeviz warmup`` runs, :mod:`treeviz.services.experiments.warmup`) as a child process and
waits for it; later calls do nothing. The child lowers its priority and runs on one thread
(:func:`models.ground.threads.apply_budget`), so the compilation neither holds the app's
interpreter lock nor takes the cores the app's jobs share (:mod:`models.ground.threads`), and it is
started after the page has run, so the first page does not wait for it. What it compiles lands in
numba's disk cache, where the app's training processes find it.

This module imports nothing heavy (the first page loads it). ``TREEVIZ_WARMUP=0`` turns the
background warm-up off (the test suite does).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

#: Environment variable: "0" (or "false", "no", "off") keeps the app from starting the warm-up.
WARMUP_ENV = "TREEVIZ_WARMUP"
#: The module the child process runs.
CHILD_MODULE = "treeviz.services.experiments.warmup"
#: The folder holding the ``treeviz`` package, which the child process needs on its path.
_ROOT = str(Path(__file__).resolve().parents[3])

_state: dict[str, object] = {"thread": None, "status": "not started"}
_lock = threading.Lock()


def enabled() -> bool:
    """Whether the app may start the background warm-up (``TREEVIZ_WARMUP`` is not "0")."""
    return os.environ.get(WARMUP_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def command() -> list[str]:
    """The child process the background warm-up runs."""
    return [sys.executable, "-m", CHILD_MODULE]


def _run_child() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, env.get("PYTHONPATH", "")) if p)
    try:
        code = subprocess.call(command(), env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        code = -1
    with _lock:
        _state["status"] = "done" if code == 0 else "failed"


def start_background() -> bool:
    """Start the background warm-up once per process (a daemon thread running the child process);
    True when this call started it, False when it had started before or is off (:func:`enabled`)."""
    if not enabled():
        return False
    with _lock:
        if _state["thread"] is not None:
            return False
        thread = threading.Thread(target=_run_child, name="treeviz-warmup", daemon=True)
        _state["thread"] = thread
        _state["status"] = "running"
    thread.start()
    return True


def status() -> str:
    """``"not started"``, ``"running"``, ``"done"`` or ``"failed"`` (the child's exit status was not 0)."""
    with _lock:
        return str(_state["status"])


def wait(timeout: float | None = None) -> bool:
    """Wait for the background warm-up to end; True when it has ended or never started."""
    with _lock:
        thread = _state["thread"]
    if isinstance(thread, threading.Thread):
        thread.join(timeout)
        return not thread.is_alive()
    return True
