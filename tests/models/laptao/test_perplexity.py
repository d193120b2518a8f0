"""The graph's perplexity tuned on the labels (models.laptao.graph.select_perplexity, the estimators'
``perplexity=None``): the closed-form leave-one-out error equals hiding each label and propagating
again, the candidate with the smallest error is chosen, points whose class has one label are not
held out, and an explicit perplexity skips the search."""

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_moons

from models.ground.errors import TreevizError
from models.laptao.estimators import LapTAOClassifier, LapTAORegressor
from models.laptao.graph import (
    FALLBACK_PERPLEXITY,
    PERPLEXITY_GRID,
    laptao_graph,
    leave_one_out_error,
    select_perplexity,
)
from models.laptao.label_step import label_propagation, make_solver, partial_labels

FAST = {"depth": 2, "n_mu": 2, "tao_iter": 2}


def moons(n=150, n_labelled=8, seed=0):
    X, y = make_moons(n, noise=0.1, random_state=seed)
    rng = np.random.default_rng(seed)
    pick = np.concatenate([rng.choice(np.flatnonzero(y == c), n_labelled // 2, replace=False) for c in (0, 1)])
    partial = np.full(n, -1)
    partial[pick] = y[pick]
    return X, y, partial


def test_leave_one_out_error_equals_hiding_each_label_and_propagating_again():
    X, _, partial = moons()
    Y, labelled, _ = partial_labels(partial)
    _, lap = laptao_graph(X, 5.0)
    rows = np.flatnonzero(labelled)
    errors = []
    for i in rows:
        hidden = labelled.copy()
        hidden[i] = False
        z = label_propagation(make_solver(lap, hidden, 0.1, method="lu"), np.where(hidden[:, None], Y, 0), hidden)
        errors.append(np.sum((z[i] - Y[i]) ** 2))
    assert leave_one_out_error(lap, Y, labelled, 0.1, rows) == pytest.approx(np.mean(errors), rel=1e-8)
    assert leave_one_out_error(lap, Y, labelled, 0.1, rows[:3]) == pytest.approx(np.mean(errors[:3]), rel=1e-8)
    with pytest.raises(TreevizError, match="labelled point to hold out"):
        leave_one_out_error(lap, Y, labelled, 0.1, np.flatnonzero(~labelled)[:2])


def test_a_label_alone_in_its_part_of_the_graph_predicts_nothing():
    # two far-apart clusters; the right one holds a single label: hiding it leaves nothing to propagate
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.1, (20, 2)), rng.normal(100, 0.1, (20, 2))])
    partial = np.full(40, -1)
    partial[[0, 1, 20]] = [0, 1, 0]
    Y, labelled, _ = partial_labels(partial)
    _, lap = laptao_graph(X, 3.0)
    assert leave_one_out_error(lap, Y, labelled, 0.1, np.array([20])) == pytest.approx(1.0)  # ‖0 − e_0‖²


def test_the_smallest_leave_one_out_error_wins_and_its_graph_is_returned():
    X, _, partial = moons()
    Y, labelled, _ = partial_labels(partial)
    groups = np.argmax(Y, axis=1)
    perplexity, lap, scores = select_perplexity(X, Y, labelled, 0.1, groups=groups)
    assert list(scores) == list(PERPLEXITY_GRID)
    assert perplexity == min(scores, key=scores.get)
    assert abs(lap - laptao_graph(X, perplexity)[1]).max() == 0
    rows = np.flatnonzero(labelled)
    for p in (3.0, 30.0):
        assert scores[p] == pytest.approx(leave_one_out_error(laptao_graph(X, p)[1], Y, labelled, 0.1, rows))
    # an explicit k: only perplexities below it are tried; a tiny data set lowers the grid to (N − 1)/3
    assert list(select_perplexity(X, Y, labelled, 0.1, groups=groups, n_neighbors=12)[2]) == [3.0, 5.0, 10.0]
    Ys, labs = np.zeros((31, 2)), np.arange(31) < 6
    Ys[np.arange(6), np.argmax(Y[rows[:6]], axis=1)] = 1.0
    assert list(select_perplexity(X[:31], Ys, labs, 0.1)[2]) == [3.0, 5.0, 10.0]  # 15 and 30 become 10


def test_classes_with_one_label_are_not_held_out_and_one_label_per_class_falls_back():
    X, _, partial = moons(n_labelled=8)
    first = np.flatnonzero(partial == 1)[0]
    one = np.where((partial == 1) & (np.arange(partial.size) != first), -1, partial)  # class 1 keeps one label
    Y, labelled, _ = partial_labels(one)
    groups = np.argmax(Y, axis=1)
    _, _, scores = select_perplexity(X, Y, labelled, 0.1, groups=groups)
    class0 = np.flatnonzero(labelled & (groups == 0))
    _, lap = laptao_graph(X, 5.0)
    assert scores[5.0] == pytest.approx(leave_one_out_error(lap, Y, labelled, 0.1, class0))
    # one label per class: nothing can be held out, so the fallback perplexity and no scores
    single = np.full(partial.size, -1)
    single[[np.flatnonzero(partial == c)[0] for c in (0, 1)]] = [0, 1]
    Y1, labelled1, _ = partial_labels(single)
    perplexity, _, scores = select_perplexity(X, Y1, labelled1, 0.1, groups=np.argmax(Y1, axis=1))
    assert perplexity == FALLBACK_PERPLEXITY and scores == {}
    assert select_perplexity(X, Y1, labelled1, 0.1, groups=np.argmax(Y1, axis=1), n_neighbors=12)[0] == 10.0


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_chosen_graph_propagates_digits_labels_better_than_the_fixed_default():
    X, y = load_digits(return_X_y=True)
    X = X / 16
    rng = np.random.default_rng(0)
    partial = np.full(y.size, -1)
    pick = np.concatenate([rng.choice(np.flatnonzero(y == c), 2, replace=False) for c in range(10)])
    partial[pick] = y[pick]  # 20 labels of 1797 (about 1 %)
    Y, labelled, _ = partial_labels(partial)
    perplexity, lap, scores = select_perplexity(X, Y, labelled, 0.1, groups=np.argmax(Y, axis=1))

    def accuracy(lap_):
        z0 = label_propagation(make_solver(lap_, labelled, 0.1, method="lu"), Y, labelled)
        return np.mean(z0[~labelled].argmax(axis=1) == y[~labelled])

    chosen, default = accuracy(lap), accuracy(laptao_graph(X, 15.0)[1])
    print(f"digits, 20 labels: perplexity {perplexity} (scores {scores}), label propagation on the unlabelled "
          f"points {chosen:.3f} vs {default:.3f} at perplexity 15")
    assert scores[perplexity] < scores[15.0]
    assert chosen >= default + 0.03  # measured 0.916 vs 0.865


def test_estimators_tune_the_perplexity_by_default_and_keep_an_explicit_one():
    X, _, partial = moons()
    auto = LapTAOClassifier(labelled_fraction=1.0, **FAST).fit(X, partial)
    assert auto.perplexity is None and set(auto.perplexity_scores_) == set(PERPLEXITY_GRID)
    assert auto.perplexity_ == min(auto.perplexity_scores_, key=auto.perplexity_scores_.get)
    fixed = LapTAOClassifier(perplexity=7.0, labelled_fraction=1.0, **FAST).fit(X, partial)
    assert fixed.perplexity_ == 7.0 and fixed.perplexity_scores_ == {}
    learned, arrays = auto._learned_state()
    copy = LapTAOClassifier()
    copy._restore_state(learned, arrays)
    assert copy.perplexity_scores_ == auto.perplexity_scores_ and copy.perplexity_ == auto.perplexity_
    target = np.where(partial >= 0, np.sin(3 * X[:, 0]), np.nan)
    reg = LapTAORegressor(labelled_fraction=1.0, **FAST).fit(X, target)
    assert reg.perplexity_ == min(reg.perplexity_scores_, key=reg.perplexity_scores_.get)
