"""The whole pruning layer S → (Q, a, Z) as one compiled CPU kernel (numba), forward and backward.

Same mathematics as ``path_rewards → prune_fast → readout`` in :mod:`models.latent.pruning`
(the fast path for the tree-consistent rewards a model produces; the formulas are written out in
``docs/latent_trees.md``), fused so that a CPU training
step pays one call instead of a dozen tensor operations, and sparse where the QP is sparse:

* **Only positive shifted rewards matter.** For node t, only the entries c_it = q_it + shift > 0
  can be in the support: at k = #positive, a(k) > 0 ≥ c_(k+1), so the stopping rule
  a(k) > c_(k+1) of [ICML] Prop. 2 already holds. If none is positive, a_t clips to 0 with zero gradient.
* **No sort.** a(k*) is the fixed point of value ← Σ_{c > value} c / (λ + #{c > value}). Started
  at 0 (all positive entries), the iterates increase: a(k) decreases in k for k ≥ k* (each a(k+1)
  is a convex combination of a(k) and the smaller c_(k+1)), so every iterate is some a(k) with
  k ≥ k*, and the set {c > value} shrinks until it is the k* largest entries (as in Michelot's
  simplex projection). A few passes over the positive entries replace a sort.
* **Backward** is the same chain as the separate functions: readout (gradient to q where
  0 < z < cap, to a where 0 < z = cap), the Jacobian of a (1/(λ + k*) on node t's support when
  0 < a_t < 1 before clipping), and Danskin's rule for the path minimum (a node's gradient goes
  to its own split when its edge attains the minimum, q_t < q_parent, else it is carried to the
  parent), bottom-up.

Used on CPU for the ICML formulation; GPUs use the torch composition
(:func:`models.latent.pruning_layer.latent_layer` chooses). This module and
:mod:`models.latent.pruning` do not import each other; both take the read-out constants from
:mod:`models.latent.params`. Tested equal to the composition (values and gradients) in
``tests/models/latent/test_fused.py``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch.autograd.function import once_differentiable

from models.latent.params import readout_constants

try:  # numba ships with umap-learn (a requirement); without it the composition is used
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

    def njit(*args: Any, **kwargs: Any):  # type: ignore[no-redef]
        return lambda f: f


@njit(cache=True, nogil=True)
def _forward(S, lam, shift, delta, upper, Qt, Zt, a, scale, thresh):  # pragma: no cover - compiled
    n, m = S.shape
    total = 2 * m + 1
    buf = np.empty(n, dtype=np.float64)
    for i in range(n):
        Qt[0, i] = 1.0
    for t in range(total):  # parents before children: row t is final when its turn comes
        if t < m:  # children's rewards from this row while it is in cache
            left = 2 * t + 1
            for i in range(n):
                q = Qt[t, i]
                s = S[i, t]
                Qt[left, i] = min(q, -s)
                Qt[left + 1, i] = min(q, s)
        count = 0
        for i in range(n):
            c = Qt[t, i] + shift
            if c > 0.0:
                buf[count] = c
                count += 1
        scale[t] = 0.0
        thresh[t] = math.inf
        value = 0.0
        if count > 0:
            # a(k*) is the fixed point of value <- sum_{c > value} c / (lam + #{c > value}); from 0
            # the iterates increase to it and the support shrinks to the k* largest entries
            k = -1
            while True:
                acc = 0.0
                kept = 0
                for j in range(count):
                    if buf[j] > value:
                        acc += buf[j]
                        kept += 1
                value = acc / (lam + kept)
                if kept == k:
                    break
                k = kept
            if 0.0 < value < 1.0:
                scale[t] = 1.0 / (lam + k)
                thresh[t] = value  # the support is {c > value}
        a[t] = min(max(value, 0.0), 1.0)
        cap = min(a[t], upper)
        for i in range(n):
            z = min(Qt[t, i] + delta, cap)
            Zt[t, i] = max(0.0, z)


@njit(cache=True, nogil=True)
def _backward(Qt, Zt, a, scale, thresh, shift, upper, Gz, gQ, gA, gS):  # pragma: no cover - compiled
    """``gQ`` holds any incoming gradient of Q and receives the carried gradients; one node at a
    time from the deepest up, so each row is finished (children done) when it is visited."""
    total, n = Qt.shape
    for t in range(total - 1, -1, -1):
        cap = min(max(a[t], 0.0), upper)
        ga = gA[t]
        for i in range(n):  # readout: to q where 0 < z < cap, to a where 0 < z = cap
            z = Zt[t, i]
            if z > 0.0:
                if z < cap:
                    gQ[t, i] += Gz[t, i]
                else:
                    ga += Gz[t, i]
        if scale[t] > 0.0 and ga != 0.0:  # pruning QP: 1/(lam + k*) on the support
            g = ga * scale[t]
            limit = thresh[t]
            for i in range(n):
                if Qt[t, i] + shift > limit:
                    gQ[t, i] += g
        if t == 0:
            break
        parent = (t - 1) // 2
        sign = -1.0 if t % 2 == 1 else 1.0
        for i in range(n):  # path minimum (Danskin): own split, or carried to the parent
            g = gQ[t, i]
            if g != 0.0:
                if Qt[t, i] >= Qt[parent, i]:
                    gQ[parent, i] += g
                else:
                    gS[i, parent] += sign * g


class _FusedLayer(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, S: torch.Tensor, lam: float, shift: float, delta: float, upper: float):
        S_np = S.detach().contiguous().numpy()
        n, m = S_np.shape
        dtype = S_np.dtype
        Qt = np.empty((2 * m + 1, n), dtype=dtype)
        Zt = np.empty_like(Qt)
        a = np.empty(2 * m + 1, dtype=dtype)
        scale = np.empty(2 * m + 1, dtype=np.float64)
        thresh = np.empty(2 * m + 1, dtype=np.float64)
        _forward(S_np, float(lam), float(shift), float(delta), float(upper), Qt, Zt, a, scale, thresh)
        Qt_t, Zt_t, a_t = torch.from_numpy(Qt), torch.from_numpy(Zt), torch.from_numpy(a)
        ctx.save_for_backward(Qt_t, Zt_t, a_t, torch.from_numpy(scale), torch.from_numpy(thresh))
        ctx.consts = (float(shift), float(upper), m)
        ctx.set_materialize_grads(False)  # unused outputs (usually Q and a) arrive as None
        return Qt_t.t(), a_t, Zt_t.t()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_Q: torch.Tensor | None, grad_a: torch.Tensor | None,
                 grad_Z: torch.Tensor | None):
        Qt, Zt, a, scale, thresh = (t.numpy() for t in ctx.saved_tensors)
        shift, upper, m = ctx.consts
        total, n = Qt.shape
        gQ = (np.ascontiguousarray(grad_Q.numpy().T, dtype=Qt.dtype) if grad_Q is not None
              else np.zeros((total, n), dtype=Qt.dtype))
        gA = grad_a.numpy().astype(np.float64) if grad_a is not None else np.zeros(total)
        Gz = (np.ascontiguousarray(grad_Z.numpy().T) if grad_Z is not None
              else np.zeros((total, n), dtype=Qt.dtype))
        gS = np.zeros((n, m), dtype=Qt.dtype)
        _backward(Qt, Zt, a, scale, thresh, shift, upper, Gz, gQ, gA, gS)
        return torch.from_numpy(gS), None, None, None, None


def fused_available(S: torch.Tensor) -> bool:
    """Whether :func:`fused_layer` can run on ``S`` (CPU float32/float64 tensor, numba present)."""
    return HAVE_NUMBA and S.device.type == "cpu" and S.dtype in (torch.float32, torch.float64)


def fused_layer(S: torch.Tensor, lam: float, shift: float = 0.5,
                mode: str = "code") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(Q, a, Z) from split scores in one CPU kernel; see the module docstring.

    ``mode`` is the read-out ("code": z = min(clip(q, 0, 1), a); "paper": z = min(max(q + shift, 0), a)).
    Q and Z are (n, |T|) views of node-major buffers, like :func:`~models.latent.pruning.path_rewards`.
    """
    delta, upper = readout_constants(mode, shift)
    return _FusedLayer.apply(S, float(lam), float(shift), delta, upper)
