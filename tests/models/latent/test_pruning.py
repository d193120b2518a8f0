"""The latent-tree pruning layer: heap bookkeeping, path rewards, the pruning QP and its gradients.

The sections T1-T12 are this file's own labels (``docs/latent_trees.md`` lists what each checks).
All numerics in float64 with fixed seeds; the generic QP oracle is cvxpy + OSQP with tight
tolerances (T4, T5).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from models.ground.errors import TreevizError
from models.latent import heap
from models.latent.pruning import (
    backend,
    is_tree_consistent,
    path_rewards,
    pav,
    prune,
    prune_fast,
    readout,
    solve_pav,
)
from models.latent.reference import path_rewards_reference, pruning_objective, readout_reference

cp = pytest.importorskip("cvxpy")

F64 = torch.float64


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def t64(x) -> torch.Tensor:
    return torch.as_tensor(np.asarray(x, dtype=np.float64))


def random_scores(rng: np.random.Generator, n: int, depth: int, scale: float = 1.0) -> torch.Tensor:
    return t64(rng.normal(size=(n, 2**depth - 1)) * scale)


def consistent_q(rng: np.random.Generator, n: int, depth: int) -> np.ndarray:
    """Tree-consistent path rewards from random split scores (some scaled to reach the clip)."""
    return path_rewards(random_scores(rng, n, depth, scale=rng.choice([0.3, 1.0, 2.0]))).numpy()


def brute_force_rewards(s: np.ndarray) -> np.ndarray:
    """q_t = min(1, min over A_R of s, min over A_L of -s), sample by sample: the definition of the
    path rewards (right ancestors A_R count +s, left ancestors A_L count -s)."""
    n, m = s.shape
    total = 2 * m + 1
    q = np.empty((n, total))
    for t in range(total):
        vals = [np.ones(n)] + [s[:, u] for u in heap.right_ancestors(t)] + [-s[:, u] for u in heap.left_ancestors(t)]
        q[:, t] = np.min(np.stack(vals), axis=0)
    return q


def hard_path(s_row: np.ndarray, depth: int) -> list[int]:
    """Nodes visited by one sample: left iff s < 0 (the paper's rule)."""
    t, path = 0, [0]
    for _ in range(depth):
        t = 2 * t + 1 if s_row[t] < 0 else 2 * t + 2
        path.append(t)
    return path


_QP_CACHE: dict = {}


def qp_oracle(Q: np.ndarray, lam: float, eta: np.ndarray | None = None, shift: float = 0.5):
    """Solve the pruning QP directly with cvxpy + OSQP (tight tolerances): returns (a, z).

    ``(lam/2) ||a - eta||^2 + 1/2 sum_i ||z_i - q_i - shift||^2`` subject to ``a_child <= a_parent``,
    ``0 <= z_it <= a_t``, ``z <= 1``, ``0 <= a <= 1`` ([ICML] eq. 3 with ``eta = 0``, ``shift = 1/2``;
    [PRE] with ``lam = 1``, ``shift = 0``).
    """
    n, total = Q.shape
    key = (n, total)
    if key not in _QP_CACHE:
        par = heap.parents(heap.depth_from_n_nodes(total))
        a, z = cp.Variable(total), cp.Variable((n, total))
        Qp, sl, se = cp.Parameter((n, total)), cp.Parameter(nonneg=True), cp.Parameter(total)
        # (lam/2)||a - eta||^2 written as 1/2 ||sqrt(lam) a - sqrt(lam) eta||^2 so the problem is DPP
        obj = 0.5 * cp.sum_squares(sl * a - se) + 0.5 * cp.sum_squares(z - Qp)
        cons = [z <= np.ones((n, 1)) @ cp.reshape(a, (1, total), order="C"), z >= 0, z <= 1, a >= 0, a <= 1]
        if total > 1:
            cons.append(a[1:] <= a[par[1:]])
        _QP_CACHE[key] = (cp.Problem(cp.Minimize(obj), cons), a, z, Qp, sl, se)
    prob, a, z, Qp, sl, se = _QP_CACHE[key]
    Qp.value = Q + shift
    sl.value = np.sqrt(lam)
    se.value = np.sqrt(lam) * (np.zeros(total) if eta is None else eta)
    # "polishing" is the name OSQP >= 1.0 gives to "polish"
    prob.solve(solver=cp.OSQP, eps_abs=1e-12, eps_rel=1e-12, polishing=True, max_iter=200000)
    assert prob.status == "optimal"
    return a.value, z.value


def jacobian_a(fn, x: torch.Tensor) -> torch.Tensor:
    return torch.autograd.functional.jacobian(fn, x)


# --------------------------------------------------------------------------------------------
# T1 heap bookkeeping
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", range(7))
def test_T1_heap_bookkeeping(depth):
    total, splits = heap.n_nodes(depth), heap.n_splits(depth)
    assert total == 2 ** (depth + 1) - 1 and splits == 2**depth - 1 and heap.n_leaves(depth) == 2**depth
    assert heap.depth_from_n_nodes(total) == depth and heap.depth_from_n_splits(splits) == depth
    left, right = heap.children_arrays(depth)
    par = heap.parents(depth)
    depths = heap.node_depths(depth)
    assert par[0] == -1 and heap.parent(0) == -1
    np.testing.assert_array_equal(heap.leaf_nodes(depth), np.arange(splits, total))
    np.testing.assert_array_equal(heap.split_nodes(depth), np.arange(splits))
    np.testing.assert_array_equal(heap.node_depth(np.arange(total)), depths)
    for t in range(total):
        # brute force: walk up to the root
        path, u = [t], t
        while u > 0:
            u = (u - 1) // 2
            path.append(u)
        path = path[::-1]
        assert heap.path_to(t) == path
        assert heap.node_depth(t) == len(path) - 1 == depths[t]
        assert list(heap.level(depths[t])).count(t) == 1
        a_left = [p for p, c in itertools.pairwise(path) if c == 2 * p + 1]
        a_right = [p for p, c in itertools.pairwise(path) if c == 2 * p + 2]
        assert heap.left_ancestors(t) == a_left and heap.right_ancestors(t) == a_right
        assert sorted(a_left + a_right) == path[:-1]
        if t > 0:
            assert heap.parent(t) == par[t] == path[-2]
            assert (t % 2 == 1) == (left[par[t]] == t) and (t % 2 == 0) == (right[par[t]] == t)
        leaf = t >= splits
        assert heap.is_leaf(t, depth) == leaf
        assert (left[t] == -1) == leaf and (right[t] == -1) == leaf
        if not leaf:
            assert left[t] == heap.left_child(t) == 2 * t + 1 and right[t] == heap.right_child(t) == 2 * t + 2
            assert par[left[t]] == t and par[right[t]] == t
    with pytest.raises(ValueError):
        heap.depth_from_n_nodes(total + 1)
    with pytest.raises(ValueError):
        heap.n_nodes(-1)


# --------------------------------------------------------------------------------------------
# T2 path rewards
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [0, 1, 2, 3, 5])
def test_T2_rewards_brute_force_hard_path_and_lemma1(depth):
    rng = np.random.default_rng(100 + depth)
    n = 40
    S = random_scores(rng, n, depth, scale=1.5)
    Q = path_rewards(S)
    assert Q.shape == (n, 2 ** (depth + 1) - 1) and Q.dtype == F64
    q = Q.numpy()
    np.testing.assert_array_equal(q, brute_force_rewards(S.numpy()))
    np.testing.assert_array_equal(q, path_rewards_reference(S).numpy())
    assert is_tree_consistent(Q)
    assert np.all(q[:, 0] == 1.0)
    if depth == 0:
        return
    par = heap.parents(depth)
    assert np.all(q[:, 1:] <= q[:, par[1:]])
    leaves = heap.leaf_nodes(depth)
    assert np.all((q[:, leaves] > 0).sum(axis=1) == 1)  # exactly one leaf reached
    for i in range(n):
        on_path = np.zeros(q.shape[1], dtype=bool)
        on_path[hard_path(S[i].numpy(), depth)] = True
        # Lemma 1: the traversal ILP's solution z = 1[q > 0] is the hard root-to-leaf path
        np.testing.assert_array_equal(q[i] > 0, on_path)


def test_T2_rewards_gradient_equals_minimum_autograd():
    """The custom Danskin backward equals autograd through torch.minimum (no ties)."""
    rng = np.random.default_rng(7)
    for depth, n in [(1, 5), (3, 17), (5, 33)]:
        S = random_scores(rng, n, depth).requires_grad_()
        G = t64(rng.normal(size=(n, 2 ** (depth + 1) - 1)))
        g1 = torch.autograd.grad(path_rewards(S), S, G)[0]
        g2 = torch.autograd.grad(path_rewards_reference(S), S, G)[0]
        torch.testing.assert_close(g1, g2, rtol=0, atol=1e-13)
    S = random_scores(rng, 6, 3).requires_grad_()
    assert torch.autograd.gradcheck(path_rewards, (S,), eps=1e-6, atol=1e-5)


def test_T2_rewards_float32_and_row_major_input():
    rng = np.random.default_rng(8)
    S64 = random_scores(rng, 9, 4)
    S32 = S64.float()
    np.testing.assert_allclose(path_rewards(S32).numpy(), path_rewards(S64).numpy(), atol=1e-6)
    assert path_rewards(S32).dtype == torch.float32
    St = S64.t().contiguous().t()  # column-major input
    np.testing.assert_array_equal(path_rewards(St).numpy(), path_rewards(S64).numpy())


# --------------------------------------------------------------------------------------------
# T3 the 1-D group problem ([ICML] Prop. 2, with eta)
# --------------------------------------------------------------------------------------------


def test_T3_group_value_matches_scalar_minimisation_and_stationarity():
    rng = np.random.default_rng(3)
    for trial in range(200):
        size = int(rng.integers(1, 5))
        n = int(rng.integers(1, 15))
        lam = float(10 ** rng.uniform(-2, 2))
        c = rng.uniform(-2, 2, size=(n, size))
        if trial % 3 == 0:
            c = np.round(c * 2) / 2  # ties
        eta = rng.uniform(-3, 3, size) if trial % 2 else np.zeros(size)
        desc = np.sort(c.ravel())[::-1]
        value, k = pav._group_value(desc, lam, size, float(eta.sum()))

        # the group's objective: sum over its nodes of (lam/2)(x - eta_t)^2 + 1/2 sum_i (c_it - x)_+^2
        def g(x, lam=lam, eta=eta, c=c):
            return 0.5 * lam * np.sum((x - eta) ** 2) + 0.5 * np.sum(np.maximum(c - x, 0.0) ** 2)

        lo, hi = min(c.min(), eta.min()) - 1.0, max(c.max(), eta.max()) + 1.0
        ref = minimize_scalar(g, bounds=(lo, hi), method="bounded", options={"xatol": 1e-12, "maxiter": 2000}).x
        # Brent's method locates a flat minimum (small lam, few supporting entries) only to
        # ~sqrt(eps / curvature); ours must be at least as good, and close
        assert g(value) <= g(ref) + 1e-13 and abs(value - ref) < 1e-7
        # stationarity: lam (|G| a - sum eta) = sum (c - a)_+, and the support is the k largest
        assert abs(lam * (size * value - eta.sum()) - np.maximum(c - value, 0).sum()) < 1e-9
        assert k == int(np.sum(desc > value)) or np.isclose(desc[k - 1], value)
        # first-True search == linear scan of k
        P_k = np.concatenate([[0.0], np.cumsum(desc)])
        for kk in range(desc.size + 1):
            a_kk = (lam * eta.sum() + P_k[kk]) / (lam * size + kk)
            nxt = desc[kk] if kk < desc.size else -np.inf
            if a_kk > nxt:
                break
        assert kk == k


def test_T3_fast_solver_per_node_is_linear_scan():
    rng = np.random.default_rng(31)
    for _trial in range(30):
        n = int(rng.integers(1, 40))
        Q = consistent_q(rng, n, 3)
        lam = float(10 ** rng.uniform(-3, 3))
        a = prune_fast(t64(Q), lam).numpy()
        for t in range(Q.shape[1]):
            c = np.sort(Q[:, t] + 0.5)[::-1]
            P_k = np.cumsum(c)
            k = next(k for k in range(1, n + 1) if k == n or P_k[k - 1] / (lam + k) > c[k])
            assert abs(a[t] - np.clip(P_k[k - 1] / (lam + k), 0, 1)) < 1e-12


# --------------------------------------------------------------------------------------------
# T4 / T5 the full QP against a generic solver
# --------------------------------------------------------------------------------------------


def _instances_T4(seed: int = 4):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(320):
        depth = int(rng.integers(1, 4))
        n = int(rng.integers(1, 13))
        lam = float(10 ** rng.uniform(-2, 2))
        total = 2 ** (depth + 1) - 1
        kind = i % 4
        if kind == 0:  # arbitrary q
            Q = rng.uniform(-2, 2, size=(n, total))
        elif kind == 1:  # tree-consistent q
            Q = consistent_q(rng, n, depth)
        elif kind == 2:  # arbitrary q on a coarse grid: heavy ties
            Q = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(n, total))
        else:  # tree-consistent q on a coarse grid
            Q = path_rewards(t64(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0, 1.5], size=(n, 2**depth - 1)))).numpy()
        out.append((Q, lam))
    return out


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_T4_general_and_fast_solver_match_osqp():
    worst_a = worst_z = worst_fast = 0.0
    n_consistent = 0
    for Q, lam in _instances_T4():
        a_ref, z_ref = qp_oracle(Q, lam)
        Qt = t64(Q)
        a = prune(Qt, lam, solver="general")
        z = readout(Qt, a, mode="paper")
        worst_a = max(worst_a, np.abs(a.numpy() - a_ref).max())
        worst_z = max(worst_z, np.abs(z.numpy() - z_ref).max())
        # never worse than the generic solver's point
        obj = pruning_objective(Qt, a, z, lam).item()
        obj_ref = pruning_objective(Qt, t64(a_ref), t64(z_ref), lam).item()
        assert obj <= obj_ref + 1e-8
        if is_tree_consistent(Qt):
            n_consistent += 1
            a_fast = prune(Qt, lam, solver="fast")
            z_fast = readout(Qt, a_fast, mode="paper")
            worst_fast = max(worst_fast, np.abs(a_fast.numpy() - a_ref).max(), np.abs(z_fast.numpy() - z_ref).max())
            assert torch.equal(prune(Qt, lam), a_fast)  # "auto" takes the fast path
    assert n_consistent >= 150
    assert worst_a < 1e-6 and worst_z < 1e-6 and worst_fast < 1e-6, (worst_a, worst_z, worst_fast)


def test_T5_preprint_eta_variant_matches_osqp():
    rng = np.random.default_rng(5)
    worst = 0.0
    for i in range(80):
        depth = int(rng.integers(1, 4))
        n = int(rng.integers(1, 13))
        total = 2 ** (depth + 1) - 1
        Q = rng.uniform(-2, 2, size=(n, total)) if i % 2 else consistent_q(rng, n, depth)
        eta = rng.uniform(-3, 3, size=total)
        if i % 5 == 0:
            eta = rng.choice([0.0, 1.0, -1.0, 100.0, -100.0], size=total)
        a_ref, z_ref = qp_oracle(Q, 1.0, eta=eta, shift=0.0)
        a = prune(t64(Q), 1.0, eta=t64(eta), shift=0.0)
        z = readout(t64(Q), a, mode="paper", shift=0.0)
        worst = max(worst, np.abs(a.numpy() - a_ref).max(), np.abs(z.numpy() - z_ref).max())
        # numpy eta is accepted too
        torch.testing.assert_close(prune(t64(Q), 1.0, eta=eta, shift=0.0), a, rtol=0, atol=0)
    assert worst < 1e-6, worst


# --------------------------------------------------------------------------------------------
# T6 violator order
# --------------------------------------------------------------------------------------------


def test_T6_max_violator_counter_example():
    c = np.array([[1.5, 1.0, 2.0, 1.1, 2.4, 0.1, 1.2]])
    Q = c - 0.5
    expected = np.array([0.875, 0.85, 0.875, 0.55, 0.85, 0.05, 0.6])
    sol = solve_pav(Q, 1.0)
    np.testing.assert_allclose(sol.a, expected, rtol=0, atol=1e-15)
    a = prune(t64(Q), 1.0)  # not tree-consistent: "auto" must use the general solver
    np.testing.assert_allclose(a.numpy(), expected, rtol=0, atol=1e-15)
    z = readout(t64(Q), a, mode="paper")
    assert abs(pruning_objective(t64(Q), a, z, 1.0).item() - 4.19375) < 1e-12
    # the pitfall: merging the first (lowest-index) violator gives a worse feasible point
    wrong = solve_pav(Q, 1.0, violator="first").a
    np.testing.assert_allclose(wrong, [0.875, 0.75, 0.875, 0.75, 0.75, 0.05, 0.6], rtol=0, atol=1e-15)
    z_wrong = readout(t64(Q), t64(wrong), mode="paper")
    assert abs(pruning_objective(t64(Q), t64(wrong), z_wrong, 1.0).item() - 4.25375) < 1e-12
    a_ref, _ = qp_oracle(Q, 1.0)
    np.testing.assert_allclose(a_ref, expected, atol=1e-6)


# --------------------------------------------------------------------------------------------
# T7 invariants
# --------------------------------------------------------------------------------------------


def test_T7_invariants_on_tree_consistent_q():
    rng = np.random.default_rng(77)
    for _trial in range(60):
        depth = int(rng.integers(1, 6))
        n = int(rng.integers(1, 64))
        lam = float(10 ** rng.uniform(-3, 3))
        S = random_scores(rng, n, depth, scale=float(rng.choice([0.3, 1.0, 3.0])))
        Q = path_rewards(S)
        par = heap.parents(depth)
        sol = solve_pav(Q.numpy(), lam)
        assert sol.n_merges == 0
        a = prune(Q, lam)
        np.testing.assert_allclose(a.numpy(), sol.a, rtol=0, atol=1e-12)
        a_np = a.numpy()
        assert np.all((a_np >= 0) & (a_np <= 1))
        assert np.all(a_np[1:] <= a_np[par[1:]])
        np.testing.assert_array_equal(a_np == 0, Q.numpy().max(axis=0) <= -0.5)
        for mode in ("code", "paper"):
            z = readout(Q, a, mode=mode).numpy()
            assert np.all(z >= 0) and np.all(z <= a_np[None, :] + 1e-15)
            assert np.all(z[:, 1:] <= z[:, par[1:]])
        # gradients: fast (autograd) == general (custom backward), through the split scores
        Sg = S.clone().requires_grad_()
        w = t64(rng.normal(size=(n, Q.shape[1])))
        grads = []
        for solver in ("fast", "general"):
            Qg = path_rewards(Sg)
            ag = prune(Qg, lam, solver=solver)
            loss = (readout(Qg, ag) * w).sum() + (ag * w[0]).sum()
            grads.append(torch.autograd.grad(loss, Sg)[0])
        torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=1e-12)


def test_T7_zero_batch_value_edge_cases():
    # every c < 0: k* = 0 in the group value, a = 0 and no gradient
    Q = torch.full((4, 7), -2.0, dtype=F64, requires_grad=True)
    Q.data[:, 0] = -0.9
    for solver in ("fast", "general"):
        a = prune(Q, 1.0, solver=solver)
        assert torch.equal(a, torch.zeros(7, dtype=F64))
        (g,) = torch.autograd.grad(a.sum(), Q)
        assert torch.equal(g, torch.zeros_like(g))
    one = t64([[0.3]])  # depth 0: a single node
    np.testing.assert_allclose(prune(one, 2.0).numpy(), [0.8 / 3.0])
    np.testing.assert_allclose(prune(one, 2.0, solver="general").numpy(), [0.8 / 3.0])


# --------------------------------------------------------------------------------------------
# T8 scaling identities
# --------------------------------------------------------------------------------------------


def test_T8_tiling_permutation_and_lambda_limits():
    rng = np.random.default_rng(88)
    for _trial in range(20):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 10))
        lam = float(10 ** rng.uniform(-1, 2))
        for Q in (consistent_q(rng, n, depth), rng.uniform(-2, 2, size=(n, 2 ** (depth + 1) - 1))):
            k = int(rng.integers(2, 5))
            a = prune(t64(Q), lam / k).numpy()
            np.testing.assert_allclose(prune(t64(np.tile(Q, (k, 1))), lam).numpy(), a, rtol=0, atol=1e-12)
            perm = rng.permutation(n)
            np.testing.assert_allclose(prune(t64(Q[perm]), lam / k).numpy(), a, rtol=0, atol=1e-13)
        Q = t64(consistent_q(rng, n, depth))
        np.testing.assert_allclose(prune(Q, 1e-9).numpy(), np.clip(Q.numpy().max(0) + 0.5, 0, 1), atol=1e-8)
        big = 1e7
        expected = np.maximum(Q.numpy() + 0.5, 0).sum(0) / big
        np.testing.assert_allclose(prune(Q, big).numpy(), expected, rtol=1e-5, atol=1e-300)


def test_T8_whole_set_prunes_only_what_every_batch_prunes():
    """Frozen pruning solves a on the whole set with lam * N / B. Its zero set is exactly the set
    of nodes pruned in every batch of B rows, whatever lam: a_t = 0 iff no row has q_t > -1/2."""
    rng = np.random.default_rng(89)
    strictly_fewer = 0
    for _trial in range(40):
        depth, batch, n_batches = int(rng.integers(2, 5)), int(rng.integers(2, 9)), int(rng.integers(2, 6))
        N = batch * n_batches - int(rng.integers(0, batch - 1))  # the last batch may be short
        lam = float(10 ** rng.uniform(-1, 1))
        Q = path_rewards(random_scores(rng, N, depth, scale=3.0))
        frozen = prune(Q, lam * N / batch).numpy()
        per_batch = np.array([prune(Q[i: i + batch], lam).numpy() for i in range(0, N, batch)])
        np.testing.assert_array_equal(frozen == 0, (per_batch == 0).all(axis=0))
        strictly_fewer += (frozen == 0).sum() < (per_batch == 0).sum(axis=1).min()
    assert strictly_fewer > 10  # the frozen vector usually prunes fewer nodes than any one batch


# --------------------------------------------------------------------------------------------
# T9 ties
# --------------------------------------------------------------------------------------------


def test_T9_tie_breaking_does_not_matter():
    rng = np.random.default_rng(9)
    grid = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    different_order = 0
    for _trial in range(400):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 6))
        Q = rng.choice(grid, size=(n, 2 ** (depth + 1) - 1))
        lam = float(rng.choice([0.5, 1.0, 2.0, 3.0]))
        low, high = solve_pav(Q, lam, ties="low"), solve_pav(Q, lam, ties="high")
        np.testing.assert_allclose(low.a, high.a, rtol=0, atol=1e-12)
        different_order += low.merges != high.merges
    assert different_order > 50  # the tie-breaking rule was exercised, and did not matter


def test_T9_fast_path_with_tied_columns():
    rng = np.random.default_rng(91)
    for _trial in range(100):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 12))
        S = t64(rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(n, 2**depth - 1)))
        Q = path_rewards(S)
        lam = float(rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]))
        np.testing.assert_allclose(prune(Q, lam, solver="fast").numpy(), solve_pav(Q.numpy(), lam).a, atol=1e-12)


# --------------------------------------------------------------------------------------------
# T10 MIP sanity ([ICML] Fig. 9 setting)
# --------------------------------------------------------------------------------------------


def _feasible_binary_a(depth: int) -> np.ndarray:
    total = 2 ** (depth + 1) - 1
    par = heap.parents(depth)
    rows = [a for a in itertools.product([0, 1], repeat=total) if all(a[t] <= a[par[t]] for t in range(1, total))]
    return np.array(rows, dtype=float)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_T10_relaxation_approaches_mip_for_large_lambda():
    """[ICML] Fig. 9 setting: the mean gap between the relaxed (a, z) and the exact mixed-integer
    solution. The property is gap(lam=100) < gap(lam=1); the mean gaps of an independent
    validation run (NumPy + cvxpy, a and z per lam) are also reproduced here, loosely, as a
    regression reference."""
    rng = np.random.default_rng(10)
    A = _feasible_binary_a(2)
    assert A.shape == (26, 7)
    n, problems = 10, 1000
    qs = []
    for _ in range(problems):
        q = rng.uniform(-2, 2, size=(n, 7))  # every node, the root too, then made tree-consistent
        for t in range(1, 7):
            q[:, t] = np.minimum(q[:, t], q[:, (t - 1) // 2])
        qs.append(q)
    reference = {0.1: (0.105, 0.056), 1.0: (0.199, 0.067), 10.0: (0.188, 0.078), 100.0: (0.028, 0.013)}
    gaps = {}
    for lam in reference:
        ga = gz = 0.0
        for q in qs:
            value = A @ (np.maximum(q, 0).sum(0) - lam / 2)  # MIP objective of each feasible a
            a_mip = A[np.argmax(value)]
            z_mip = a_mip[None, :] * (q > 0)
            a_hat = prune(t64(q), lam)
            z_hat = readout(t64(q), a_hat, mode="paper").numpy()
            ga += np.abs(a_mip - a_hat.numpy()).mean()
            gz += np.abs(z_mip - z_hat).mean()
        gaps[lam] = (ga / problems, gz / problems)
    assert gaps[100.0][0] < gaps[1.0][0] and gaps[100.0][1] < gaps[1.0][1], gaps
    for lam, (ref_a, ref_z) in reference.items():
        assert abs(gaps[lam][0] - ref_a) < 0.02 and abs(gaps[lam][1] - ref_z) < 0.02, (lam, gaps[lam])


# --------------------------------------------------------------------------------------------
# T11 gradcheck and finite differences through the split scores
# --------------------------------------------------------------------------------------------


def _gradcheck_cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 13))
        lam = float(10 ** rng.uniform(-1, np.log10(30)))
        yield random_scores(rng, n, depth).requires_grad_(), lam


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("solver", ["fast", "general"])
def test_T11_gradcheck_scores_to_a_and_z(solver):
    for S, lam in _gradcheck_cases(11 if solver == "fast" else 12, 8):
        def to_a(s, lam=lam):
            return prune(path_rewards(s), lam, solver=solver)

        assert torch.autograd.gradcheck(to_a, (S,), eps=1e-6, atol=1e-5)
        for mode in ("code", "paper"):
            def to_z(s, mode=mode, lam=lam):
                q = path_rewards(s)
                return readout(q, prune(q, lam, solver=solver), mode=mode)

            assert torch.autograd.gradcheck(to_z, (S,), eps=1e-6, atol=1e-5)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_T11_gradcheck_eta_and_q_preprint():
    rng = np.random.default_rng(111)
    for _trial in range(10):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 8))
        total = 2 ** (depth + 1) - 1
        Q = t64(rng.uniform(-1.5, 1.5, size=(n, total))).requires_grad_()
        eta = t64(rng.uniform(-1, 2, size=total)).requires_grad_()
        assert torch.autograd.gradcheck(lambda q, e: prune(q, 1.0, eta=e, shift=0.0), (Q, eta), eps=1e-6, atol=1e-5)


def test_T11_central_differences_through_scores():
    """Perturb the split scores, not single q entries, and compare the custom VJP."""
    rng = np.random.default_rng(112)
    for _trial in range(6):
        depth, n = 3, int(rng.integers(3, 12))
        S = random_scores(rng, n, depth)
        lam = float(10 ** rng.uniform(-1, 1.3))
        W = t64(rng.normal(size=(n, 15)))

        def loss(s, lam=lam, W=W):
            q = path_rewards(s)
            return (readout(q, prune(q, lam, solver="general"), mode="paper") * W).sum()

        Sg = S.clone().requires_grad_()
        (g,) = torch.autograd.grad(loss(Sg), Sg)
        h = 1e-6
        for _ in range(10):
            i, j = int(rng.integers(n)), int(rng.integers(7))
            E = torch.zeros_like(S)
            E[i, j] = h
            fd = (loss(S + E) - loss(S - E)).item() / (2 * h)
            assert abs(fd - g[i, j].item()) < 1e-5


# --------------------------------------------------------------------------------------------
# T12 analytic backward
# --------------------------------------------------------------------------------------------


def test_T12_general_backward_equals_fast_autograd():
    rng = np.random.default_rng(12)
    for _trial in range(25):
        depth, n = int(rng.integers(1, 5)), int(rng.integers(1, 30))
        lam = float(10 ** rng.uniform(-2, 2))
        Q = t64(consistent_q(rng, n, depth))
        Jf = jacobian_a(lambda q, lam=lam: prune(q, lam, solver="fast"), Q)
        Jg = jacobian_a(lambda q, lam=lam: prune(q, lam, solver="general"), Q)
        torch.testing.assert_close(Jf, Jg, rtol=0, atol=1e-15)


def test_T12_jacobian_structure_with_merges():
    rng = np.random.default_rng(121)
    seen_merge = seen_clip = 0
    for _trial in range(60):
        depth, n = int(rng.integers(1, 4)), int(rng.integers(1, 8))
        lam = float(10 ** rng.uniform(-1.5, 1))
        Q = t64(rng.uniform(-2, 2, size=(n, 2 ** (depth + 1) - 1)))
        sol = solve_pav(Q.numpy(), lam)
        J = jacobian_a(lambda q, lam=lam: prune(q, lam, solver="general"), Q).numpy()  # (|T|, n, |T|)
        seen_merge += sol.n_merges > 0
        for g in np.unique(sol.group):
            members = np.flatnonzero(sol.group == g)
            for t in members[1:]:
                np.testing.assert_array_equal(J[t], J[members[0]])  # identical rows within a group
            v = sol.a_unclipped[g]
            if not 0 < v < 1:
                seen_clip += 1
                assert not np.any(J[members])  # clipped groups: exactly zero
            else:  # the Jacobian of a: 1 / (lam |G| + k*) on the group's support, 0 elsewhere
                expected = np.where(sol.support == g, 1.0 / (lam * members.size + sol.k_star[g]), 0.0)
                np.testing.assert_allclose(J[members[0]], expected, rtol=1e-14, atol=0)
    assert seen_merge > 10 and seen_clip > 10


def test_T12_eta_gradient_formula():
    rng = np.random.default_rng(122)
    for _trial in range(20):
        n = int(rng.integers(1, 6))  # depth 2
        Q = t64(rng.uniform(-2, 2, size=(n, 7)))
        eta = t64(rng.uniform(-1, 2, size=7))
        lam = float(rng.choice([1.0, 0.3, 5.0]))
        sol = solve_pav(Q.numpy(), lam, eta=eta.numpy(), shift=0.0)
        J = jacobian_a(lambda e, Q=Q, lam=lam: prune(Q, lam, eta=e, shift=0.0), eta).numpy()
        for t in range(7):
            g = sol.group[t]
            members = sol.group == g
            v = sol.a_unclipped[g]
            expected = np.where(members, lam / (lam * members.sum() + sol.k_star[g]), 0.0) if 0 < v < 1 else 0 * J[t]
            np.testing.assert_allclose(J[t], expected, rtol=1e-14, atol=0)


# --------------------------------------------------------------------------------------------
# read-out, API behaviour, dtypes, torch back-end (what runs on GPU), errors
# --------------------------------------------------------------------------------------------


def test_readout_matches_its_formulas_and_is_sparse_in_code_mode():
    rng = np.random.default_rng(13)
    S = random_scores(rng, 30, 3)
    Q = path_rewards(S)
    a = prune(Q, 2.0)
    for mode in ("code", "paper"):
        torch.testing.assert_close(readout(Q, a, mode), readout_reference(Q, a, mode), rtol=0, atol=0)
    z = readout(Q, a, "code").numpy()
    on_path = Q.numpy() > 0
    assert np.all(z[~on_path] == 0) and np.all((z > 0) == (on_path & (a.numpy() > 0)))
    # paper read-out: z = 1/2 (capped by a) at s = 0, on both children
    S0 = S.clone()
    S0[:, 0] = 0.0
    Q0 = path_rewards(S0)
    a0 = torch.ones(15, dtype=F64)
    z0 = readout(Q0, a0, "paper").numpy()
    np.testing.assert_allclose(z0[:, 1:3], 0.5)


def test_readout_gradients_match_reference_away_from_ties():
    rng = np.random.default_rng(131)
    for mode in ("code", "paper"):
        for layout in ("node-major", "row-major"):
            Q = path_rewards(random_scores(rng, 11, 3))
            if layout == "row-major":
                Q = Q.contiguous()
            Q = Q.detach().requires_grad_()
            a = t64(rng.uniform(0.05, 0.95, size=15)).requires_grad_()
            G = t64(rng.normal(size=(11, 15)))
            g1 = torch.autograd.grad(readout(Q, a, mode), (Q, a), G)
            g2 = torch.autograd.grad(readout_reference(Q, a, mode), (Q, a), G)
            for x, y in zip(g1, g2):
                torch.testing.assert_close(x, y, rtol=0, atol=1e-14)


def test_float32_results_follow_float64():
    rng = np.random.default_rng(14)
    S = random_scores(rng, 200, 4)
    for lam in (0.1, 1.0, 50.0):
        a64 = prune(path_rewards(S), lam)
        S32 = S.float().requires_grad_()
        Q32 = path_rewards(S32)
        a32 = prune(Q32, lam)
        z32 = readout(Q32, a32)
        assert a32.dtype == torch.float32 and z32.dtype == torch.float32
        np.testing.assert_allclose(a32.detach().numpy(), a64.numpy(), atol=2e-5)
        z32.sum().backward()
        assert S32.grad is not None and torch.isfinite(S32.grad).all()
        ag = prune(Q32.detach(), lam, solver="general")
        assert ag.dtype == torch.float32
        np.testing.assert_allclose(ag.numpy(), a64.numpy(), atol=1e-6)


def test_torch_backend_equals_numpy_backend(monkeypatch):
    """The torch-only kernels (used on GPU) agree with the CPU/NumPy ones, values and gradients."""
    rng = np.random.default_rng(15)
    cases = [(random_scores(rng, n, d), float(10 ** rng.uniform(-2, 2))) for d, n in [(1, 1), (2, 5), (4, 40), (5, 3)]]

    def run(S, lam):
        Sg = S.clone().requires_grad_()
        Q = path_rewards(Sg)
        a = prune(Q, lam)
        z = readout(Q, a, "code") + readout(Q, a, "paper")
        W = torch.linspace(-1, 1, z.numel(), dtype=F64).reshape(z.shape)
        (g,) = torch.autograd.grad((z * W).sum() + a.sum(), Sg)
        return Q.detach(), a.detach(), z.detach(), g

    ref = [run(S, lam) for S, lam in cases]
    monkeypatch.setattr(backend, "on_numpy", lambda x: False)
    for (S, lam), r in zip(cases, ref):
        for x, y in zip(run(S, lam), r):
            torch.testing.assert_close(x, y, rtol=0, atol=1e-13)


def test_is_tree_consistent():
    Q = path_rewards(t64(np.random.default_rng(16).normal(size=(5, 7))))
    assert is_tree_consistent(Q) and is_tree_consistent(Q.contiguous())
    bad = Q.clone()
    bad[2, 9] = bad[2, 4] + 1e-12
    assert not is_tree_consistent(bad)
    nan = Q.clone()
    nan[0, 5] = float("nan")
    assert not is_tree_consistent(nan)
    assert is_tree_consistent(t64([[3.0]]))


def test_errors_are_sentences():
    Q = path_rewards(t64(np.random.default_rng(17).normal(size=(4, 3))))
    for lam in (0.0, -1.0, float("nan"), float("inf"), "x"):
        with pytest.raises(TreevizError, match="pruning strength lam"):
            prune(Q, lam)
    bad = Q.clone()
    bad[0, 3] = 5.0
    with pytest.raises(ValueError, match="tree-consistent"):
        prune(bad, 1.0, solver="fast")
    with pytest.raises(TreevizError, match="eta"):
        prune(Q, 1.0, eta=torch.zeros(7, dtype=F64), solver="fast")
    with pytest.raises(TreevizError, match="one value per node"):
        prune(Q, 1.0, eta=torch.zeros(5, dtype=F64))
    with pytest.raises(TreevizError, match="solver"):
        prune(Q, 1.0, solver="cvxpy")
    with pytest.raises(TreevizError, match="columns"):
        prune(Q[:, :6], 1.0)
    with pytest.raises(TreevizError, match="empty batch"):
        prune(Q[:0], 1.0)
    with pytest.raises(TreevizError, match="columns"):
        path_rewards(t64(np.zeros((3, 4))))
    with pytest.raises(TreevizError, match="read-out mode"):
        readout(Q, prune(Q, 1.0), mode="soft")
    nan = bad.clone()
    nan[1, 2] = float("nan")
    with pytest.raises(TreevizError, match="NaN"):
        prune(nan, 1.0)
    # a message is a full sentence
    with pytest.raises(TreevizError) as info:
        prune(Q, 0.0)
    assert str(info.value)[0].isupper() and str(info.value).rstrip().endswith(".")


def test_prune_keeps_device_dtype_and_requires_no_grad():
    Q = path_rewards(t64(np.random.default_rng(18).normal(size=(6, 7))))
    for solver in ("auto", "fast", "general"):
        a = prune(Q, 1.0, solver=solver)
        assert a.shape == (15,) and a.dtype == F64 and a.device == Q.device and not a.requires_grad


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_fast_path_equals_cpu():
    rng = np.random.default_rng(19)
    for depth, n, lam in [(2, 7, 0.5), (4, 200, 3.0), (6, 512, 1.0)]:
        S = random_scores(rng, n, depth)
        W = t64(rng.normal(size=(n, 2 ** (depth + 1) - 1)))
        out = {}
        for dev in ("cpu", "cuda"):
            Sg = S.to(dev).requires_grad_()
            Q = path_rewards(Sg)
            a = prune(Q, lam)
            z = readout(Q, a, "code") + readout(Q, a, "paper")
            (g,) = torch.autograd.grad((z * W.to(dev)).sum(), Sg)
            assert a.device.type == dev and z.device.type == dev
            out[dev] = [x.detach().cpu() for x in (Q, a, z, g)]
            if dev == "cuda":
                ag = prune(Q.detach(), lam, solver="general")
                assert ag.device.type == "cuda"
                torch.testing.assert_close(ag.cpu(), out["cpu"][1], rtol=0, atol=1e-12)
        for x, y in zip(out["cpu"], out["cuda"]):
            torch.testing.assert_close(x, y, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_T4_extended_sweep_against_osqp():
    """More and larger instances (depth 4, up to 30 samples, wide lambda range, [PRE] too)."""
    rng = np.random.default_rng(44)
    worst = 0.0
    for i in range(600):
        depth = int(rng.integers(1, 5))
        n = int(rng.integers(1, 31))
        total = 2 ** (depth + 1) - 1
        lam = float(10 ** rng.uniform(-3, 3))
        kind = i % 3
        Q = (rng.uniform(-2, 2, size=(n, total)) if kind == 0 else consistent_q(rng, n, depth) if kind == 1
             else rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(n, total)))
        eta = rng.uniform(-3, 3, size=total) if i % 5 == 0 else None
        lam_qp, shift = (1.0, 0.0) if eta is not None else (lam, 0.5)
        a_ref, z_ref = qp_oracle(Q, lam_qp, eta=eta, shift=shift)
        a = prune(t64(Q), lam_qp, eta=None if eta is None else t64(eta), shift=shift)
        z = readout(t64(Q), a, mode="paper", shift=shift)
        worst = max(worst, np.abs(a.numpy() - a_ref).max(), np.abs(z.numpy() - z_ref).max())
    assert worst < 1e-6, worst
