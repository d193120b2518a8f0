"""The approximate repulsion path (``path="fft"``): exact near pairs plus a far field interpolated on
a lattice and convolved by FFT (:mod:`models.embedding.interpolation`).

Covered: the Lagrange basis; the lattice machinery reproducing polynomial kernels exactly; the
t-SNE value and gradient against the exact chunked path on spread-out random embeddings (400
points in ten clusters, 120 and 240 units wide; measured relative errors 1.3e-6 and 2.4e-5 for
the value, 1.6e-3 and 1.5e-3 for the gradient, asserted below 1e-4 and 1e-2; for the normaliser
Σ Kt alone 7e-6 and 1.4e-4, asserted below 5e-4, and 1.6e-3 and 1.5e-3 for its gradient); the gradient being
the exact derivative of the approximate value (central differences); the elastic embedding's path
equal to the exact one (its kernel is negligible beyond the cutoff); determinism and invariance
to shifts by whole boxes; the exact fallback on dense embeddings; the automatic choice of path; a
spectral-direction run.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from models.embedding.interpolation import GAUSSIAN, STUDENT_T, GridKernel, PairSum, RadialKernel, lagrange_basis
from models.embedding.objectives import (
    EXACT_MAX_POINTS,
    TSNE,
    ElasticEmbedding,
    SpectralDirection,
)
from models.graphs import entropic_affinities

N = 400


@pytest.fixture(scope="module")
def P():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((N, 5))
    X[: N // 2] += 3.0
    return entropic_affinities(X, 10)[0]


def spread(scale, seed=1):
    """Ten Gaussian clusters over a square of side about 2·scale."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(-scale, scale, (10, 2))
    return centres[rng.integers(0, 10, N)] + rng.standard_normal((N, 2)) * (scale / 5.0)


def rel(a, b):
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def test_lagrange_basis_is_a_partition_of_unity_and_reproduces_polynomials():
    t = torch.linspace(0, 1, 13, dtype=torch.float64)
    for nodes in (2, 3, 5):
        vals, ders = lagrange_basis(t, nodes)
        np.testing.assert_allclose(vals.sum(-1), 1.0, atol=1e-13)
        np.testing.assert_allclose(ders.sum(-1), 0.0, atol=1e-11)
        pts = torch.linspace(0, 1, nodes, dtype=torch.float64)
        poly = pts ** (nodes - 1)  # degree nodes − 1 is reproduced, with its derivative
        np.testing.assert_allclose(vals @ poly, t ** (nodes - 1), atol=1e-12)
        np.testing.assert_allclose(ders @ poly, (nodes - 1) * t ** (nodes - 2), atol=1e-10)


@pytest.mark.parametrize("nodes, power", [(3, 1), (5, 2)])
def test_lattice_sum_is_exact_for_polynomial_kernels(nodes, power):
    # k(u) = u^power is a polynomial of degree 2·power in each coordinate, which nodes ≥ 2·power + 1
    # interpolate exactly: spreading, the FFT convolution and the self-term removal add only rounding
    Z = torch.as_tensor(np.random.default_rng(2).uniform(-7, 5, (60, 2)))
    total, grad, _ = GridKernel(lambda u: u ** power, box=1.5, nodes=nodes)(Z)
    Zr = Z.clone().requires_grad_(True)
    exact = (((Zr[:, None] - Zr[None]) ** 2).sum(-1) ** power).sum()
    exact.backward()
    assert float(total) == pytest.approx(float(exact.detach()), rel=1e-9)
    assert rel(grad, Zr.grad) < 1e-8


@pytest.mark.parametrize("scale", [60.0, 120.0])
def test_tsne_fft_path_is_close_to_the_exact_path(P, scale):
    Z = spread(scale)
    exact = TSNE(P, path="chunked").value_and_grad(Z)
    approx = TSNE(P, path="fft").value_and_grad(Z)
    assert abs(float(approx[0] - exact[0])) < 1e-4 * abs(float(exact[0]))
    assert rel(approx[1], exact[1]) < 1e-2
    # the approximated part alone: the normaliser Σ Kt and its gradient
    S, dS = TSNE(P, path="fft").repulsive_sum(Z)
    S_exact, dS_exact = TSNE(P, path="chunked").repulsive_sum(Z)
    assert abs(float(S / S_exact) - 1.0) < 5e-4
    assert rel(dS, dS_exact) < 1e-2
    # it really went through the near pairs and the lattice, not the exact fallback
    out = PairSum(STUDENT_T, cutoff=8.0, box=8.0, nodes=5)(torch.as_tensor(Z))
    assert out is not None and out.n_near > 0 and out.shape[0] > 0


@pytest.mark.parametrize("kind", ["tsne", "ee"])
def test_fft_gradient_is_the_derivative_of_the_fft_value(P, kind):
    objective = TSNE(P, path="fft") if kind == "tsne" else ElasticEmbedding(P, lam=1.0, path="fft")
    objective = objective.with_penalty(1e-3, spread(80.0, seed=3))
    Z = torch.as_tensor(spread(80.0))
    assert PairSum(objective._radial_kernel, **objective.fft_settings)(Z) is not None  # not the exact fallback
    direction = torch.as_tensor(np.random.default_rng(4).standard_normal(Z.shape))
    h = 1e-6
    numeric = (float(objective.value(Z + h * direction)) - float(objective.value(Z - h * direction))) / (2 * h)
    analytic = float((objective.grad(Z) * direction).sum())
    assert numeric == pytest.approx(analytic, rel=1e-5)


def test_elastic_embedding_fft_path_is_exact_up_to_the_truncation(P):
    Z = spread(20.0)
    exact = ElasticEmbedding(P, lam=100.0, path="chunked").value_and_grad(Z)
    approx = ElasticEmbedding(P, lam=100.0, path="fft").value_and_grad(Z)
    assert float(approx[0]) == pytest.approx(float(exact[0]), rel=1e-12)
    assert rel(approx[1], exact[1]) < 1e-12
    assert not PairSum(GAUSSIAN, cutoff=6.0, box=6.0, nodes=5).far_field


def test_fft_path_is_deterministic_and_the_lattice_is_absolute(P):
    objective = TSNE(P, path="fft")
    Z = torch.as_tensor(spread(60.0))
    v1, g1 = objective.value_and_grad(Z)
    v2, g2 = TSNE(P, path="fft").value_and_grad(Z)
    assert float(v1) == float(v2) and torch.equal(g1, g2)
    # a shift by whole boxes moves every point to the same place in its box: same sums (t-SNE's E
    # is shift-invariant, and so is this approximation of it for such shifts)
    v3, g3 = objective.value_and_grad(Z + 3 * 8.0)
    assert float(v3) == pytest.approx(float(v1), rel=1e-12)
    assert rel(g3, g1) < 1e-10


def test_dense_embeddings_fall_back_to_the_exact_sum(P):
    Z = spread(1.0)  # every pair within the cutoff
    assert PairSum(STUDENT_T, cutoff=8.0, box=8.0, nodes=5)(torch.as_tensor(Z)) is None
    exact = TSNE(P, path="chunked").value_and_grad(Z)
    approx = TSNE(P, path="fft").value_and_grad(Z)
    assert float(approx[0]) == float(exact[0]) and torch.equal(approx[1], exact[1])


def test_density_guard_sees_a_dense_cluster_behind_far_outliers():
    # a tight ball and three points 10⁴ away: the bounding box is huge and mostly empty, but the
    # ball's pairs would be nearly all N²; the bound counts occupied cells only
    Z = np.random.default_rng(6).standard_normal((N, 2))
    Z[:3] = [[1e4, 0.0], [0.0, 1e4], [-1e4, -1e4]]
    pair_sum = PairSum(STUDENT_T, cutoff=8.0, box=8.0, nodes=5)
    assert pair_sum.too_dense(torch.as_tensor(Z))
    assert not pair_sum.too_dense(torch.as_tensor(spread(120.0)))
    Z[5, 0] = np.nan
    assert pair_sum(torch.as_tensor(Z)) is None


def test_far_field_is_smooth_and_equals_the_kernel_beyond_the_cutoff():
    pair_sum = PairSum(STUDENT_T, cutoff=4.0, box=4.0, nodes=5)
    u = torch.linspace(0, 40, 401, dtype=torch.float64)
    far = pair_sum.far(u)
    beyond = u >= 16.0
    np.testing.assert_allclose(far[beyond], STUDENT_T.value(u[beyond]), rtol=1e-14)
    # value and first derivative continuous at the cutoff; the near part vanishes there
    uc = torch.tensor([16.0 - 1e-9, 16.0 + 1e-9], dtype=torch.float64)
    assert abs(float(pair_sum.far(uc)[0] - pair_sum.far(uc)[1])) < 1e-10
    assert abs(float(pair_sum.far_first(uc)[0] - pair_sum.far_first(uc)[1])) < 1e-10
    assert float(STUDENT_T.value(uc[0]) - pair_sum.far(uc[0])) == pytest.approx(0.0, abs=1e-12)


def test_auto_path_uses_fft_only_above_the_exact_size_and_for_2d():
    n = EXACT_MAX_POINTS + 1
    ring = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    big = TSNE(ring)
    assert big.path == "fft" and big.exact().path == "chunked"
    assert TSNE(ring[:EXACT_MAX_POINTS, :EXACT_MAX_POINTS]).path == "chunked"
    assert ElasticEmbedding(ring, repulsion="sqdist", X=np.zeros((n, 1))).path == "chunked"
    with pytest.raises(ValueError, match="sqdist"):
        ElasticEmbedding(ring, repulsion="sqdist", X=np.zeros((n, 1)), path="fft")
    with pytest.raises(ValueError, match="fft settings"):
        TSNE(ring, fft_settings={"spacing": 1.0})


def test_fft_path_on_a_3d_embedding(P):
    Z3 = np.random.default_rng(5).standard_normal((N, 3)) * 30
    with pytest.raises(ValueError, match="2-D"):
        TSNE(P, path="fft").value(Z3)
    auto = TSNE(P)
    auto.path, auto.requested_path = "fft", "auto"  # as "auto" resolves it above EXACT_MAX_POINTS
    assert float(auto.value(Z3)) == pytest.approx(float(TSNE(P, path="chunked").value(Z3)), rel=1e-12)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_spectral_direction_descends_on_the_fft_path(P):
    objective = TSNE(P, path="fft")
    start = spread(80.0)
    result = SpectralDirection.for_objective(objective).minimize(objective, start, max_iter=25, tol=0.0)
    assert result.n_iter == 25 and result.reason == "max_iter"
    assert all(b < a for a, b in zip(result.values, result.values[1:]))
    exact = TSNE(P, path="chunked")
    assert float(exact.value(result.Z)) < float(exact.value(start)) - 0.1


def test_pair_sum_checks_its_settings():
    with pytest.raises(ValueError, match="cutoff"):
        PairSum(STUDENT_T, cutoff=0.0, box=1.0, nodes=5)
    with pytest.raises(ValueError, match="nodes"):
        PairSum(RadialKernel("k", STUDENT_T.value, STUDENT_T.first, STUDENT_T.second), cutoff=1.0, box=1.0, nodes=1)
