"""LapTAO beyond a few thousand points: one neighbour search serves every candidate graph, the
sparse paths (CG label steps, CG leave-one-out) agree with the exact ones (eigendecomposition, LU)
on small N, and the default path above the exact paths' size never forms an N × N array."""

import tracemalloc

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_moons

from models.graphs import entropic_affinities, nearest_neighbors
from models.ground.errors import TreevizError
from models.laptao import graph as laptao_graph_module
from models.laptao import label_step as label_step_module
from models.laptao.estimators import LapTAOClassifier
from models.laptao.graph import laptao_graph, leave_one_out_error, select_perplexity
from models.laptao.label_step import CGSolver, label_propagation, label_step, make_solver, partial_labels


def moons(n, n_labelled, seed=0):
    X, y = make_moons(n, noise=0.1, random_state=seed)
    rng = np.random.default_rng(seed)
    pick = np.concatenate([rng.choice(np.flatnonzero(y == c), n_labelled // 2, replace=False) for c in (0, 1)])
    partial = np.full(n, -1)
    partial[pick] = y[pick]
    return X, y, partial


def test_nearest_neighbours_are_nearest_first_with_exact_squared_distances():
    X = np.random.default_rng(0).normal(size=(200, 4))
    idx, d2 = nearest_neighbors(X, 12)
    full = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)  # the reference may be dense: N is tiny
    np.fill_diagonal(full, np.inf)
    np.testing.assert_array_equal(idx, np.argsort(full, axis=1)[:, :12])
    np.testing.assert_allclose(d2, np.take_along_axis(full, idx, axis=1), rtol=1e-14, atol=1e-14)
    assert np.all(np.diff(d2, axis=1) >= 0)
    with pytest.raises(TreevizError, match="neighbours"):
        nearest_neighbors(X, 200)


@pytest.mark.parametrize("perplexity, k", [(3.0, None), (5.0, None), (5.0, 11), (9.0, 27)])
def test_one_neighbour_search_gives_the_affinities_of_a_search_per_graph(perplexity, k):
    X = np.random.default_rng(1).normal(size=(300, 5))
    shared = nearest_neighbors(X, 30)
    P, beta = entropic_affinities(X, perplexity, k)
    Q, beta_q = entropic_affinities(X, perplexity, k, neighbors=shared)
    np.testing.assert_array_equal(P.indices, Q.indices)
    np.testing.assert_array_equal(P.indptr, Q.indptr)
    np.testing.assert_allclose(Q.data, P.data, rtol=0, atol=1e-13)
    np.testing.assert_allclose(beta_q, beta, rtol=1e-12)
    with pytest.raises(TreevizError, match="at least"):
        entropic_affinities(X, 15.0, neighbors=shared)  # k = 45 > the 30 columns given


def test_select_perplexity_builds_each_candidate_from_the_shared_search():
    X, _, partial = moons(240, 20)
    Y, labelled, _ = partial_labels(partial)
    groups = np.argmax(Y, axis=1)
    perplexity, lap, scores = select_perplexity(X, Y, labelled, 0.1, groups=groups)
    _, reference = laptao_graph(X, perplexity)  # a search of its own
    assert abs(lap - reference).max() < 1e-13
    for p, score in scores.items():
        _, own = laptao_graph(X, p)
        rows = np.flatnonzero(labelled)
        assert score == pytest.approx(leave_one_out_error(own, Y, labelled, 0.1, rows), rel=1e-8)


@pytest.mark.parametrize("n_labelled", [6, 60, 400])
def test_leave_one_out_by_conjugate_gradients_equals_the_exact_lu(n_labelled):
    X, _, partial = moons(400, n_labelled, seed=2)
    Y, labelled, _ = partial_labels(partial)
    _, lap = laptao_graph(X, 5.0)
    rows = np.flatnonzero(labelled)
    exact = leave_one_out_error(lap, Y, labelled, 0.1, rows, method="lu")
    sparse_cg = leave_one_out_error(lap, Y, labelled, 0.1, rows, method="cg")
    assert sparse_cg == pytest.approx(exact, rel=1e-5)  # CG to a relative residual of 1e-8
    assert leave_one_out_error(lap, Y, labelled, 0.1, rows) == exact  # small N: "auto" is the exact LU
    with pytest.raises(TreevizError, match="'auto', 'lu', 'cg' or 'local'"):
        leave_one_out_error(lap, Y, labelled, 0.1, rows, method="eigen")


def test_auto_solver_is_exact_for_small_n_and_sparse_cg_above():
    X = np.random.default_rng(3).normal(size=(label_step_module.EIGEN_MAX_POINTS + 1, 3))
    _, lap = laptao_graph(X, 5.0)
    labelled = np.zeros(X.shape[0], dtype=bool)
    labelled[::10] = True
    assert isinstance(make_solver(lap, labelled, 0.1), CGSolver)
    _, small = laptao_graph(X[:500], 5.0)
    assert make_solver(small, labelled[:500], 0.1).method == "eigen"


@pytest.mark.parametrize("n_labelled", [10, 300])
def test_the_sparse_cg_fit_agrees_with_the_exact_eigen_fit_on_small_n(n_labelled):
    X, _, partial = moons(300, n_labelled, seed=4)
    params = dict(perplexity=5.0, depth=3, n_mu=4, tao_iter=3, random_state=0, labelled_fraction=1.0)
    exact = LapTAOClassifier(solver="eigen", **params).fit(X, partial)
    sparse_cg = LapTAOClassifier(solver="cg", **params).fit(X, partial)
    # the start is a linear solve: CG stops at a relative residual of 1e-6, and with few labels
    # J + γ Lap is ill-conditioned (its error is then up to about 1e-4 on scores in [0, 1])
    np.testing.assert_allclose(sparse_cg.label_propagation_, exact.label_propagation_, atol=1e-3)
    assert sparse_cg.objective_ == pytest.approx(exact.objective_, rel=1e-3)
    assert np.mean(sparse_cg.predict(X) == exact.predict(X)) >= 0.99


def _default_path_peak(n):
    """Traced peak memory of the default path of everything but the tree on n points: the perplexity
    searched by leave-one-out, the "auto" solver, the start and one label step."""
    X, y = make_classification(n, n_features=8, n_informative=5, n_classes=3, random_state=0)
    y = np.where(np.random.default_rng(0).random(y.size) < 0.2, y, -1)
    Y, labelled, _ = partial_labels(y)
    tracemalloc.start()
    try:
        _, lap, scores = select_perplexity(X, Y, labelled, 0.1, groups=np.argmax(Y, axis=1))
        solver = make_solver(lap, labelled, 0.1)
        z0 = label_propagation(solver, Y, labelled)
        z = label_step(solver, Y, labelled, 0.9 * z0, np.zeros_like(z0), 1e-3, x0=z0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(scores) == 5 and np.all(np.isfinite(z))
    return peak


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_default_graph_and_label_steps_above_the_exact_size_form_no_n_by_n_array(monkeypatch):
    """Above the exact paths' size the dense and direct routes are never taken, and memory grows
    linearly with N (about 11 kB a point with the 90 neighbours of the largest candidate), not as N²."""

    def refuse(*args, **kwargs):
        raise AssertionError("a dense or direct solver was used on the default path")

    monkeypatch.setattr(label_step_module.np.linalg, "eigh", refuse)
    monkeypatch.setattr(label_step_module, "splu", refuse)
    assert laptao_graph_module.LU_MAX_POINTS < 1500 and label_step_module.EIGEN_MAX_POINTS < 1500
    nearest_neighbors(np.random.default_rng(0).normal(size=(50, 3)), 3)  # first-call set-up, not measured
    small, large = _default_path_peak(1500), _default_path_peak(3000)
    assert large < 2.3 * small, f"{small / 1e6:.1f} MB at 1 500 points, {large / 1e6:.1f} MB at 3 000"
    assert large < 3000 * 3000 * 8 / 2
