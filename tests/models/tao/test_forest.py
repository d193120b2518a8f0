"""Forests of TAO trees: aggregation, subsamples, seeds, model files, callbacks, and a small
accuracy sanity check on digits."""

import numpy as np
import pytest
from sklearn.datasets import load_diabetes, load_digits, load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from models.base import Callback
from models.ground.errors import TrainingCancelled, TreevizError
from models.persist import load_model
from models.tao import forest as forest_module
from models.tao.forest import TAOForestClassifier, TAOForestRegressor

SMALL = dict(n_trees=5, depth=2, max_iter=2, l1_penalty=0.1, solver="sklearn")


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    return X, np.array(["setosa", "versicolor", "virginica"], dtype=object)[y]


@pytest.fixture(scope="module")
def vote_forest(iris):
    X, y = iris
    return TAOForestClassifier(**SMALL).fit(X, y)


def test_tao_c_predicts_by_majority_vote(iris, vote_forest):
    X, _ = iris
    f = vote_forest
    votes = f.tree_predictions(X)
    assert votes.shape == (5, len(X))
    # each tree's vote is its own Tree's arg max
    for t, tree in enumerate(f.to_trees()):
        np.testing.assert_array_equal(votes[t], np.argmax(tree.predict_value(X), axis=1))
    counts = np.stack([np.bincount(votes[:, n], minlength=3) for n in range(len(X))])
    np.testing.assert_array_equal(f.predict_proba(X), counts / 5)
    np.testing.assert_array_equal(f.predict(X), f.classes_[np.argmax(counts, axis=1)])  # ties: smaller class


def test_tao_c_vote_ties_go_to_the_smaller_class(iris):
    X, y = iris
    f = TAOForestClassifier(**{**SMALL, "n_trees": 2}).fit(X, y)
    votes = f.tree_predictions(X)
    split = votes[0] != votes[1]
    assert split.any(), "the two trees disagree somewhere"
    np.testing.assert_array_equal(f.predict(X)[split], f.classes_[np.minimum(votes[0], votes[1])[split]])


def test_tao_l_averages_probabilities(iris):
    X, y = iris
    f = TAOForestClassifier(**{**SMALL, "leaf": "linear"}).fit(X, y)
    manual = []
    for tree in f.to_trees():  # the shared Tree's scores, then the softmax, written out here
        z = tree.predict_value(X)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        manual.append(z / z.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(f.predict_proba(X), np.mean(manual, axis=0), rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(f.predict(X), f.classes_[np.argmax(np.mean(manual, axis=0), axis=1)])
    # not a vote of hard labels (linear leaves average probabilities): probabilities are not multiples of 1/T everywhere
    assert np.any(np.abs(f.predict_proba(X) * 5 - np.round(f.predict_proba(X) * 5)) > 1e-6)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_regression_forest_averages_the_trees():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    f = TAOForestRegressor(**SMALL).fit(X, y)
    per_tree = f.tree_predictions(X)
    assert per_tree.shape == (5, len(y))
    np.testing.assert_allclose(f.predict(X), per_tree.mean(axis=0), rtol=1e-12)
    assert f.predict(X).ndim == 1 and f.score(X, y) > 0.3
    Y = np.column_stack([y, -y])
    f2 = TAOForestRegressor(**SMALL).fit(X, Y)
    pred = f2.predict(X)
    assert pred.shape == (len(y), 2)
    np.testing.assert_allclose(pred, np.mean([t.predict_value(X) for t in f2.to_trees()], axis=0), rtol=1e-12)


def test_each_tree_sees_its_own_subsample_and_seed(monkeypatch, iris):
    X, y = iris
    seen = []
    real_train = forest_module.train

    def spy(tree, Xs, Ys, sw, cfg, **kwargs):
        seen.append((Xs.copy(), tree.weight.copy()))
        return real_train(tree, Xs, Ys, sw, cfg, **kwargs)

    monkeypatch.setattr(forest_module, "train", spy)
    # n_jobs=1: the spy sees only the trees trained in this process
    f = TAOForestClassifier(n_trees=4, depth=2, max_iter=1, subsample=0.9, solver="sklearn", n_jobs=1).fit(X, y)
    assert len(seen) == 4 == len(f.trees_)
    rows = {tuple(x): i for i, x in enumerate(X)}
    assert len(rows) == len(X) - 1  # iris has one duplicated row
    subsets = []
    for Xs, _ in seen:
        assert Xs.shape[0] == round(0.9 * len(X))  # 90 %
        idx = [rows[tuple(x)] for x in Xs]
        assert len(set(idx)) >= len(idx) - 1  # without replacement (up to iris's duplicate)
        subsets.append(frozenset(idx))
    assert len(set(subsets)) == 4  # a different subsample per tree
    inits = [w for _, w in seen]
    for a in range(4):  # a different random initial tree per tree (its own seed)
        for b in range(a):
            assert not np.allclose(inits[a], inits[b])
    np.testing.assert_allclose(np.linalg.norm(inits[0][:3], axis=1), 1.0)  # init="random": unit-norm nodes


def test_forest_is_reproducible(iris):
    X, y = iris
    a = TAOForestClassifier(**SMALL, random_state=3).fit(X, y)
    b = TAOForestClassifier(**SMALL, random_state=3).fit(X, y)
    assert all(s.equals(t) for s, t in zip(a.to_trees(), b.to_trees()))
    c = TAOForestClassifier(**SMALL, random_state=4).fit(X, y)
    assert not all(s.equals(t) for s, t in zip(a.to_trees(), c.to_trees()))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_forest_beats_its_best_tree_on_digits():
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    # thesis-like settings scaled down for a unit test: 10 trees, depth 5 (not 6), 4 iterations
    f = TAOForestClassifier(n_trees=10, depth=5, l1_penalty=0.1, max_iter=4, solver="sklearn").fit(Xtr, ytr)
    forest_error = 1 - f.score(Xte, yte)
    tree_errors = (f.classes_[f.tree_predictions(Xte)] != yte).mean(axis=1)
    assert forest_error <= tree_errors.min(), (forest_error, tree_errors)
    assert forest_error < 0.1
    assert len(f.history_) == 10
    for rec in f.history_:
        for key in ("tree", "iterations", "objective", "tree_train_error", "n_nonzero", "n_decision_nodes",
                    "n_leaves"):
            assert key in rec


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_forest_model_file_round_trip(tmp_path, iris, vote_forest, suffix):
    X, _ = iris
    back = load_model(vote_forest.save(str(tmp_path / f"forest{suffix}")))
    assert type(back) is TAOForestClassifier
    np.testing.assert_array_equal(back.predict_proba(X), vote_forest.predict_proba(X))
    np.testing.assert_array_equal(back.predict(X), vote_forest.predict(X))
    assert len(back.to_trees()) == 5
    assert all(s.equals(t) for s, t in zip(back.to_trees(), vote_forest.to_trees()))
    assert back.history_ == vote_forest.history_


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_linear_regression_forest_round_trip(tmp_path, suffix):
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    f = TAOForestRegressor(**{**SMALL, "n_trees": 2, "leaf": "linear"}).fit(X, y)
    back = load_model(f.save(str(tmp_path / f"reg{suffix}")))
    np.testing.assert_array_equal(back.predict(X), f.predict(X))
    assert all(s.equals(t) for s, t in zip(back.to_trees(), f.to_trees()))


def test_a_callback_can_stop_the_forest(iris):
    X, y = iris

    class StopAfterTwo(Callback):
        def on_epoch_end(self, estimator, record):
            if record["tree"] >= 2:
                raise TrainingCancelled

    f = TAOForestClassifier(**SMALL).fit(X, y, callbacks=[StopAfterTwo()])
    assert f.stopped_early_ and len(f.trees_) == 2 and len(f.history_) == 2
    assert f.predict(X).shape == y.shape
    assert f.to_tree(1).meta["forest_size"] == 2
    with pytest.raises(TreevizError, match="choose an index"):
        f.to_tree(2)


def test_bad_forest_parameters(iris):
    X, y = iris
    with pytest.raises(TreevizError, match="n_trees"):
        TAOForestClassifier(n_trees=0).fit(X, y)
    with pytest.raises(TreevizError, match="subsample"):
        TAOForestClassifier(subsample=1.5).fit(X, y)
