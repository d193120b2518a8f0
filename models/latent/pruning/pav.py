"""The general solver of the pruning QP: tree pool-adjacent-violators ([ICML] Algorithm 1) for any
``Q`` and eta, and :class:`PruneQP`, its autograd Function with the sparse backward."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from models.ground.errors import TreevizError
from models.latent import heap
from models.latent.params import Number, check_lam, check_shift


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


def _checked_inputs(Q: np.ndarray, eta: np.ndarray | None, violator: str, ties: str) -> tuple[np.ndarray, np.ndarray]:
    """``Q`` as float64 (n, |T|) and ``eta`` as (|T|,) zeros or values, checked (sentences for bad input)."""
    C = np.asarray(Q, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] == 0:
        raise TreevizError(f"Q must have shape (n_samples, n_nodes) with n_samples >= 1, got {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise TreevizError("The path rewards contain NaN or infinite values; check the split scores for "
                           "overflow (e.g. a learning rate that is too large).")
    total = C.shape[1]
    heap.depth_from_n_nodes(total)  # raises for a wrong node count
    if eta is None:
        eta_arr = np.zeros(total)
    else:
        eta_arr = np.asarray(eta, dtype=np.float64).reshape(-1)
        if eta_arr.shape[0] != total or not np.all(np.isfinite(eta_arr)):
            raise TreevizError(f"eta must be {total} finite numbers (one per node), got shape {np.shape(eta)}.")
    if violator not in ("max", "first") or ties not in ("low", "high"):
        raise ValueError("violator must be 'max' or 'first' and ties 'low' or 'high'.")
    return C, eta_arr


def _next_violator(node_value: np.ndarray, parents: np.ndarray, violator: str, ties: str) -> int | None:
    """The node to merge into its parent's group next (``a_t > a_parent(t)``), None when there is none."""
    viol = np.flatnonzero(node_value[1:] > node_value[parents[1:]]) + 1
    if viol.size == 0:
        return None
    if violator == "first":
        return int(viol[0])
    vals = node_value[viol]
    best = viol[vals == vals.max()]
    return int(best[0] if ties == "low" else best[-1])


class _Groups:
    """The state of tree PAV: the groups (connected subtrees, each named by its top node), their
    entries sorted by decreasing ``c = q + shift``, sizes, eta sums, values and support sizes k*,
    and the merges so far. Built with every node its own group, valued by [ICML] Prop. 2 with eta
    (vectorised over nodes)."""

    def __init__(self, C: np.ndarray, eta: np.ndarray, lam: float, shift: float) -> None:
        n, total = C.shape
        Ct = np.add(C.T, shift, order="C")  # (T, n), node-major
        order = np.argsort(-Ct, axis=1)  # per column: sample indices by decreasing c
        self.desc = np.take_along_axis(Ct, order, axis=1)  # (T, n)
        self.flat = order * total + np.arange(total)[:, None]  # flat index i * |T| + t of each sorted entry
        self.lam = lam

        # singleton groups, vectorised over nodes
        P = np.zeros((total, n + 1))
        np.cumsum(self.desc, axis=1, out=P[:, 1:])
        A = (lam * eta[:, None] + P) / (lam + np.arange(n + 1))
        cond = np.empty((total, n + 1), dtype=bool)
        np.greater(A[:, :-1], self.desc, out=cond[:, :-1])
        cond[:, -1] = True
        self.k_star = np.argmax(cond, axis=1)
        self.value = A[np.arange(total), self.k_star]  # per group name (singletons: the node itself)
        self.node_value = self.value.copy()  # per node: the value of its group
        self.group = np.arange(total)
        self.size = np.ones(total, dtype=np.int64)
        self.eta_sum = eta.copy()
        self.members: dict[int, list[int]] = {t: [t] for t in range(total)}
        self.entries: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # merged groups only
        self.merges: list[tuple[int, int]] = []

    def merge(self, t: int, parent: int) -> None:
        """Merge node ``t``'s group into its parent's: entries merged in linear time, value recomputed."""
        child, par = int(self.group[t]), int(self.group[parent])  # child == t: a violator tops its group
        va, fa = self.entries.pop(par, (self.desc[par], self.flat[par]))
        vb, fb = self.entries.pop(child, (self.desc[child], self.flat[child]))
        v, f = _merge_desc(va, fa, vb, fb)
        self.entries[par] = (v, f)
        self.members[par].extend(self.members.pop(child))
        idx = np.asarray(self.members[par])
        self.group[idx] = par
        self.size[par] += self.size[child]
        self.eta_sum[par] += self.eta_sum[child]
        self.value[par], self.k_star[par] = _group_value(v, self.lam, int(self.size[par]), float(self.eta_sum[par]))
        self.value[child], self.k_star[child], self.size[child] = 0.0, 0, 0
        self.node_value[idx] = self.value[par]
        self.merges.append((child, par))

    def solution(self, shift: float) -> PAVSolution:
        """The final groups as a :class:`PAVSolution` (``a`` clipped once, here)."""
        total, n = self.desc.shape
        members, entries, k_star = self.members, self.entries, self.k_star
        is_group = np.zeros(total, dtype=bool)
        is_group[list(members)] = True
        k_star = np.where(is_group, k_star, 0)
        denom = np.where(is_group, self.lam * self.size + k_star, 1.0)
        active = is_group & (self.value > 0.0) & (self.value < 1.0)
        support = np.full(n * total, -1, dtype=np.int64)
        singles = np.array([g for g in members if g not in entries], dtype=np.int64)
        top = np.arange(n) < k_star[singles, None]  # the k* largest entries of each singleton's column
        support[self.flat[singles][top]] = np.repeat(singles, k_star[singles])
        for g, (_, f) in entries.items():  # merged groups
            support[f[: k_star[g]]] = g
        return PAVSolution(
            a=np.clip(self.node_value, 0.0, 1.0),
            a_unclipped=self.node_value,
            group=self.group,
            k_star=k_star,
            denom=denom,
            active=active,
            support=support.reshape(n, total),
            n_merges=len(self.merges),
            merges=self.merges,
            lam=self.lam,
            shift=shift,
        )


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
    C, eta_arr = _checked_inputs(Q, eta, violator, ties)
    groups = _Groups(C, eta_arr, lam, shift)
    parents = heap.parents(heap.depth_from_n_nodes(C.shape[1]))
    while (t := _next_violator(groups.node_value, parents, violator, ties)) is not None:
        groups.merge(t, int(parents[t]))
    return groups.solution(shift)


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
