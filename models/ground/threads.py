"""The CPU thread budget, decided in one place for torch, OpenMP / BLAS and numba.

Each parallel runtime starts, by default, one thread per core: torch's intra-op pool, the OpenMP
and BLAS pools behind scikit-learn, NumPy and SciPy, and numba's. When two training jobs run at
once (the app runs up to two), or a torch fit follows scikit-learn work in the same process, these
pools compete for the same cores; on a 2-core machine the same latent-tree fit then took 17-63 s
instead of 0.5-1.6 s. So treeviz gives every job an equal share of the cores:

* :func:`job_budget` is that share: the usable cores divided by the number of jobs that may run at
  once (at least 1), or ``TREEVIZ_THREADS`` when set;
* :func:`budget` runs one job under it, in the calling thread, and puts everything back when the
  job ends. Two jobs in two threads of one process each keep their own budget
  (:class:`treeviz.services.jobs.manager.JobManager` runs every job in a thread this way, and a
  grid's or a search's trial runs in its worker the same way);
* :func:`apply_budget` sets the budget of a whole process that runs one job at a time (a script,
  the command line, a worker process) and restores nothing; never call it from a job's thread in a
  process that runs other jobs;
* :func:`limited` narrows torch to fewer threads for one block of code in the calling thread (the
  TAO torch solver runs its many small problems on one thread), and restores the previous value;
* :func:`current_budget` is the calling thread's budget and :func:`worker_count` turns a
  scikit-learn style ``n_jobs`` into a number of worker processes within it, so that a forest
  training its trees in parallel inside a job uses that job's share of the cores, not every core;
  each worker then runs on one thread (``budget(1)``).

What belongs to a thread and what to the process (torch 2.13 CPU build, OpenMP backend with MKL;
numba 0.68 on its OpenMP layer; OpenBLAS 0.3 built with pthreads, as SciPy's and NumPy's wheels
ship it; threadpoolctl 3.8). Read in their sources and docs, and measured here with two threads
at 1 and 2 threads and ``torch.__config__.parallel_info()`` read in each:

* numba: the thread mask lives in a thread-local slot (numba's "Notes on Numba's threading
  implementation", thread masking), so ``numba.set_num_threads`` in one thread leaves the others;
* torch: ``at::set_num_threads`` calls ``omp_set_num_threads`` (an OpenMP per-thread setting) and
  ``mkl_set_num_threads_local`` (thread-local, MKL's reference), and ``get_num_threads`` returns
  the calling thread's ``omp_get_max_threads()``; measured, two threads kept 1 and 2. But
  ``set_num_threads`` also stores a process-wide value that a thread copies in at its first torch
  call (measured: a thread that first touched torch after another's ``set_num_threads(1)`` ran on
  1), and resizes the pthreadpool that NNPACK / QNNPACK share (none of the families here use
  those). So :func:`budget` and :func:`limited` make the calling thread start torch first, and put
  the process-wide value back from a short-lived helper thread after each change (under one lock),
  so a thread that starts later still gets the process's own count;
* the OpenMP pools (torch's and scikit-learn's libgomp, numba's): ``omp_set_num_threads``, which
  threadpoolctl calls for them, is per thread, so a ``threadpool_limits(user_api="openmp")``
  context in the job's thread stays in that thread;
* BLAS: OpenBLAS built with pthreads has one pool per process (threadpoolctl's documentation says
  so, and since 3.7 it lets only one thread at a time change it). It cannot be per thread. So the
  first :func:`budget` to begin in a process sets the BLAS pools to its budget, budgets that begin
  while another runs leave them as they are, and the last to end restores them: jobs running at
  once never change each other's BLAS pools. In the app every job of the job manager has the same
  share, so the BLAS pools run on that share.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

#: Environment variable that, when set to a positive integer, is every job's thread budget.
THREADS_ENV = "TREEVIZ_THREADS"

#: The budget :func:`apply_budget` last set in this process (None: never called).
_applied: int | None = None
#: Serialises the changes to what is process-wide: torch's value for threads that start later,
#: and the BLAS pools with the count of budgets holding them.
_lock = threading.Lock()
#: Per thread: ``budgets``, the stack of the budgets this thread is in (innermost last).
_local = threading.local()
#: The budgets now running in this process, and the limiter that set the BLAS pools for them.
_blas: dict[str, Any] = {"holders": 0, "limiter": None}


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS and Windows have no sched_getaffinity
        return max(1, os.cpu_count() or 1)


def job_budget(n_jobs: int) -> int:
    """Threads each of ``n_jobs`` concurrent jobs may use: ``TREEVIZ_THREADS`` when set, else an
    equal share of :func:`usable_cores` (at least 1)."""
    fixed = os.environ.get(THREADS_ENV, "").strip()
    if fixed.isdigit() and int(fixed) > 0:
        return int(fixed)
    return max(1, usable_cores() // max(1, int(n_jobs)))


def _load_runtimes() -> None:
    """Load every runtime whose pools the budget sets: threadpoolctl limits only the libraries
    loaded so far (NumPy's and SciPy's OpenBLAS, scikit-learn's and torch's OpenMP)."""
    import numba  # noqa: F401  deferred: numba and torch are heavy imports
    import scipy.linalg  # noqa: F401  deferred: loads SciPy's OpenBLAS, so that it is limited too
    import sklearn.utils._openmp_helpers  # noqa: F401  deferred: loads scikit-learn's OpenMP runtime
    import torch  # noqa: F401  deferred: see above


def _numba_threads(n: int) -> int:
    import numba  # deferred: numba is heavy

    return max(1, min(int(n), numba.config.NUMBA_NUM_THREADS))


def _in_new_thread(fn: Callable[[], Any]) -> Any:
    """``fn()`` in a short-lived thread of its own (what a thread that starts now would see)."""
    out: list[Any] = []
    helper = threading.Thread(target=lambda: out.append(fn()), name="treeviz-threads-helper", daemon=True)
    helper.start()
    helper.join()
    return out[0] if out else None


def _torch_here(n: int) -> None:
    """torch on ``n`` threads in the calling thread only (see the module docstring)."""
    import torch  # deferred: torch is heavy

    torch.get_num_threads()  # this thread's first torch call copies in the process value: do it first
    with _lock:
        later = _in_new_thread(torch.get_num_threads)  # what a thread starting now gets
        torch.set_num_threads(n)
        if later is not None and later != n:
            _in_new_thread(lambda: torch.set_num_threads(later))


def _hold_blas(n: int) -> None:
    """One more budget runs: the first sets the process's BLAS pools to ``n`` threads."""
    from threadpoolctl import OpenBLASController, ThreadpoolController  # deferred: scans native libraries

    with _lock:
        _blas["holders"] += 1
        if _blas["holders"] == 1:
            # threadpoolctl lets one thread at a time change OpenBLAS's process-wide pool; these
            # changes are serialised by the lock, and the last budget to end (any thread) restores it
            OpenBLASController.clear_controlling_thread(force=True)
            _blas["limiter"] = ThreadpoolController().limit(limits=n, user_api="blas")
            OpenBLASController.clear_controlling_thread(force=True)


def _release_blas() -> None:
    """One budget fewer runs: the last restores the BLAS pools as the first found them."""
    from threadpoolctl import OpenBLASController  # deferred: scans native libraries

    with _lock:
        _blas["holders"] -= 1
        if _blas["holders"] == 0 and _blas["limiter"] is not None:
            OpenBLASController.clear_controlling_thread(force=True)
            _blas["limiter"].restore_original_limits()
            OpenBLASController.clear_controlling_thread(force=True)
            _blas["limiter"] = None


@contextlib.contextmanager
def budget(n_threads: int) -> Iterator[int]:
    """Run a block (a job) with torch, the OpenMP pools and numba on ``n_threads`` threads in the
    calling thread, and the BLAS pools as the module docstring says; everything is restored when
    the block ends. Yields the budget."""
    import numba  # deferred: numba and torch are heavy imports
    import torch  # deferred: see above
    from threadpoolctl import threadpool_limits  # deferred: scans the loaded native libraries

    _load_runtimes()
    n = max(1, int(n_threads))
    torch.get_num_threads()  # torch's per-thread start first: it would later reset this thread's count
    # numba first: its first set_num_threads starts numba's OpenMP layer, which sets the calling
    # thread's OpenMP count back to every core, so torch and the OpenMP pools are set after it
    numba_before = numba.get_num_threads()
    torch_before = torch.get_num_threads()
    numba.set_num_threads(_numba_threads(n))
    _torch_here(n)
    stack = _local.__dict__.setdefault("budgets", [])
    stack.append(n)
    _hold_blas(n)
    try:
        with threadpool_limits(limits=n, user_api="openmp"):
            yield n
    finally:
        _release_blas()
        stack.pop()
        _torch_here(torch_before)
        numba.set_num_threads(numba_before)


def apply_budget(n_threads: int) -> None:
    """Set ``n_threads`` for the whole process: torch (this thread, and every thread that starts
    torch later), the OpenMP pools of this thread, the BLAS pools, and numba in this thread;
    nothing is restored. For a process that runs one job at a time (a script, the command line, a
    worker process); a job in a thread of a process that runs others uses :func:`budget`."""
    import numba  # deferred: numba and torch are heavy imports
    import torch  # deferred: see above
    from threadpoolctl import threadpool_limits  # deferred: scans the loaded native libraries

    global _applied
    _load_runtimes()
    n = max(1, int(n_threads))
    _applied = n
    # numba goes first, as in budget(): starting its OpenMP layer resets this thread's OpenMP count
    numba.set_num_threads(_numba_threads(n))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    threadpool_limits(limits=n)


def current_budget() -> int:
    """Threads the calling thread may use: the innermost :func:`budget` it runs in, else what
    :func:`apply_budget` last set in this process, else :func:`job_budget` of one job."""
    stack = getattr(_local, "budgets", None)
    if stack:
        return stack[-1]
    return _applied if _applied is not None else job_budget(1)


def worker_count(n_jobs: int | None, n_tasks: int) -> int:
    """Worker processes for ``n_tasks`` independent tasks under ``n_jobs`` in scikit-learn's meaning:
    None or 1 gives 1 (run them in this process), -1 the calling thread's budget
    (:func:`current_budget`), -2 one less, and so on, k > 1 gives k; never more than ``n_tasks``,
    never less than 1."""
    if n_jobs is None:
        return 1
    n = int(n_jobs)
    if n == 0:
        raise ValueError("n_jobs must not be 0.")
    if n < 0:
        n = current_budget() + 1 + n
    return max(1, min(n, int(n_tasks)))


@contextlib.contextmanager
def limited(n_threads: int) -> Iterator[None]:
    """Run a block with torch on at most ``n_threads`` threads in the calling thread, then restore
    the previous value (other threads, and threads that start torch later, are left as they are)."""
    import torch  # deferred: torch is heavy

    before = torch.get_num_threads()
    n = max(1, min(int(n_threads), before))
    if n != before:
        _torch_here(n)
    try:
        yield
    finally:
        if n != before:
            _torch_here(before)
