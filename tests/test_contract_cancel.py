"""A cancel stops every family's fit part way: the contract of ``docs/ARCHITECTURE.md`` §4 and §8.

Each registered estimator (a new family gets the check for free) is fitted in a background job
with settings under which an uncancelled fit is very long (the ``LONG`` table below: thousands of
epochs, millions of rounds). The test thread asks the job to stop once the fit is inside its
training loop (its first :data:`CHECKS` checks, ``on_step`` or a record, were made), as a user's
click does: the request lands at whatever point the fit has reached, so phases that record
nothing (a free embedding, optimiser steps between records) are caught too. The fit must then end
cancelled, with ``stopped_early_`` and a usable model. A family not in ``LONG`` (CART and the stump
train in one call) uses its ``test_params`` and only has to end. A small fit first pays the
process's one-time costs (imports, compiled kernels, a forest's pool of worker processes). The
forests train their trees in turn here; slow tests check that the cancel reaches trees in worker
processes, a forest whose workers are still starting (they cannot start until the test lets them),
a fit inside a dense eigendecomposition (which does not return until the test lets it), and a tree
embedding (defaults, breast cancer) trained in a job's worker process, the app's real path.

No test here asserts a time: each waits for a state (the fit began, the job ended) for up to
:data:`WAIT_S` seconds, far more than any of them needs on a quiet machine, and checks what the
fit did. A fit that ignored the cancel would either run to its end (not ``stopped_early_``) or
outlast that wait; one that waited for its workers or its eigendecomposition would never end while
the test holds them.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import types

import numpy as np
import pytest
import scipy.linalg
from sklearn.datasets import make_classification, make_regression

from models import parallel
from models.base import Callback
from models.ground.errors import TrainingCancelled
from models.registry import all_estimator_classes, get_family
from treeviz.cli.progress import ProgressBar, StopRequest
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import ProgressCallback, job_fn
from treeviz.services.jobs.manager import JobManager
from treeviz.services.store.runs import RunStore
from treeviz.services.views.bandit import _Publish, _SupervisedProgress

CASES = list(all_estimator_classes())
IDS = [f"{family.key}-{task}" for family, task, _ in CASES]
#: The most any wait here lasts (the fit beginning, a job ending after its cancel), in seconds: far
#: more than each needs on a quiet machine (well under a second to a few seconds), so that a machine
#: ten times slower passes too. Nothing asserts how long a wait took.
WAIT_S = 600.0
#: Checks (``on_step`` calls and records) a fit makes before the test asks it to stop: it is then
#: inside its training loop, not still setting up.
CHECKS = 3

#: Per family, settings under which an uncancelled fit of :func:`data` runs far longer than a test.
LONG: dict[str, dict] = {
    "latent": {"depth": 6, "max_epochs": 10_000, "patience": 10_000, "batch_size": 8},
    "tao": {"depth": 8, "max_iter": 1000, "tol": 0.0, "init": "random"},
    "tao_forest": {"n_trees": 100, "depth": 8, "max_iter": 1000, "tol": 0.0, "n_jobs": 2},
    "laptao": {"depth": 6, "n_mu": 100, "tao_iter": 100, "tol": 0.0},
    "skinny": {"n_trees": 50, "depth": 6, "max_epochs": 10_000, "batch_size": 8},
    "dgt": {"depth": 8, "max_epochs": 10_000, "min_steps": 0, "batch_size": 8},
    "dgt_forest": {"n_trees": 100, "depth": 8, "max_epochs": 10_000, "min_steps": 0, "batch_size": 8, "n_jobs": 2},
    "dgt_bandit": {"depth": 8, "n_rounds": 10_000_000},
    "tree_embedding": {"n_mu": 100, "free_iter": 100_000, "z_tol": 0.0},
}
#: The forests' trees in turn, in this process: starting their worker processes takes seconds, so
#: the cancel reaching them is the slow test :func:`test_cancel_reaches_trees_in_worker_processes`.
IN_TURN: dict[str, dict] = {"tao_forest": {"n_jobs": 1}, "dgt_forest": {"n_jobs": 1}}


@functools.cache
def data(task: str) -> tuple[np.ndarray, np.ndarray | None]:
    if task == "regression":
        X, y = make_regression(n_samples=2000, n_features=20, noise=1.0, random_state=0)
        return X, y
    X, y = make_classification(n_samples=2000, n_features=20, n_informative=10, n_classes=4, random_state=0)
    if task == "classification":
        return X, y
    return X[:500], None  # clustering and embedding get no labels (and an embedding's setup is O(N³))


def usable(estimator, X) -> np.ndarray:
    out = estimator.predict(X) if hasattr(estimator, "predict") else estimator.transform(X)
    return np.asarray(out)


@pytest.fixture
def manager():
    manager = JobManager(max_workers=1)
    yield manager
    manager.shutdown()


def wait_until(predicate, what: str) -> None:
    """Poll ``predicate`` until it holds; fail after :data:`WAIT_S` s (a state that never came)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not so after {WAIT_S:g} s"
        time.sleep(0.005)


class Checks(Callback):
    """Counts the checks a fit makes (``on_step`` calls and records)."""

    def __init__(self) -> None:
        self.count = 0

    def on_step(self, estimator, **kwargs) -> None:
        self.count += 1

    on_epoch_end = on_step


def cancel_once_started(manager, job, started=None) -> bool:
    """Ask ``job`` to stop once its fit has begun: ``started()`` holds, by default once the fit
    reported its first stage. True when the request reached the running job, False when the job
    had already ended."""
    wait_until(started or (lambda: job.total is not None or job.done), f"{job.label}: the fit began")
    return manager.cancel(job.id)


def check_cancel(manager, family, task, params: dict) -> None:
    """Fit in a job, cancel it once inside its training loop, and check that it stopped part way
    with a usable model."""
    X, y = data(task)
    # a first fit pays the process's one-time costs (imports, compiled kernels, a forest's pool of
    # worker processes), which no training loop can cut short
    pool = {"n_jobs": params["n_jobs"]} if "n_jobs" in params else {}
    family.make(task, {**family.test_params, **pool}).fit(X[:100], None if y is None else y[:100])
    estimator = family.make(task, params)

    checks = Checks()

    def fit(progress):
        return estimator.fit(X, y, callbacks=[checks, ProgressCallback(progress)])

    job = manager.submit(fit, label=family.key)
    requested = cancel_once_started(manager, job, lambda: checks.count >= CHECKS or job.done)
    check_stopped(job, requested, family, estimator, X)


def check_stopped(job, requested: bool, family, estimator, X) -> None:
    """The job ended after the cancel ``requested``, cancelled, with a model stopped part way and usable."""
    assert job.wait(WAIT_S), f"{family.key}: the fit had not ended {WAIT_S:g} s after the cancel"
    if not requested:
        assert family.key not in LONG, f"{family.key}: the fit ended before the cancel; make LONG longer"
        return
    assert job.status == "cancelled", job.message
    assert estimator.stopped_early_, f"{family.key}: the fit ran to its end despite the cancel"
    assert usable(estimator, X[:20]).shape[0] == 20


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_cancel_stops_the_fit_part_way_with_a_usable_model(manager, family, task, cls):
    check_cancel(manager, family, task, {**LONG.get(family.key, family.test_params), **IN_TURN.get(family.key, {})})


FORESTS = [case for case in CASES if "n_jobs" in LONG.get(case[0].key, {})]


@pytest.mark.slow
@pytest.mark.parametrize(("family", "task", "cls"), FORESTS, ids=[f"{f.key}-{t}" for f, t, _ in FORESTS])
def test_cancel_reaches_trees_in_worker_processes(manager, family, task, cls):
    check_cancel(manager, family, task, LONG[family.key])


@pytest.mark.slow
def test_cancel_reaches_a_tree_embedding_in_a_worker_process(home):
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    store = RunStore(home)
    manager = JobManager(max_workers=1, processes=True)
    try:
        # the same child process runs a small job first, which pays its one-time costs
        warm = manager.submit(job_fn("tree_embedding", "embedding", get_family("tree_embedding").test_params,
                                     prepared, store=store), label="warm-up")
        assert warm.wait(WAIT_S) and warm.status == "finished", warm.message
        job = manager.submit(job_fn("tree_embedding", "embedding", {}, prepared, store=store), label="defaults")
        assert cancel_once_started(manager, job), "the defaults' fit ended before the cancel"
        assert job.wait(WAIT_S), f"the job had not ended {WAIT_S:g} s after the cancel"
        # the run is stored as cancelled: the fit stopped part way (stopped_early_) in the child
        assert job.status == "cancelled" and store.get(job.result.run_id).status == "cancelled"
    finally:
        manager.shutdown()


@pytest.fixture
def held_worker_start(tmp_path, monkeypatch):
    """New worker processes cannot finish starting until the test creates the file this fixture
    yields (a ``sitecustomize`` that waits for it, as importing torch held them 20-28 s on a loaded
    machine; it gives up after :data:`WAIT_S` s so no process is left behind), and the forests' pool
    is stopped, so the next forest starts new ones."""
    gate = tmp_path / "workers-may-start"
    (tmp_path / "sitecustomize.py").write_text(
        "import os, time\n"
        f"_until = time.monotonic() + {WAIT_S!r}\n"
        f"while not os.path.exists({str(gate)!r}) and time.monotonic() < _until:\n"
        "    time.sleep(0.05)\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")])))
    parallel.worker_pool(2).shutdown(wait=True, kill_workers=True)
    try:
        yield gate
    finally:
        gate.touch()
        parallel.worker_pool(2).shutdown(wait=False, kill_workers=True)


#: The forests that still train their trees in worker processes: the DGT forest trains its trees as
#: one batched program in this process (``models.dgt.fast.train_jobs``), so it starts no workers and a
#: cancel there keeps the trees part way (checked by ``test_cancel_stops_the_fit_part_way...``).
WORKER_FORESTS = [case for case in FORESTS if case[0].key != "dgt_forest"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize(("family", "task", "cls"), WORKER_FORESTS,
                         ids=[f"{f.key}-{t}" for f, t, _ in WORKER_FORESTS])
def test_cancel_while_the_worker_processes_start(manager, held_worker_start, family, task, cls):
    """Cancelled once the fit began, while its workers cannot finish starting: the fit ends without
    waiting for them (the test lets them start only after the job ended). No tree was trained, so
    the fit ends with the forest's sentence and the job counts as cancelled."""
    X, y = data(task)
    estimator = family.make(task, LONG[family.key])
    job = manager.submit(lambda progress: estimator.fit(X, y, callbacks=[ProgressCallback(progress)]),
                         label=family.key)
    assert cancel_once_started(manager, job), f"{family.key}: the fit ended before the cancel"
    assert job.wait(WAIT_S), f"{family.key}: the fit waited for its workers after the cancel"
    assert not held_worker_start.exists()  # the workers were still held when it ended
    assert job.status == "cancelled"
    assert job.message == "The forest was stopped before its first tree was trained."


def held_call(monkeypatch, owner, name: str, started: threading.Event, release: threading.Event) -> None:
    """``owner.name`` does not return until ``release`` is set (as a dense eigendecomposition of
    thousands of points on a loaded machine takes long; it gives up waiting after :data:`WAIT_S` s),
    then gives its result; ``started`` is set when it is called."""
    real = getattr(owner, name)

    def held(*args, **kwargs):
        started.set()
        release.wait(WAIT_S)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, held)


#: LapTAO's "auto" label step eigendecomposes only up to ``EIGEN_MAX_POINTS`` points (CG above), so
#: its case asks for the eigendecomposition of all 2000 points.
EIGEN_PARAMS: dict[str, dict] = {"laptao": {"solver": "eigen"}}


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize(("key", "task", "owner", "name"), [
    ("tree_embedding", "embedding", scipy.linalg, "eigh"),
    ("laptao", "classification", np.linalg, "eigh"),
])
def test_cancel_during_a_dense_eigendecomposition(manager, monkeypatch, key, task, owner, name):
    """The tree embedding's spectral direction and LapTAO's label step eigendecompose a dense N × N
    matrix in one call: a cancel during it ends the fit, with a usable model, while the call still
    has not returned (the test lets it return only after the job ended)."""
    family = get_family(key)
    params = {**family.test_params, **EIGEN_PARAMS.get(key, {})}
    X, y = data(task)
    family.make(task, family.test_params).fit(X[:100], None if y is None else y[:100])  # one-time costs
    started, release = threading.Event(), threading.Event()
    held_call(monkeypatch, owner, name, started, release)
    estimator = family.make(task, params)
    job = manager.submit(lambda progress: estimator.fit(X, y, callbacks=[ProgressCallback(progress)]), label=key)
    try:
        assert started.wait(WAIT_S), "the eigendecomposition was not called"
        assert manager.cancel(job.id)
        check_stopped(job, True, family, estimator, X)
        assert not release.is_set()  # the fit left the call while it was still running
    finally:
        release.set()


def test_ctrl_c_and_the_bandit_page_stop_inside_long_phases():
    """The command line's progress bar (Ctrl-C) and the Bandit page's callbacks answer ``on_step``,
    which estimators ask between records, not only at the next record."""
    request = StopRequest()
    callbacks = [ProgressBar(get_family("tao"), enabled=False, stop=request)]
    job = types.SimpleNamespace(cancelled=True)
    callbacks += [_Publish(job, [], {}, "classification"), _SupervisedProgress(job, {})]
    request.requested = True
    for callback in callbacks:
        with pytest.raises(TrainingCancelled):
            callback.on_step(None)
