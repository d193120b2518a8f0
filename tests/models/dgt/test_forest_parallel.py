"""DGT forests and ``n_jobs`` (the torch threads their trees train with): the same forest on one
thread and on two, one record per tree in order, cancelling stops early, 0 refused with a sentence."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from models.base import Callback
from models.dgt.forest import DGTForestClassifier
from models.ground.errors import TrainingCancelled, TreevizError

SMALL = dict(n_trees=3, depth=2, n_layers=1, l1_penalty=0.0, max_epochs=4, min_steps=0, batch_size=64,
             learning_rate=0.05, random_state=5)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


class StopAfter(Callback):
    def __init__(self, n):
        self.n, self.trees = n, []

    def on_epoch_end(self, estimator, record=None, **kwargs):
        self.trees.append(record["tree"])
        if len(self.trees) >= self.n:
            raise TrainingCancelled()


def test_the_forest_is_the_same_in_one_process_and_in_two(iris):
    X, y = iris
    a = DGTForestClassifier(**SMALL, n_jobs=1).fit(X, y)
    b = DGTForestClassifier(**SMALL, n_jobs=2).fit(X, y)
    for s, t in zip(a.estimators_, b.estimators_):
        np.testing.assert_array_equal(s.split_weight_, t.split_weight_)
        np.testing.assert_array_equal(s.leaves_, t.leaves_)
        assert s.get_params() == t.get_params()
    assert all(s.equals(t) for s, t in zip(a.to_trees(), b.to_trees()))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.history_ == b.history_ and [r["tree"] for r in b.history_] == [1, 2, 3]


def test_a_callback_that_cancels_stops_the_forest_early(iris):
    X, y = iris
    stop = StopAfter(1)
    f = DGTForestClassifier(**{**SMALL, "n_trees": 4}, n_jobs=2).fit(X, y, callbacks=[stop])
    assert f.stopped_early_ and len(f.estimators_) == 1 and stop.trees == [1]


def test_zero_jobs_is_refused(iris):
    X, y = iris
    with pytest.raises(TreevizError, match="n_jobs"):
        DGTForestClassifier(**SMALL, n_jobs=0).fit(X, y)


class StepCounter(Callback):
    """Counts the forest's cancel checks (one before every optimiser step) and cancels at ``stop_at``."""

    def __init__(self, stop_at=None):
        self.calls, self.stop_at = 0, stop_at

    def on_step(self, estimator, **kwargs):
        self.calls += 1
        if self.stop_at is not None and self.calls >= self.stop_at:
            raise TrainingCancelled()


def test_a_cancel_while_trees_train_one_after_another_keeps_the_trees_trained_so_far(iris):
    """Trees with hidden layers train one after another on the CPU: a cancel half way through the
    forest keeps the finished first tree and the second part way, and records both."""
    X, y = iris
    params = {**SMALL, "depth": 3, "n_layers": 2, "width_multiplier": 2, "max_epochs": 6}
    full = StepCounter()
    whole = DGTForestClassifier(**params).fit(X, y, callbacks=[full])
    assert not whole.stopped_early_ and len(whole.estimators_) == 3
    stop = StepCounter(stop_at=full.calls // 2)
    f = DGTForestClassifier(**params).fit(X, y, callbacks=[stop])
    assert f.stopped_early_ and len(f.estimators_) == 2
    assert [r["tree"] for r in f.history_] == [1, 2]
    first, second = f.estimators_
    np.testing.assert_array_equal(first.split_weight_, whole.estimators_[0].split_weight_)
    assert len(first.history_) == 6 and 0 < len(second.history_) < 6


def test_n_jobs_sets_the_threads_a_large_forest_trains_with(iris, monkeypatch):
    """Networks too small to share a step train on one thread; larger ones on ``n_jobs`` threads."""
    import torch

    from models.dgt import forest as forest_module

    seen = []
    real = forest_module.train_jobs

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(forest_module, "train_jobs", spy)
    X, y = iris
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # a test worker runs on one thread, and a fit never takes more than it has
    try:
        DGTForestClassifier(**{**SMALL, "n_trees": 2}, n_jobs=2).fit(X, y)
        assert seen == [1]  # both trees batched: a plain tree of depth 2 is a small network
        monkeypatch.setattr(forest_module, "SMALL_NETWORK", 0)
        seen.clear()
        DGTForestClassifier(**{**SMALL, "n_trees": 2}, n_jobs=2).fit(X, y)
        assert seen == [2]
        seen.clear()
        DGTForestClassifier(**{**SMALL, "n_trees": 2}, n_jobs=1).fit(X, y)
        assert seen == [1]
    finally:
        torch.set_num_threads(before)
