"""The CPU thread budget, decided in one place for torch, OpenMP / BLAS and numba.

Each parallel runtime starts, by default, one thread per core: torch's intra-op pool, the OpenMP
and BLAS pools behind scikit-learn, NumPy and SciPy, and numba's. When two training jobs run at
once (the app runs up to two), or a torch fit follows scikit-learn work in the same process, these
pools compete for the same cores; on a 2-core machine the same latent-tree fit then took 17-63 s
instead of 0.5-1.6 s. So treeviz gives every job an equal share of the cores:

* :func:`job_budget` is that share: the usable cores divided by the number of jobs that may run at
  once (at least 1);
* :func:`apply_budget` sets it. torch's intra-op pool and the OpenMP / BLAS pools (through
  threadpoolctl) are process-wide, so every worker sets the same value and nothing is restored
  afterwards (restoring from concurrent jobs would race); numba's setting belongs to the calling
  thread, so each worker thread sets its own;
* :func:`limited` narrows torch to fewer threads for one block of code (the TAO torch solver
  runs its many small problems on one thread), and restores the previous value;
* :func:`worker_count` turns a scikit-learn style ``n_jobs`` into a number of worker processes
  within this process's budget (:func:`process_budget`), so that a forest training its trees in
  parallel inside a job uses that job's share of the cores, not every core; each worker then runs
  on one thread (``apply_budget(1)``).

:class:`treeviz.services.jobs.manager.JobManager` applies the budget in every worker thread. A script can call
``apply_budget(job_budget(1))`` itself, or set ``TREEVIZ_THREADS`` to fix the number of threads
a job gets.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

#: Environment variable that, when set to a positive integer, is every job's thread budget.
THREADS_ENV = "TREEVIZ_THREADS"

#: The budget :func:`apply_budget` last set in this process (None: never called).
_applied: int | None = None


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


def apply_budget(n_threads: int) -> None:
    """Let torch, the OpenMP / BLAS pools and numba (in the calling thread) use ``n_threads``."""
    import numba  # deferred: numba and torch are heavy imports
    import scipy.linalg  # noqa: F401  deferred: loads SciPy's OpenBLAS, so that it is limited too
    import sklearn.utils._openmp_helpers  # noqa: F401  deferred: loads scikit-learn's OpenMP runtime
    import torch  # deferred: see above
    from threadpoolctl import threadpool_limits  # deferred: scans the loaded native libraries

    global _applied
    n = max(1, int(n_threads))
    _applied = n
    # threadpoolctl limits only the libraries loaded so far, hence the imports above (NumPy's and
    # SciPy's OpenBLAS, scikit-learn's and torch's OpenMP). numba goes first: its first
    # set_num_threads starts numba's OpenMP threading layer, which sets OpenMP's thread count back
    # to every core in the process-wide libgomp that torch loaded, so torch would otherwise run on
    # all cores again.
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    threadpool_limits(limits=n)


def process_budget() -> int:
    """Threads this process may use: what :func:`apply_budget` last set here (a job's share of the
    cores in the app's workers), else :func:`job_budget` of one job."""
    return _applied if _applied is not None else job_budget(1)


def worker_count(n_jobs: int | None, n_tasks: int) -> int:
    """Worker processes for ``n_tasks`` independent tasks under ``n_jobs`` in scikit-learn's meaning:
    None or 1 gives 1 (run them in this process), -1 this process's budget
    (:func:`process_budget`), -2 one less, and so on, k > 1 gives k; never more than ``n_tasks``,
    never less than 1."""
    if n_jobs is None:
        return 1
    n = int(n_jobs)
    if n == 0:
        raise ValueError("n_jobs must not be 0.")
    if n < 0:
        n = process_budget() + 1 + n
    return max(1, min(n, int(n_tasks)))


@contextlib.contextmanager
def limited(n_threads: int) -> Iterator[None]:
    """Run a block with torch on at most ``n_threads`` threads, then restore the previous value."""
    import torch  # deferred: torch is heavy

    before = torch.get_num_threads()
    n = max(1, min(int(n_threads), before))
    if n != before:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        if n != before:
            torch.set_num_threads(before)
