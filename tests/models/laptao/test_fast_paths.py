"""LapTAO's fast paths against the exact ones they replace, on small N.

- The tree step guards every TAO pass from the start (``guard="node"``): when every unguarded pass
  would be rejected (what LapTAO's warm-started tree steps measured), it gives the tree TAO's
  default guard gives, without the passes thrown away.
- The leave-one-out score's unit solves stop at a looser residual, with single-precision products:
  the score equals the exact (LU) one, since the error of ``a_ii`` is quadratic in the residual.
- Conjugate gradients with single-precision products still meet the double-precision tolerance.
"""

import itertools

import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import make_moons

import models.tao.loop as tao_loop
from models.laptao import estimators as laptao_estimators
from models.laptao.estimators import LapTAOClassifier
from models.laptao.graph import laptao_graph, leave_one_out_error
from models.laptao.label_step import conjugate_gradients, label_matrix, partial_labels
from models.tao.estimators import TAORegressor
from models.tao.loop import one_pass


def _regression_data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    Y = np.stack([np.sin(X[:, 0]) + 0.3 * X[:, 1], (X[:, 2] > 0).astype(float)], axis=1)
    return X, Y + 0.1 * rng.normal(size=Y.shape)


def test_guarding_every_pass_gives_the_default_guards_tree_when_every_plain_pass_is_rejected(monkeypatch):
    """The default guard's plain pass is forced to raise the objective (its leaves are spoiled), so
    every iteration is redone guarded from the saved tree: the trees must then equal those of
    guard="node", which runs only the guarded passes."""
    X, Y = _regression_data()
    node = TAORegressor(depth=3, max_iter=6, guard="node", random_state=0).fit(X, Y)

    def spoiled_plain_pass(tree, X, Y, sw, cfg, **kw):
        out = one_pass(tree, X, Y, sw, cfg, **kw)
        if cfg.guard == "off":  # the plain attempt: make E rise, so the guard redoes it
            tree.value[:] += 1e3
        return out

    monkeypatch.setattr(tao_loop, "one_pass", spoiled_plain_pass)
    default = TAORegressor(depth=3, max_iter=6, guard="objective", random_state=0).fit(X, Y)
    np.testing.assert_array_equal(node.tao_tree_.left, default.tao_tree_.left)
    np.testing.assert_array_equal(node.tao_tree_.weight, default.tao_tree_.weight)
    np.testing.assert_array_equal(node.tao_tree_.bias, default.tao_tree_.bias)
    np.testing.assert_array_equal(node.tao_tree_.value, default.tao_tree_.value)
    assert [h["objective"] for h in node.history_] == [h["objective"] for h in default.history_]


def test_guarding_every_pass_never_increases_the_objective():
    X, Y = _regression_data(seed=1)
    objectives = [h["objective"] for h in TAORegressor(depth=4, max_iter=8, guard="node").fit(X, Y).history_]
    assert all(b <= a * (1 + 1e-12) for a, b in itertools.pairwise(objectives))


def test_laptao_tree_steps_use_the_guarded_passes_and_keep_the_lagrangian_monotone():
    assert laptao_estimators.TREE_GUARD == "node"
    X, y = make_moons(300, noise=0.1, random_state=0)
    partial = np.full(300, -1)
    partial[::10] = y[::10]
    model = LapTAOClassifier(depth=3, perplexity=5.0, n_mu=5, tao_iter=5, labelled_fraction=1.0).fit(X, partial)
    for rec in model.history_:
        tol = 1e-9 * max(1.0, abs(rec["lagrangian_start"]))
        assert rec["lagrangian"] <= rec["lagrangian_label"] + tol


@pytest.mark.parametrize("n_labelled", [6, 60, 400])
def test_leave_one_out_fast_unit_solves_equal_the_exact_score(n_labelled):
    X, y = make_moons(400, noise=0.1, random_state=2)
    rng = np.random.default_rng(2)
    keep = np.concatenate([rng.choice(np.flatnonzero(y == c), n_labelled // 2, replace=False) for c in (0, 1)])
    partial = np.full(400, -1)
    partial[keep] = y[keep]
    Y, labelled, _ = partial_labels(partial)
    _, lap = laptao_graph(X, 5.0)
    rows = np.flatnonzero(labelled)
    exact = leave_one_out_error(lap, Y, labelled, 0.1, rows, method="lu")
    tight = leave_one_out_error(lap, Y, labelled, 0.1, rows, method="cg", unit_rtol=1e-8)  # the old path
    fast = leave_one_out_error(lap, Y, labelled, 0.1, rows, method="cg")
    assert tight == pytest.approx(exact, rel=1e-5)  # the old path: CG to 1e-8 on z as well
    assert fast == pytest.approx(exact, rel=1e-5)


@pytest.mark.parametrize("fraction", [1.0, 0.05])
def test_single_precision_products_meet_the_double_precision_tolerance(fraction):
    X, _ = make_moons(500, noise=0.1, random_state=3)
    labelled = np.random.default_rng(3).random(500) < fraction
    labelled[:2] = True
    _, lap = laptao_graph(X, 10.0)
    A = label_matrix(lap, labelled, 0.1)
    A = (A + 1e-3 * sparse.identity(500)).tocsr()  # μ > 0: positive definite
    B = np.random.default_rng(4).normal(size=(500, 7))
    for rtol in (1e-5, 1e-10):  # 1e-10 is below single precision: the double-precision finish does it
        Xs, info = conjugate_gradients(A, B, rtol=rtol, diagonal=A.diagonal(), single_products=True)
        Xd, _ = conjugate_gradients(A, B, rtol=rtol, diagonal=A.diagonal())
        true = np.linalg.norm(B - A @ Xs, axis=0) / np.linalg.norm(B, axis=0)
        assert info.converged and np.all(true <= rtol)
        np.testing.assert_allclose(Xs, Xd, rtol=0, atol=50 * rtol * np.abs(Xd).max() / A.diagonal().min())
