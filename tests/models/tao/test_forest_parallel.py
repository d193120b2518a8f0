"""TAO forests training their trees in worker processes (``n_jobs``): the same forest for any
``n_jobs``, one progress record per tree in tree order, cancelling stops early, one thread per
worker, no workers of its own inside a joblib worker, and bad values refused with a sentence."""

import warnings

import numpy as np
import pytest
from joblib import Parallel, delayed
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler

from models import parallel
from models.base import Callback
from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError
from models.tao.forest import TAOForestClassifier, TAOForestRegressor, _grow_tree

SMALL = dict(n_trees=4, depth=3, max_iter=2, l1_penalty=0.1, solver="sklearn", random_state=3)


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


def assert_same_trees(a, b):
    assert len(a.trees_) == len(b.trees_)
    for s, t in zip(a.trees_, b.trees_):
        for name in ("left", "right", "weight", "bias", "value"):
            np.testing.assert_array_equal(getattr(s, name), getattr(t, name))
    for s, t in zip(a.node_origins_, b.node_origins_):
        np.testing.assert_array_equal(s, t)


class Recorder(Callback):
    def __init__(self, stop_after=None):
        self.records, self.stop_after, self.ended = [], stop_after, 0

    def on_epoch_end(self, estimator, record=None, **kwargs):
        self.records.append(record)
        if self.stop_after is not None and len(self.records) >= self.stop_after:
            raise TrainingCancelled()

    def on_train_end(self, estimator, **kwargs):
        self.ended += 1


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_the_forest_is_the_same_in_one_process_and_in_two(iris):
    X, y = iris
    one, two = Recorder(), Recorder()
    a = TAOForestClassifier(**SMALL, n_jobs=1).fit(X, y, callbacks=[one])
    b = TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y, callbacks=[two])
    assert_same_trees(a, b)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    # one record per tree, in tree order, and the same records
    assert [r["tree"] for r in two.records] == [1, 2, 3, 4]
    assert one.records == two.records == b.history_
    assert two.ended == 1 and not b.stopped_early_
    # the trees differ from one another (each has its own seed and subsample)
    assert not np.array_equal(b.trees_[0].weight, b.trees_[1].weight)


def test_regression_forest_is_the_same_in_two_processes(iris):
    X, y = iris
    target = X[:, 0] + y
    a = TAOForestRegressor(**SMALL, n_jobs=1).fit(X[:, 1:], target)
    b = TAOForestRegressor(**SMALL, n_jobs=2).fit(X[:, 1:], target)
    assert_same_trees(a, b)
    np.testing.assert_array_equal(a.predict(X[:, 1:]), b.predict(X[:, 1:]))


def test_a_callback_that_cancels_stops_the_forest_early(iris):
    X, y = iris
    stop = Recorder(stop_after=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # joblib's "tasks ... cancelled" warning is expected and silenced
        f = TAOForestClassifier(**{**SMALL, "n_trees": 6}, n_jobs=2).fit(X, y, callbacks=[stop])
    assert f.stopped_early_ and len(f.trees_) == 2 and stop.ended == 1
    assert [r["tree"] for r in f.history_] == [1, 2]
    # the trees kept are the first two of the full forest
    full = TAOForestClassifier(**{**SMALL, "n_trees": 6}, n_jobs=1).fit(X, y)
    for s, t in zip(f.trees_, full.trees_[:2]):
        np.testing.assert_array_equal(s.weight, t.weight)
    # and the forest can be refitted afterwards (the workers were stopped, new ones start)
    again = TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y)
    assert len(again.trees_) == 4


@pytest.mark.parametrize("bad", [0, "2", 1.5, -2, True])
def test_a_bad_n_jobs_is_refused_with_a_sentence(iris, bad):
    X, y = iris
    with pytest.raises(TreevizError, match="n_jobs"):
        TAOForestClassifier(**SMALL, n_jobs=bad).fit(X, y)


def test_worker_count_follows_scikit_learn_within_the_thread_budget(monkeypatch):
    monkeypatch.setattr(threads, "_applied", 3)
    assert threads.current_budget() == 3
    assert threads.worker_count(None, 10) == 1
    assert threads.worker_count(1, 10) == 1
    assert threads.worker_count(-1, 10) == 3  # every core of this process's budget, not of the machine
    assert threads.worker_count(-1, 2) == 2  # never more workers than trees
    assert threads.worker_count(-2, 10) == 2
    assert threads.worker_count(8, 10) == 8
    assert threads.worker_count(-5, 10) == 1
    with pytest.raises(ValueError):
        threads.worker_count(0, 10)


def test_a_tree_in_a_worker_runs_on_one_thread(iris, monkeypatch):
    """A call in a worker process runs on one thread; the forest's own process is left alone."""
    X, y = iris
    calls = []
    real = threads.budget

    def budget(n):
        calls.append(n)
        return real(n)

    monkeypatch.setattr(threads, "budget", budget)
    maker = TAOForestClassifier(**SMALL)
    shared = (maker, X, y.astype(np.int64), np.ones(len(y)), 100, maker._config(3))
    in_turn = list(parallel.run_in_order(_grow_tree, shared, [7], 1, lambda: False))
    assert calls == []
    before = threads.current_budget()
    in_worker = parallel._call_in_worker(_grow_tree, shared, 7, lambda: False)  # what a worker runs
    assert calls == [1]
    assert threads.current_budget() == before  # the one-thread budget ended with the call
    np.testing.assert_array_equal(in_turn[0][0]["weight"], in_worker[0]["weight"])


def test_a_forest_trained_in_a_joblib_worker_keeps_its_trees_in_that_worker(iris, monkeypatch):
    """A benchmark or a search running forests in joblib workers already uses the cores: the forest
    then trains its trees one after another instead of starting workers of its own."""
    X, y = iris

    def refuse(*args, **kwargs):
        raise AssertionError("nested workers")

    monkeypatch.setattr(parallel, "worker_pool", refuse)
    fit = lambda: TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y).trees_  # noqa: E731
    # one task: liblinear's random state is global to the process, so two forests trained at once in
    # threads of one process would not be reproducible (in worker processes they are)
    (inside,) = Parallel(n_jobs=2, backend="threading")(delayed(fit)() for _ in range(1))
    alone = TAOForestClassifier(**SMALL, n_jobs=1).fit(X, y)
    for s, t in zip(inside, alone.trees_):
        np.testing.assert_array_equal(s.weight, t.weight)
    with pytest.raises(AssertionError, match="nested workers"):  # outside a worker it would start some
        TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_joblib_parallel_still_works_after_a_forest_used_the_pool(iris):
    """The forest's pool is the process's one reusable loky pool, which joblib's Parallel shares:
    it must stay joblib's kind, or the next Parallel fails."""
    X, y = iris
    TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y)
    assert Parallel(n_jobs=2)(delayed(abs)(-i) for i in range(3)) == [0, 1, 2]


def _item_seen(item, stop):
    return item, stop()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cancel_before_any_call_started_still_runs_the_first_call_and_only_it(workers):
    """A cancel that reaches the workers before they picked up their first call (a loaded machine)
    still leaves one result, the first call's, which sees ``stop()`` true and returns at once; the
    calls after it are not made. Without this the forest had no tree and could not predict."""
    warm = list(parallel.run_in_order(_item_seen, (), [0, 1], workers, lambda: False))  # workers started
    assert warm == [(0, False), (1, False)]
    assert list(parallel.run_in_order(_item_seen, (), [0, 1, 2], workers, lambda: True)) == [(0, True)]
    assert parallel._call_in_worker(_item_seen, (), 5, lambda: True) is None  # a later call is skipped


def test_a_forest_cancelled_before_its_workers_start_a_tree_keeps_one_tree(iris):
    class CancelAtOnce(Callback):  # the cancel arrived as the fit began
        def on_step(self, estimator, **kwargs):
            raise TrainingCancelled()

    X, y = iris
    TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y)  # workers started (a cold pool is killed instead)
    forest = TAOForestClassifier(**SMALL, n_jobs=2).fit(X, y, callbacks=[CancelAtOnce()])
    assert forest.stopped_early_ and len(forest.trees_) == 1 and forest.predict(X).shape == (150,)
