"""DGT recovers an oblique tree that greedy axis-aligned CART cannot (the paper's motivation)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from models.dgt.estimators import DGTClassifier
from models.dgt.synthetic import oblique_tree_data


@pytest.fixture(scope="module")
def problem():
    """x ~ N(0, I_6) labelled by a random oblique tree of height 3 with 4 classes; 3200 / 800 / 2000."""
    X, y = oblique_tree_data(6000, d=6, depth=3, n_classes=4, seed=0)
    return (X[:3200], y[:3200]), (X[3200:4000], y[3200:4000]), (X[4000:], y[4000:])


def test_cart_cannot_recover_the_oblique_tree(problem):
    (Xtr, ytr), _, (Xte, yte) = problem
    scores = [DecisionTreeClassifier(max_depth=d, random_state=0).fit(Xtr, ytr).score(Xte, yte) for d in (3, 4, 6)]
    assert max(scores) < 0.80


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("seed", [0, 1])
def test_dgt_of_height_four_recovers_it(problem, seed):
    """The over-complete tree (h = 4, L = 1, momentum 0.3, 200 epochs) reaches ≥ 90 % held-out
    accuracy on each seed (an independent re-implementation saw 94.7 to 98.75 %)."""
    (Xtr, ytr), val, (Xte, yte) = problem
    model = DGTClassifier(depth=4, n_layers=1, l1_penalty=0.0, momentum=0.3, max_epochs=200, min_steps=0,
                          random_state=seed).fit(Xtr, ytr, eval_set=val)
    accuracy = model.score(Xte, yte)
    assert accuracy >= 0.90, accuracy
    # the tree routes with oblique splits: every decision node uses all six features
    assert np.count_nonzero(model.split_weight_, axis=1).min() == 6
