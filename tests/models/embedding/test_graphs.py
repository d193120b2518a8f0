"""Affinity graphs: entropic affinities, their symmetrised and joint forms, the graph Laplacian.

Covered: rows that sum to 1 with the requested perplexity and exactly k stored neighbours, on an
iris subsample (iris has duplicate points) for two perplexities and two neighbour counts; the
argument checks; duplicates; permutation and translation of the points; t-SNE's joint P; the
Laplacian's quadratic-form identity, null vector and positive semi-definiteness.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris

from models.graphs import entropic_affinities, joint_probabilities, laplacian, symmetrize
from models.ground.errors import TreevizError


@pytest.fixture(scope="module")
def iris50() -> np.ndarray:
    X = load_iris().data
    return X[np.random.default_rng(0).choice(X.shape[0], 50, replace=False)]


def row_perplexity(P: sp.csr_matrix) -> np.ndarray:
    A = P.toarray()
    logs = np.log(np.where(A > 0, A, 1.0))
    return np.exp(-(A * logs).sum(axis=1))


@pytest.mark.parametrize("perplexity", [5, 10])
@pytest.mark.parametrize("which_k", ["3K", "N-1"])
def test_rows_are_distributions_with_the_requested_perplexity(iris50, perplexity, which_k):
    n = iris50.shape[0]
    k = 3 * perplexity if which_k == "3K" else n - 1
    P, beta = entropic_affinities(iris50, perplexity, k)
    assert sp.isspmatrix_csr(P) and P.dtype == np.float64 and P.shape == (n, n)
    A = P.toarray()
    assert np.abs(A.sum(axis=1) - 1).max() < 1e-12
    assert np.abs(row_perplexity(P) - perplexity).max() < 1e-6
    assert A.min() >= 0 and np.all(np.diag(A) == 0)
    assert np.all(np.diff(P.indptr) == k)  # exactly k stored neighbours per row
    if which_k == "3K":  # no weight underflows when k = 3K
        assert np.all((A > 0).sum(axis=1) == k)
    assert beta.shape == (n,) and np.all(np.isfinite(beta)) and np.all(beta > 0)


def test_default_neighbour_count_is_three_times_the_perplexity(iris50):
    P, _ = entropic_affinities(iris50, 5)
    assert np.all(np.diff(P.indptr) == 15)
    P, _ = entropic_affinities(iris50[:20], 10)  # 3K = 30 > N − 1 = 19
    assert np.all(np.diff(P.indptr) == 19)


@pytest.mark.parametrize(
    ("perplexity", "k"),
    [(5, 5), (5, 4), (10, 10), (0.5, None), (5, 50), (5, 2.5)],
)
def test_bad_arguments_raise_a_sentence(iris50, perplexity, k):
    with pytest.raises(ValueError, match=r"perplexity|neighbours") as info:
        entropic_affinities(iris50, perplexity, k)
    assert isinstance(info.value, TreevizError) and str(info.value).endswith(".")


def test_too_few_points_raise(iris50):
    with pytest.raises(ValueError, match="more points"):
        entropic_affinities(iris50[:6], 5)
    with pytest.raises(ValueError, match="finite"):
        entropic_affinities(np.array([[0.0, np.nan]] * 10), 2)


def test_duplicate_points_give_no_nan():
    X = load_iris().data  # has duplicated rows
    assert len(np.unique(X, axis=0)) < len(X)
    P, beta = entropic_affinities(X, 5)
    assert np.all(np.isfinite(P.data)) and not np.isnan(beta).any()
    assert np.abs(np.asarray(P.sum(axis=1)).ravel() - 1).max() < 1e-12
    assert np.abs(row_perplexity(P) - 5).max() < 1e-6

    # Every point 8 times: 7 exact duplicates ≥ K, so perplexity 5 is out of reach; the rows are the
    # β → ∞ limit (uniform over the duplicates), without NaN.
    Xd = np.repeat(X[:10], 8, axis=0)
    P, beta = entropic_affinities(Xd, 5)
    assert np.all(np.isfinite(P.data)) and np.all(np.isinf(beta))
    assert np.abs(np.asarray(P.sum(axis=1)).ravel() - 1).max() < 1e-12
    assert np.allclose(row_perplexity(P), 7)


def test_permutation_and_translation_permute_p(iris50):
    rng = np.random.default_rng(1)
    perm = rng.permutation(iris50.shape[0])
    # k = N − 1: no neighbour-set ties to break, so P is exactly equivariant.
    P, _ = entropic_affinities(iris50, 5, 49)
    Pp, _ = entropic_affinities(iris50[perm], 5, 49)
    assert np.abs(Pp.toarray() - P.toarray()[np.ix_(perm, perm)]).max() < 1e-12
    # k = 3K with ties broken by a small jitter (iris's one-decimal values tie at the kth neighbour).
    Xj = iris50 + 1e-6 * rng.standard_normal(iris50.shape)
    P, _ = entropic_affinities(Xj, 5)
    Pp, _ = entropic_affinities(Xj[perm], 5)
    assert np.abs(Pp.toarray() - P.toarray()[np.ix_(perm, perm)]).max() < 1e-12
    Pt, _ = entropic_affinities(Xj + np.array([3.0, -1.0, 10.0, 0.5]), 5)
    assert np.abs(Pt.toarray() - P.toarray()).max() < 1e-9


def test_joint_probabilities_are_symmetric_and_sum_to_one(iris50):
    P, _ = entropic_affinities(iris50, 10)
    J = joint_probabilities(P)
    assert sp.issparse(J)
    A = J.toarray()
    assert np.abs(A - A.T).max() == 0
    assert abs(A.sum() - 1) < 1e-12
    assert np.all(np.diag(A) == 0)
    assert np.allclose(joint_probabilities(P.toarray()), A)
    S = symmetrize(P)
    assert sp.issparse(S) and np.allclose(S.toarray(), (P.toarray() + P.toarray().T) / 2)
    assert np.allclose(symmetrize(P.toarray()), S.toarray())


@pytest.mark.parametrize("dense", [False, True])
def test_laplacian_identity_null_vector_and_psd(iris50, dense):
    P, _ = entropic_affinities(iris50, 5)
    W = symmetrize(P)
    W = W.toarray() if dense else W
    L = laplacian(W)
    assert sp.issparse(L) != dense
    Wd = W if dense else W.toarray()
    Ld = L if dense else L.toarray()
    t = np.random.default_rng(2).standard_normal(Wd.shape[0])
    lhs = np.sum(Wd * (t[:, None] - t[None, :]) ** 2)
    assert abs(lhs / (t @ Ld @ t) - 2) < 1e-12
    assert np.abs(Ld @ np.ones(Wd.shape[0])).max() < 1e-14
    assert np.linalg.eigvalsh(Ld).min() >= -1e-10


def test_laplacian_refuses_asymmetric_or_negative_weights():
    W = np.array([[0.0, 1.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="symmetric"):
        laplacian(W)
    with pytest.raises(ValueError, match="non-negative"):
        laplacian(sp.csr_matrix(np.array([[0.0, -1.0], [-1.0, 0.0]])))
    with pytest.raises(ValueError, match="square"):
        laplacian(np.ones((2, 3)))
    # A self-loop does not change D − W.
    assert np.allclose(laplacian(np.array([[5.0, 1.0], [1.0, 0.0]])), [[1.0, -1.0], [-1.0, 1.0]])
