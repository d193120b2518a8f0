"""The pruning layer of latent trees: path rewards, the pruning QP, and the read-out of ``z``.

Latent trees (Zantedeschi, Kusner & Niculae, ICML 2021, "Learning Binary Decision Trees by
Argmin Differentiation") route a batch through a complete binary tree (heap order, see
:mod:`models.latent.heap`) and let the batch decide, through a small quadratic program, which
nodes stay active. ``docs/latent_trees.md`` writes out the formulas and the reasons for each
choice below; [ICML], [PRE] and [CODE] are the two papers and the authors' reference code, and
equation, proposition and algorithm numbers are [ICML]'s. One mini-batch goes::

    S (n, 2**D - 1) split scores
      -> Q = path_rewards(S)            (n, |T|)  path minimum of the signed split scores, q_root = 1
      -> a = prune(Q, lam)              (|T|,)    a_t in [0, 1] shared by the batch (0 = pruned)
      -> Z = readout(Q, a, mode)        (n, |T|)  per-sample traversal values, capped by a

**Sign convention.** The paper's: a sample goes LEFT iff its split score ``s < 0``. The reference
code [CODE] uses the opposite sign; it is the same model family with ``s -> -s``. Only
:func:`path_rewards` encodes the rule.

**The QP** (eq. 3 of [ICML], with the parameters ``eta`` and ``shift`` that also cover [PRE])::

    (Z, a) = argmin  (lam/2) ||a - eta||^2 + 1/2 sum_i ||z_i - q_i - shift||^2
             s.t.    a_t <= a_parent(t),  z_it <= a_t,  z_it in [0, 1],  a_t in [0, 1]

* [ICML] (the default): ``eta = 0``, ``shift = 1/2``, ``lam > 0`` is the pruning strength.
  ``lam`` is absolute, not per sample: tiling a batch k times with ``lam`` equals the
  original batch with ``lam / k`` (so the same ``lam`` prunes more with smaller batches).
* [PRE] (the 2020 preprint): ``lam = 1`` inside the QP, ``shift = 0``, and a learned per-node
  preference ``eta`` (penalised outside the QP by ``lam_PRE * ||eta||_inf``). Pass ``eta`` (a
  tensor that may require grad), ``lam=1.0`` and ``shift=0.0``; ``prune`` then uses the
  general solver and returns gradients with respect to ``eta`` too.

Eliminating ``Z`` (Prop. 1) leaves a tree-structured isotonic problem in ``a`` alone, solved by
pool-adjacent-violators (Algorithm 1, :func:`solve_pav`); each pooled group's value is the 1-D
closed form of Prop. 2. When ``Q`` is tree-consistent (``q_child <= q_parent`` for every sample,
which :func:`path_rewards` always produces) no group ever merges and the problem separates per
node: each ``a_t`` solves ``lam a = sum_i (c_it - a)_+`` with ``c = q + shift``, whose right side
grows with ``c``, so ``c_child <= c_parent`` already gives ``a_child <= a_parent``.
:func:`prune_fast` computes that with a handful of vectorised tensor operations on any device,
differentiable by plain autograd. :func:`prune` picks the right one.

Gradients. The general solver is a :class:`torch.autograd.Function` (:class:`PruneQP`) whose
backward is the sparse vector-Jacobian product of the group solution (``1 / (lam |G| + k*)`` on
the group's support) with exact float denominators ``lam |G| + k*`` (the reference code stores
them as integers, truncating them, which we do not copy); a group whose *unclipped* value is
``<= 0`` or ``>= 1`` gets exactly zero gradient. The fast path gets the same Jacobian from
autograd and applies the same strict mask.

Choices where the paper and the reference code differ:

* split sign: the paper's (left iff ``s < 0``);
* root: ``q_root = 1`` for every sample, as in the code; ``a_root`` is NOT pinned to 1, so
  ``a_root = 1.5 n / (lam + n) < 1`` when ``n < 2 lam`` and then caps every ``z`` (this is what
  produced the published numbers; [ICML]'s "z_1 = 1" is not literally true there);
* read-out: ``"code"`` by default (hard, exactly sparse paths; reproduces the numbers), ``"paper"``
  (exact argmin of eq. 3) on request; ``a`` is the same in both;
* Jacobian denominators: exact floats, not the code's integer truncation;
* ``lam = 0``: an error here (the code silently skips pruning; a caller wanting that skips this
  layer and uses ``z = clip(q, 0, 1)``);
* clipping: once, after PAV; the gradient mask uses the unclipped value, strictly inside (0, 1).

Performance notes (CPU). Tensors from :func:`path_rewards` are node-major (an ``(n, |T|)``
transposed view of a ``(|T|, n)`` buffer) so that per-node work is contiguous; the CPU kernels
of the three layers run on NumPy views of the tensors' memory where torch's CPU kernels are slow
at these sizes (sorting, boolean masks, many small calls). Other devices use the same algorithms
written with torch operations (what a GPU runs); the tests check both back-ends agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from models.ground.errors import TreevizError
from models.latent import heap
from models.latent.params import (
    Number,
    check_lam,
    check_rewards,
    check_shift,
    depth_of_scores,
    readout_constants,
)

__all__ = [
    "SOLVERS",
    "PAVSolution",
    "PruneQP",
    "is_tree_consistent",
    "path_rewards",
    "prune",
    "prune_fast",
    "readout",
    "solve_pav",
]

SOLVERS = ("auto", "fast", "general")


# --------------------------------------------------------------------------------------------
# path rewards
# --------------------------------------------------------------------------------------------


def _on_numpy(x: Tensor) -> bool:
    """Whether to run the elementwise kernels with NumPy: CPU float32/float64 tensors.

    On CPU, NumPy's per-call overhead is a few times lower than torch's and its sort is ~30x
    faster, which matters at these sizes (a few hundred thousand entries per batch). Other
    devices and dtypes use the same algorithm written with torch ops.
    """
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)


def _rewards_forward(S: Any, Qt: Any, signed: Any, depth: int, minimum: Any) -> None:
    """Fill node-major ``Qt`` (|T|, n) from ``S`` (n, m); NumPy arrays or tensors alike.

    ``signed[u, 0] = -s_u`` and ``signed[u, 1] = +s_u`` are the signed scores of the edges into
    ``u``'s left and right children, so in heap order ``signed`` lists the edge into every
    non-root node and a level is one broadcast minimum.
    """
    n = Qt.shape[1]
    signed[:, 1] = S.T
    signed[:, 0] = -signed[:, 1]
    Qt[0] = 1.0
    for d in range(depth):
        w = 2**d
        minimum(Qt[w - 1: 2 * w - 1, None], signed[w - 1: 2 * w - 1], out=Qt[2 * w - 1: 4 * w - 1].reshape(w, 2, n))


def _rewards_backward(tot: Any, not_own: Any, depth: int) -> Any:
    """Danskin backward of the path minimum; ``tot`` holds grad_Q node-major and is overwritten.

    The edge into node ``t`` attains ``t``'s path minimum iff ``q_t < q_parent(t)``; otherwise
    (``not_own[t-1] = 1``, i.e. ``q_t >= q_parent(t)``) ``t``'s gradient is carried up to its
    parent, bottom-up. Returns the gradient of the signed scores, ``(m, 2, n)``.
    """
    m, _, n = not_own.shape
    for d in range(depth - 1, 0, -1):
        w = 2**d
        carried = tot[2 * w - 1: 4 * w - 1].reshape(w, 2, n) * not_own[w - 1: 2 * w - 1]
        level = tot[w - 1: 2 * w - 1]
        level += carried[:, 0]
        level += carried[:, 1]
    g = tot[1:].reshape(m, 2, n)
    g -= g * not_own  # keep the gradient only where the edge attains the minimum
    return g


class _PathRewards(torch.autograd.Function):
    """``S -> Q`` with a Danskin backward; see :func:`path_rewards`.

    Works node-major: ``Qt`` is ``(|T|, n)`` contiguous and the output is its transpose, so each
    tree level is a contiguous block of rows. The backward needs only ``Qt``.
    """

    @staticmethod
    def forward(ctx: Any, S: Tensor) -> Tensor:
        n, m = S.shape
        depth = heap.depth_from_n_splits(m)
        S = S.detach()
        Qt = S.new_empty((2 * m + 1, n))
        signed = S.new_empty((m, 2, n))
        if _on_numpy(S):
            _rewards_forward(S.numpy(), Qt.numpy(), signed.numpy(), depth, np.minimum)
        else:
            _rewards_forward(S, Qt, signed, depth, torch.minimum)
        ctx.save_for_backward(Qt)
        ctx.depth = depth
        return Qt.t()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_Q: Tensor) -> Tensor:
        (Qt,) = ctx.saved_tensors
        total, n = Qt.shape
        m = (total - 1) // 2
        if m == 0:
            return grad_Q.new_zeros((n, 0))
        tot = grad_Q.t().to(Qt.dtype).clone(memory_format=torch.contiguous_format)  # (|T|, n), overwritten
        not_own = torch.ge(Qt[1:].view(m, 2, n), Qt[:m].unsqueeze(1), out=Qt.new_empty((m, 2, n)))
        # +s feeds the right child and -s the left one; the result is row-major like S usually is
        if _on_numpy(Qt):
            g = _rewards_backward(tot.numpy(), not_own.numpy(), ctx.depth)
            grad_S = np.empty((n, m), dtype=g.dtype)
            np.subtract(g[:, 1], g[:, 0], out=grad_S.T)
            return torch.from_numpy(grad_S)
        g = _rewards_backward(tot, not_own, ctx.depth)
        return (g[:, 1] - g[:, 0]).t()


def path_rewards(S: Tensor) -> Tensor:
    """Path rewards ``Q`` from split scores ``S``: path minimum of the signed scores, paper sign.

    Parameters
    ----------
    S : Tensor, shape (n, 2**D - 1)
        Split score of every sample at every split node (heap order). A sample goes LEFT at
        node ``t`` iff ``S[i, t] < 0`` (the paper's rule; the reference code flips the sign).

    Returns
    -------
    Tensor, shape (n, 2**(D+1) - 1)
        ``q_root = 1``; ``q_{2t+1} = min(q_t, -s_t)`` (left child), ``q_{2t+2} = min(q_t, +s_t)``
        (right child). So ``q_t > 0`` iff the sample's hard path passes through ``t``, and
        ``q_child <= q_parent`` ("tree-consistent"). Same device and dtype as ``S``.

    Notes
    -----
    Computed level by level (a loop over the ``D`` levels only). The result is the transpose of a
    node-major ``(|T|, n)`` buffer, i.e. a non-contiguous ``(n, |T|)`` view; the pruning fast path
    sorts node-major rows and so needs no copy. Call ``.contiguous()`` if you need row-major.

    Gradients follow Danskin's theorem: each ``q_it`` sends its gradient to the one split (with
    sign ``-`` for a left edge, ``+`` for a right edge) attaining the path minimum; the root is a
    constant. This is what autograd through ``torch.minimum`` gives (see
    :func:`models.latent.reference.path_rewards_reference`), implemented as a custom backward
    because ``minimum``'s autograd formula is ~10x slower on CPU. At an exact tie between a node's own edge and its
    parent's path minimum (measure zero for real-valued scores) the whole gradient goes to the
    parent's path, where ``torch.minimum`` would split it in halves; both are valid subgradients.
    """
    depth_of_scores(S)
    return _PathRewards.apply(S)


def is_tree_consistent(Q: Tensor) -> bool:
    """Whether ``q_child <= q_parent`` holds for every sample and node (NaN counts as "no").

    One vectorised comparison, no index tensors: the children ``1 .. |T|-1`` of the split nodes
    ``0 .. m-1`` are the node-major rows ``Q.T[1:]`` viewed as ``(m, 2, n)``. (NumPy on CPU, torch
    elsewhere.)
    """
    check_rewards(Q)
    total = Q.shape[1]
    m = (total - 1) // 2
    Qt = Q.detach().t()  # node-major view: contiguous for Q from path_rewards
    if m == 0:
        return bool(torch.isfinite(Qt).all())
    if _on_numpy(Qt):
        q = Qt.numpy()
        return bool((q[1:].reshape(m, 2, -1) <= q[:m, None]).all())
    return bool((Qt[1:].unflatten(0, (m, 2)) <= Qt[:m].unsqueeze(1)).all())


# --------------------------------------------------------------------------------------------
# fast path (tree-consistent Q, no eta)
# --------------------------------------------------------------------------------------------


def _fast_solve_cpu(Qt: Tensor, lam: float, shift: float) -> tuple[Tensor, Tensor]:
    """No-grad part of :func:`prune_fast` on CPU (float32/float64); ``Qt`` is ``(|T|, n)`` contiguous.

    Returns ``a`` (clipped, ``(|T|,)``) and the Jacobian weights ``W`` (``(|T|, n)``):
    ``W[t, i] = 1 / (lam + k*_t)`` if ``(i, t)`` is in node ``t``'s support and ``0 < a_t < 1``
    (unclipped), else 0. NumPy's sort (torch's is ~30x slower on CPU) and NumPy's cheap boolean
    ops; torch's cumsum and float-valued comparisons, which are the faster ones there.
    """
    total, n = Qt.shape
    rows = np.arange(total)
    neg_c = (-shift) - Qt  # -(q + shift): sorting it ascending sorts c descending
    neg = np.sort(neg_c.numpy(), axis=1)
    neg_a = torch.cumsum(torch.from_numpy(neg), 1).numpy()  # -P_k, k = 1..n
    inv = 1.0 / (lam + np.arange(1, n + 1, dtype=neg.dtype))  # 1 / (lam + k)
    neg_a *= inv  # -a(k)
    if n > 1:
        # first k in 1..n-1 with a(k) > c_(k+1); k = n (c_(n+1) = -inf) when there is none
        cond = np.less(neg_a[:, :-1], neg[:, 1:])
        pos = cond.argmax(axis=1)
        pos = np.where(cond[rows, pos], pos, n - 1)
    else:
        pos = np.zeros(total, dtype=np.int64)
    a = -neg_a[rows, pos]  # unclipped a(k*), k* = pos + 1
    scale = np.where((a > 0) & (a < 1), inv[pos], 0.0).astype(neg.dtype)
    weights = torch.le(neg_c, torch.from_numpy(neg[rows, pos]).unsqueeze(1), out=torch.empty_like(neg_c))
    weights.mul_(torch.from_numpy(scale).unsqueeze(1))  # support c_it >= c_(k*), scaled
    return torch.from_numpy(np.clip(a, 0.0, 1.0)), weights


def _fast_solve_torch(Qt: Tensor, lam: float, shift: float) -> tuple[Tensor, Tensor]:
    """Same as :func:`_fast_solve_cpu` with torch ops only (GPU, and dtypes NumPy cannot sort)."""
    total, n = Qt.shape
    neg_c = (-shift) - Qt
    neg = torch.sort(neg_c, dim=1).values
    neg_P = neg.cumsum(1)
    den = torch.arange(1, n + 1, dtype=Qt.dtype, device=Qt.device).add_(lam)
    cond = torch.empty((total, n), dtype=Qt.dtype, device=Qt.device)
    torch.lt(neg_P[:, :-1] / den[:-1], neg[:, 1:], out=cond[:, :-1])
    cond[:, -1] = 1.0  # k = n always qualifies (c_(n+1) = -inf)
    pos = cond.argmax(1, keepdim=True)  # the first 1 per row
    den_k = den[pos]
    a = -neg_P.gather(1, pos) / den_k
    scale = torch.where((a > 0) & (a < 1), 1.0 / den_k, torch.zeros_like(a))
    weights = (neg_c <= neg.gather(1, pos)).to(Qt.dtype).mul_(scale)
    return a.squeeze(1).clamp_(0.0, 1.0), weights


def prune_fast(Q: Tensor, lam: Number, shift: Number = 0.5) -> Tensor:
    """Per-node closed form of the pruning QP for tree-consistent ``Q``; no eta.

    For tree-consistent ``Q`` (``q_child <= q_parent``, e.g. from :func:`path_rewards`) the
    pool-adjacent-violators loop never merges, so each ``a_t`` is [ICML] Prop. 2 on column ``t``
    alone: with ``c = sort(q_:t + shift, descending)``, ``P_k = c_(1) + ... + c_(k)`` and
    ``a(k) = P_k / (lam + k)``, ``k*`` is the first ``k`` with ``a(k) > c_(k+1)``
    (``c_(n+1) = -inf``) and ``a_t = clip(a(k*), 0, 1)``. This function does NOT check
    tree-consistency (its answer is then not the QP's solution); :func:`prune` checks it.

    Implementation. Sort, cumulative sum and the first-True search (over ``k = 1..n``; when
    ``k* = 0``, i.e. every ``c < 0``, ``a(1) < 0`` qualifies too and both clip to 0) run without
    autograd, node-major, vectorised over nodes (NumPy's sort on CPU, ``torch.sort`` on other
    devices). They give the clipped value and the Jacobian of ``a`` as a weight matrix ``W``:
    ``1 / (lam + k*_t)`` on node ``t``'s support (the ``k*`` largest entries, i.e.
    ``c_it >= c_(k*)``; there are no ties at that boundary since ``a(k) <= c_(k)``), zero elsewhere
    and zero for nodes whose UNCLIPPED value is ``<= 0`` or ``>= 1``. The output is
    ``s + (a - s.detach())`` with ``s = sum_i W[t, i] q_it``: its value is ``a`` and plain autograd
    gives exactly ``W`` as the Jacobian, the same as autograd through sort/cumsum/gather/clip but
    without their backward cost. Runs on ``Q``'s device in ``Q``'s dtype.

    Parameters
    ----------
    Q : Tensor, shape (n, |T|)
        Tree-consistent path rewards.
    lam : float > 0
        Pruning strength (absolute, per batch).
    shift : float
        ``1/2`` for [ICML] (default); ``0`` gives the [PRE] QP with ``eta = 0``.

    Returns
    -------
    Tensor, shape (|T|,): ``a`` in ``[0, 1]``.
    """
    lam = check_lam(lam)
    shift = check_shift(shift)
    check_rewards(Q)
    Qt = Q.t()  # node-major view
    with torch.no_grad():
        Qt_d = Qt.detach()
        if not Qt_d.is_contiguous():
            Qt_d = Qt_d.contiguous()
        a, weights = (_fast_solve_cpu if _on_numpy(Qt_d) else _fast_solve_torch)(Qt_d, lam, shift)
    if not (Q.requires_grad and torch.is_grad_enabled()):
        return a
    s = (Qt * weights).sum(1)
    return s + (a - s.detach())


# --------------------------------------------------------------------------------------------
# general solver: tree pool-adjacent-violators ([ICML] Algorithm 1)
# --------------------------------------------------------------------------------------------


@dataclass
class PAVSolution:
    """Everything the general solver computes (NumPy, float64).

    Attributes
    ----------
    a : (|T|,) the solution, clipped to [0, 1].
    a_unclipped : (|T|,) the value of each node's group before clipping.
    group : (|T|,) int, the group of each node, named by its top node (groups are connected
        subtrees; a singleton group ``{t}`` is named ``t``).
    k_star : (|T|,) int, indexed by group name: the support size k* of that group (0 for names
        that are not groups).
    denom : (|T|,) float, indexed by group name: ``lam |G| + k*`` (exact float).
    active : (|T|,) bool, indexed by group name: ``0 < a_unclipped < 1`` (the group passes gradient).
    support : (n, |T|) int, for each entry ``(i, t)`` the group whose support ``S*_G`` contains it,
        ``-1`` if none.
    n_merges : number of PAV merges performed (0 for tree-consistent ``Q`` without eta).
    merges : the merges in order, as ``(child group, parent group)`` pairs.
    lam, shift : the parameters used.
    """

    a: np.ndarray
    a_unclipped: np.ndarray
    group: np.ndarray
    k_star: np.ndarray
    denom: np.ndarray
    active: np.ndarray
    support: np.ndarray
    n_merges: int
    merges: list[tuple[int, int]]
    lam: float
    shift: float


def _group_value(desc: np.ndarray, lam: float, size: int, eta_sum: float) -> tuple[float, int]:
    """[ICML] Prop. 2, with ``eta``, on one group: (unclipped a(k*), k*) from its sorted entries.

    ``a(k) = (lam * eta_sum + c_(1) + ... + c_(k)) / (lam * size + k)``; ``k*`` is the first ``k``
    with ``a(k) > c_(k+1)`` (``c_(m+1) = -inf``).
    """
    m = desc.shape[0]
    P = np.empty(m + 1)
    P[0] = 0.0
    np.cumsum(desc, out=P[1:])
    A = (lam * eta_sum + P) / (lam * size + np.arange(m + 1))
    cond = np.empty(m + 1, dtype=bool)
    np.greater(A[:-1], desc, out=cond[:-1])
    cond[-1] = True  # c_(m+1) = -inf
    k = int(np.argmax(cond))
    return float(A[k]), k


def _merge_desc(va: np.ndarray, fa: np.ndarray, vb: np.ndarray, fb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge two decreasingly sorted value arrays (and their flat indices) in linear time."""
    # position of each b element in the merged array: after the a elements >= it (ties: a first)
    pos_b = (va.shape[0] - np.searchsorted(va[::-1], vb, side="left")) + np.arange(vb.shape[0])
    total = va.shape[0] + vb.shape[0]
    from_b = np.zeros(total, dtype=bool)
    from_b[pos_b] = True
    v = np.empty(total)
    f = np.empty(total, dtype=np.int64)
    v[pos_b], f[pos_b] = vb, fb
    v[~from_b], f[~from_b] = va, fa
    return v, f


def solve_pav(
    Q: np.ndarray,
    lam: Number,
    eta: np.ndarray | None = None,
    shift: Number = 0.5,
    *,
    violator: str = "max",
    ties: str = "low",
) -> PAVSolution:
    """Exact solution of the pruning QP for any ``Q`` by tree pool-adjacent-violators (Algorithm 1).

    NumPy, float64; no autograd (:class:`PruneQP` wraps it). Each column of ``C = Q + shift`` is
    sorted once. Every node starts as its own group with the value of [ICML] Prop. 2, with eta:
    ``a(k) = (lam * sum_{t in G} eta_t + P_k) / (lam |G| + k)``, ``k*`` the first ``k >= 0`` with
    ``a(k) > c_(k+1)``. Then, while some node ``t >= 1`` has ``a_t > a_parent(t)`` (strictly; the
    root is never a violator), the violator with the MAXIMUM value is merged into its parent's
    group (its group's sorted entries are merged into the parent group's in linear time) and the
    merged group's value is recomputed from all of its ``n |G|`` entries. Values are clipped to
    ``[0, 1]`` once at the end (clipping inside the loop gives the same ``a``, but the gradient
    mask needs the unclipped values).

    Parameters
    ----------
    Q : array (n, |T|)
        Path rewards (any values; tree-consistency is not needed).
    lam : float > 0
        Pruning strength ([ICML]); use ``1`` for [PRE].
    eta : array (|T|,), optional
        [PRE] per-node pruning preferences (default: zeros, i.e. [ICML]).
    shift : float
        ``1/2`` for [ICML], ``0`` for [PRE].
    violator : {"max", "first"}
        ``"max"`` is Algorithm 1. ``"first"`` (lowest index first) is WRONG on generic ``Q``
        (groups never split, so merging a smaller violator early can lock in a wrong group) and
        exists only so a test can show the difference on a counter-example.
    ties : {"low", "high"}
        Which of several equal maximal violators to merge first; the result does not depend
        on it (a test checks this on hundreds of tied instances).
    """
    lam = check_lam(lam)
    shift = check_shift(shift)
    C = np.asarray(Q, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] == 0:
        raise TreevizError(f"Q must have shape (n_samples, n_nodes) with n_samples >= 1, got {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise TreevizError("The path rewards contain NaN or infinite values; check the split scores for "
                           "overflow (e.g. a learning rate that is too large).")
    n, total = C.shape
    heap.depth_from_n_nodes(total)  # raises for a wrong node count
    if eta is None:
        eta_arr = np.zeros(total)
    else:
        eta_arr = np.asarray(eta, dtype=np.float64).reshape(-1)
        if eta_arr.shape[0] != total or not np.all(np.isfinite(eta_arr)):
            raise TreevizError(f"eta must be {total} finite numbers (one per node), got shape {np.shape(eta)}.")
    if violator not in ("max", "first") or ties not in ("low", "high"):
        raise ValueError("violator must be 'max' or 'first' and ties 'low' or 'high'.")
    Ct = np.add(C.T, shift, order="C")  # (T, n), node-major
    order = np.argsort(-Ct, axis=1)  # per column: sample indices by decreasing c
    desc = np.take_along_axis(Ct, order, axis=1)  # (T, n)
    flat = order * total + np.arange(total)[:, None]  # flat index i * |T| + t of each sorted entry

    # singleton groups, vectorised over nodes
    P = np.zeros((total, n + 1))
    np.cumsum(desc, axis=1, out=P[:, 1:])
    A = (lam * eta_arr[:, None] + P) / (lam + np.arange(n + 1))
    cond = np.empty((total, n + 1), dtype=bool)
    np.greater(A[:, :-1], desc, out=cond[:, :-1])
    cond[:, -1] = True
    k_star = np.argmax(cond, axis=1)
    value = A[np.arange(total), k_star]  # per group name (singletons: the node itself)
    node_value = value.copy()  # per node: the value of its group
    group = np.arange(total)
    size = np.ones(total, dtype=np.int64)
    eta_sum = eta_arr.copy()
    members: dict[int, list[int]] = {t: [t] for t in range(total)}
    entries: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # merged groups only

    parents = heap.parents(heap.depth_from_n_nodes(total))
    merges: list[tuple[int, int]] = []
    while True:
        viol = np.flatnonzero(node_value[1:] > node_value[parents[1:]]) + 1
        if viol.size == 0:
            break
        if violator == "first":
            t = int(viol[0])
        else:
            vals = node_value[viol]
            best = viol[vals == vals.max()]
            t = int(best[0] if ties == "low" else best[-1])
        child, par = int(group[t]), int(group[parents[t]])  # child == t: a violator tops its group
        va, fa = entries.pop(par, (desc[par], flat[par]))
        vb, fb = entries.pop(child, (desc[child], flat[child]))
        v, f = _merge_desc(va, fa, vb, fb)
        entries[par] = (v, f)
        members[par].extend(members.pop(child))
        idx = np.asarray(members[par])
        group[idx] = par
        size[par] += size[child]
        eta_sum[par] += eta_sum[child]
        value[par], k_star[par] = _group_value(v, lam, int(size[par]), float(eta_sum[par]))
        value[child], k_star[child], size[child] = 0.0, 0, 0
        node_value[idx] = value[par]
        merges.append((child, par))

    is_group = np.zeros(total, dtype=bool)
    is_group[list(members)] = True
    k_star = np.where(is_group, k_star, 0)
    denom = np.where(is_group, lam * size + k_star, 1.0)
    active = is_group & (value > 0.0) & (value < 1.0)
    support = np.full(n * total, -1, dtype=np.int64)
    singles = np.array([g for g in members if g not in entries], dtype=np.int64)
    top = np.arange(n) < k_star[singles, None]  # the k* largest entries of each singleton's column
    support[flat[singles][top]] = np.repeat(singles, k_star[singles])
    for g, (_, f) in entries.items():  # merged groups
        support[f[: k_star[g]]] = g
    return PAVSolution(
        a=np.clip(node_value, 0.0, 1.0),
        a_unclipped=node_value,
        group=group,
        k_star=k_star,
        denom=denom,
        active=active,
        support=support.reshape(n, total),
        n_merges=len(merges),
        merges=merges,
        lam=lam,
        shift=shift,
    )


class PruneQP(torch.autograd.Function):
    """General pruning QP as an autograd Function: ``PruneQP.apply(Q, eta, lam, shift) -> a``.

    Forward: :func:`solve_pav` on the CPU in float64 (``Q`` is copied there), ``a`` returned
    clipped, on ``Q``'s device and dtype. Backward (no autograd through the PAV loop): for
    each final group ``G`` with ``0 < a_G(unclipped) < 1``,
    ``g = sum_{t in G} grad_a[t] / (lam |G| + k*_G)``; ``grad_Q[i, t'] = g`` for ``(i, t')`` in the
    support ``S*_G`` and ``grad_eta[t'] = lam * g`` for ``t'`` in ``G``; zero everywhere else
    (exact float denominators). ``eta`` may be ``None`` ([ICML]).
    """

    @staticmethod
    def forward(ctx: Any, Q: Tensor, eta: Tensor | None, lam: float, shift: float) -> Tensor:
        eta_np = None if eta is None else eta.detach().to("cpu", torch.float64).numpy()
        sol = solve_pav(Q.detach().to("cpu", torch.float64).numpy(), lam, eta_np, shift)
        dev = Q.device
        ctx.lam = sol.lam
        ctx.has_eta = eta is not None
        ctx.eta_dtype = None if eta is None else eta.dtype
        # coefficient per group name: active / denom (0 for names that are not groups)
        scale = np.where(sol.active, 1.0 / sol.denom, 0.0)
        ctx.save_for_backward(
            torch.from_numpy(sol.group).to(dev),
            torch.from_numpy(scale).to(dev, Q.dtype),
            torch.from_numpy(np.where(sol.support < 0, sol.group.shape[0], sol.support)).to(dev),
        )
        return torch.from_numpy(sol.a).to(dev, Q.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_a: Tensor) -> tuple[Tensor | None, Tensor | None, None, None]:
        group, scale, support = ctx.saved_tensors
        total = group.shape[0]
        per_group = torch.zeros(total + 1, dtype=scale.dtype, device=scale.device)
        per_group[:total].index_add_(0, group, grad_a.to(scale.dtype))
        per_group[:total] *= scale  # g_G (0 for clipped groups and non-group names)
        grad_Q = per_group[support] if ctx.needs_input_grad[0] else None
        grad_eta = None
        if ctx.has_eta and ctx.needs_input_grad[1]:
            grad_eta = (ctx.lam * per_group[group]).to(ctx.eta_dtype)
        return grad_Q, grad_eta, None, None


# --------------------------------------------------------------------------------------------
# the public entry point
# --------------------------------------------------------------------------------------------


def prune(
    Q: Tensor,
    lam: Number,
    *,
    eta: Tensor | np.ndarray | None = None,
    shift: Number = 0.5,
    solver: str = "auto",
) -> Tensor:
    """Solve the pruning QP for one batch: the node activities ``a``, differentiable.

    Parameters
    ----------
    Q : Tensor, shape (n, |T|)
        Path rewards of the batch (see :func:`path_rewards`), float32 or float64, any device.
    lam : float > 0
        Pruning strength, absolute per batch: larger prunes more. ``lam <= 0`` is an error; to
        train without pruning skip this layer (the reference code does that for ``lam = 0``).
    eta : Tensor or array, shape (|T|,), optional
        [PRE] learned per-node preferences (use with ``lam=1.0, shift=0.0``). Gradients flow to
        it when it requires grad. Forces the general solver.
    shift : float
        ``1/2`` ([ICML], default) or ``0`` ([PRE]).
    solver : {"auto", "fast", "general"}
        ``"auto"``: the fast per-node path (:func:`prune_fast`) when ``eta`` is None and ``Q``
        is tree-consistent (one vectorised check), else the general PAV solver (:class:`PruneQP`,
        computed on the CPU). ``"fast"`` / ``"general"`` force one; ``"fast"`` on a
        non-tree-consistent ``Q`` or with ``eta`` is an error.

    Returns
    -------
    Tensor, shape (|T|,): ``a`` in ``[0, 1]``, on ``Q``'s device and dtype. ``a_t = 0`` means node
    ``t`` (and, since ``a_child <= a_parent``, its subtree) is pruned for this batch.
    """
    lam = check_lam(lam)
    shift = check_shift(shift)
    check_rewards(Q)
    if solver not in SOLVERS:
        raise TreevizError(f"Unknown pruning solver {solver!r}; use one of {', '.join(SOLVERS)}.")
    if eta is not None:
        if solver == "fast":
            raise TreevizError("The fast pruning path does not support per-node preferences eta; use "
                               "solver='general' or 'auto'.")
        if not isinstance(eta, Tensor):
            eta = torch.as_tensor(np.asarray(eta), dtype=Q.dtype, device=Q.device)
        if eta.shape != (Q.shape[1],):
            raise TreevizError(f"eta must have one value per node, shape ({Q.shape[1]},); got {tuple(eta.shape)}.")
        return PruneQP.apply(Q, eta, lam, shift)
    if solver == "general":
        return PruneQP.apply(Q, None, lam, shift)
    consistent = is_tree_consistent(Q)
    if solver == "fast" and not consistent:
        raise TreevizError(
            "The fast pruning path needs tree-consistent path rewards (q_child <= q_parent for every "
            "sample, as path_rewards produces), but Q is not; use solver='general' or 'auto'."
        )
    if consistent:
        return prune_fast(Q, lam, shift)
    return PruneQP.apply(Q, None, lam, shift)


# --------------------------------------------------------------------------------------------
# read-out and objective
# --------------------------------------------------------------------------------------------


class _Readout(torch.autograd.Function):
    """``z = relu(min(q + delta, cap))`` with ``cap = clip(a, 0, upper)``; see :func:`readout`.

    Works in ``Q``'s memory layout (node-major for ``Q`` from :func:`path_rewards`) and brings the
    incoming gradient to that layout once, because elementwise kernels that mix a transposed and
    a row-major operand are 10-25x slower on CPU. Gradient: to ``q`` where ``0 < z < cap`` (the
    ``q`` term is the minimum), to ``a`` where ``0 < z = cap`` (the cap is active; an exact tie
    ``q + delta == cap`` counts as the cap), summed over samples.
    """

    @staticmethod
    def forward(ctx: Any, Q: Tensor, a: Tensor, delta: float, upper: float) -> Tensor:
        Qt = Q.detach().t()
        cap = a.detach().clamp(0.0, upper).unsqueeze(1)
        Zt = torch.minimum(Qt + delta if delta != 0.0 else Qt, cap)
        Zt.clamp_min_(0.0)
        ctx.save_for_backward(a, Zt)
        ctx.upper = upper
        return Zt.t()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_Z: Tensor) -> tuple[Tensor, Tensor | None, None, None]:
        a, Zt = ctx.saved_tensors
        cap = a.clamp(0.0, ctx.upper).unsqueeze(1)
        Gt = grad_Z.t()
        if Gt.stride() != Zt.stride():
            Gt = _like_layout(Gt, Zt)
        G_on = Gt * torch.gt(Zt, 0.0, out=torch.empty_like(Zt))  # gradient where z > 0
        G_q = G_on * torch.lt(Zt, cap, out=torch.empty_like(Zt))  # ... and the q term is the minimum
        G_a = None
        if ctx.needs_input_grad[1]:
            G_a = (G_on.sum(1) - G_q.sum(1)) * ((a >= 0) & (a <= ctx.upper))
        return G_q.t(), G_a, None, None


def _like_layout(x: Tensor, ref: Tensor) -> Tensor:
    """A copy of ``x`` with ``ref``'s memory layout (row- or column-major 2-D)."""
    if ref.is_contiguous():
        return x.contiguous()
    return x.t().contiguous().t()


def readout(Q: Tensor, a: Tensor, mode: str = "code", shift: Number = 0.5) -> Tensor:
    """Per-sample traversal values ``Z`` (n, |T|) from path rewards and node activities.

    ``mode="code"`` (default): ``z = min(clip(q, 0, 1), a)``. This is what the reference code uses
    in every released experiment, so it reproduces the published numbers; ``z_it > 0`` only on
    sample ``i``'s hard root-to-leaf path (and only where ``a_t > 0``), i.e. routing is exactly
    hard and sparse at train and test time. It is *not* the argmin of eq. (3) in ``z``.

    ``mode="paper"``: ``z = min(max(q + shift, 0), a)`` with ``shift = 1/2`` (Prop. 1), the exact
    argmin of eq. (3) given ``a`` (use ``shift=0`` for [PRE]). Near a split boundary both children
    get mass (``z = 1/2`` capped by ``a`` at ``s = 0``); it is sparse only beyond margin 1/2. The
    solver tests compare this read-out with a generic QP solver.

    ``a`` (in ``[0, 1]``, as :func:`prune` returns) is identical in both modes. Both are computed
    as ``relu(min(q + delta, a))`` (``delta = 0`` for "code", ``shift`` for "paper"), which equals
    the formulas above for ``0 <= a <= 1``, with a custom backward that works in ``Q``'s memory
    layout (see :class:`_Readout`). Gradients reach ``q`` where the ``q`` term is the minimum and
    ``a`` where the cap ``a_t`` is active, as autograd through ``torch.minimum`` would, except at
    exact ties ``q + delta == a`` where the whole gradient goes to ``a`` instead of half of it
    (:func:`models.latent.reference.readout_reference` is the plain-autograd version). The result
    has ``Q``'s layout.
    """
    check_rewards(Q)
    if not isinstance(a, Tensor) or a.shape != (Q.shape[1],):
        raise TreevizError(f"a must be a tensor with one value per node, shape ({Q.shape[1]},); got "
                           f"{tuple(a.shape) if isinstance(a, Tensor) else type(a).__name__}.")
    delta, upper = readout_constants(mode, shift)
    return _Readout.apply(Q, a, delta, upper)
