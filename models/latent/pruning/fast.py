"""The fast path of the pruning QP: the per-node closed form for tree-consistent ``Q`` without eta."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from models.latent.params import Number, check_lam, check_rewards, check_shift
from models.latent.pruning import backend


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
        a, weights = (_fast_solve_cpu if backend.on_numpy(Qt_d) else _fast_solve_torch)(Qt_d, lam, shift)
    if not (Q.requires_grad and torch.is_grad_enabled()):
        return a
    s = (Qt * weights).sum(1)
    return s + (a - s.detach())
