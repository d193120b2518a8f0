"""DGT training at its algebraic limit: the collapsed linear stack, hand-written gradients, a fused
optimiser step, and T trees trained as one batched program.

The L split layers are linear with no nonlinearity between them, so with x̃ = [x, 1] the split
values are z = P̃ x̃ for one (2^h − 1) × (d + 1) matrix P̃ = [W̃ | c̃]. Writing the first layer as
W̃₁ = [W₁ | b₁] and Q̃_k = W_k Q̃_{k−1} + b_k e_rᵀ (e_r the last unit vector, r = d + 1), P̃ = Q̃_L.
The loss depends on the parameters only through z, so with G = ∂loss/∂z (B × n) everything the
backward pass needs from the batch is M̃ = Gᵀ X̃ (n × r), the only batch-sized product:

* ``"r"`` order (r ≤ n): ∂Q̃_L = M̃ and, for k = L … 2, ∂W_k = ∂Q̃_k Q̃_{k−1}ᵀ, ∂b_k = ∂Q̃_k e_r,
  ∂Q̃_{k−1} = W_kᵀ ∂Q̃_k; then ∂W̃₁ = ∂Q̃₁. Every product has inner size r.
* ``"n"`` order (n < r): with A_k = W_L ⋯ W_{k+1} (A_L = I) and S_k = M̃ Q̃_{k−1}ᵀ
  (S₂ = M̃ W̃₁ᵀ, S_{k+1} = S_k W_kᵀ + g b_kᵀ, g = M̃ e_r): ∂W_k = A_kᵀ S_k, ∂b_k = A_kᵀ g,
  ∂W̃₁ = A₁ᵀ M̃. Every product has inner size n.

These are the exact gradients of the layer-by-layer network (tested against autograd through the
separate layers in float64); the cost per step is O(Σ H_k H_{k−1} · min(r, n)) instead of
O(B · Σ H_k H_{k−1}) forward and backward.

The head (scaled sign with the straight-through window, the AND matrix, the argmax with the
softmax gradient) and the losses (mean squared error on the leaf values, cross-entropy on the leaf
scores, optionally row-weighted) are differentiated by hand as in :mod:`models.dgt.network`; the
optimiser step is the authors' recipe exactly as :func:`models.dgt.train.fit_network` applies it:
ℓ1 (or ℓ2) on every split layer's weights and biases, the gradient's global norm clipped, then
RMSprop, with the cosine-warm-restart learning rate stepped every 10 steps. On the CPU the penalty,
the clip and the RMSprop update run as one compiled pass over each tree's parameters (two sweeps:
norm, then update; for the ℓ1-only recipe the norm reads sign(w) from an int8 copy); elsewhere as
torch operations. One tree on the CPU runs the products as two-dimensional products into buffers
allocated once (:class:`SingleTree`).

T trees of equal shapes (a DGT forest's trees) are stacked on a leading dimension and trained
together with batched matrix products: every tree keeps its own data, batches, permutation
generator, learning state, validation and best epoch, so each is the tree that training it alone
would give (to float rounding).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor

from models.denormals import flush_denormals
from models.dgt.network import DGTNetwork
from models.dgt.train import SCHEDULER_EVERY, TrainConfig, restart_period
from models.ground.errors import TreevizError

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

LOSSES = ("mse", "ce")
#: torch's clip_grad_norm_ adds this to the norm before dividing.
_CLIP_EPS = 1e-6
_ALPHA = 0.99


@dataclass
class TreeData:
    """One tree's tensors: training rows X (m, d), targets Y (m, K) float or (m,) class indices,
    optional row weights W (m,), optional validation rows."""

    X: Tensor
    Y: Tensor
    W: Tensor | None = None
    X_val: Tensor | None = None
    Y_val: Tensor | None = None


@dataclass
class TreeJob:
    """One tree ready to train: its initial network, data, settings, batch-order generator, loss
    (``"mse"`` or ``"ce"``), validation function and device (``X_all``: the rows whose leaves the
    fitted tree marks as reached)."""

    net: DGTNetwork
    data: TreeData
    config: TrainConfig
    generator: torch.Generator
    loss: str
    validation: Callable[[Tensor, Tensor], dict[str, float]]
    device: str
    X_all: Any = None

    def trains_faster_alone(self) -> bool:
        """Whether this tree trains faster alone than stacked with others: on the CPU (with the
        compiled optimiser step) a tree of two or more layers takes the single-tree path
        (:class:`SingleTree`), whose two-dimensional products beat the batched ones per tree
        (measured in ``benchmarks/dgt_forest.py``)."""
        r = self.data.X.shape[1] + 1
        n = 2 ** self.net.height - 1
        return (HAVE_NUMBA and torch.device(self.device).type == "cpu" and len(self.net.layers) > 1
                and cheapest_order(r, n) == "r")

    def shape_key(self) -> tuple:
        """Jobs with equal keys can train as one batched program."""
        d = self.data
        return (tuple(d.X.shape), tuple(d.Y.shape), d.W is None,
                None if d.X_val is None else tuple(d.X_val.shape), self.config, self.loss, self.device,
                tuple(tuple(p.shape) for p in self.net.parameters()), self.net.quantizer)


def train_jobs(jobs: Sequence[TreeJob], *, record: Callable[[list[dict[str, Any]]], bool],
               stop: Callable[[], bool] = lambda: False) -> list[dict[str, Any]]:
    """Train jobs of equal :meth:`TreeJob.shape_key` together (see :func:`fit_stack`)."""
    if len({job.shape_key() for job in jobs}) != 1:
        raise ValueError("train_jobs needs jobs of equal shapes and settings")
    return fit_stack([j.net for j in jobs], [j.data for j in jobs], jobs[0].loss, jobs[0].config,
                     generators=[j.generator for j in jobs], record=record, validation=jobs[0].validation,
                     stop=stop)


# ---------------------------------------------------------------------------- the fused optimiser step
if HAVE_NUMBA:
    # error_model="numpy" (no division-by-zero checks) and fastmath let LLVM vectorise the sweeps;
    # fastmath only reorders the norm's sum and may use a reciprocal for the division, which
    # changes the last bits, never the method. Each sweep is its own function over one contiguous
    # slice, which LLVM vectorises (written inline in one loop nest, it did not).
    @njit(inline="always")
    def _penalised(w, g, i, lam1, lam2):  # pragma: no cover - compiled
        """g[i] plus the penalty's gradient at w[i]: λ2·w + λ1·sign(w). Inlined into each sweep
        (before compilation), so each stays one vectorisable loop with the sweep's fastmath."""
        wi = w[i]
        s = lam2 * wi
        if wi > 0:
            s += lam1
        elif wi < 0:
            s -= lam1
        return g[i] + s

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _sweep_norm(w, g, lam1, lam2):  # pragma: no cover - compiled
        acc = 0.0
        for i in range(w.shape[0]):
            gi = _penalised(w, g, i, lam1, lam2)
            acc += gi * gi
        return acc

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _sweep_rmsprop(w, g, sq, lam1, lam2, c, a, b, e, step):  # pragma: no cover - compiled
        for i in range(w.shape[0]):
            wi = w[i]
            gi = _penalised(w, g, i, lam1, lam2) * c
            v = a * sq[i] + b * gi * gi
            sq[i] = v
            w[i] = wi - step * gi / (np.sqrt(v) + e)

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _sweep_momentum(w, g, sq, buf, lam1, lam2, c, a, b, e, step, mu):  # pragma: no cover - compiled
        for i in range(w.shape[0]):
            wi = w[i]
            gi = _penalised(w, g, i, lam1, lam2) * c
            v = a * sq[i] + b * gi * gi
            sq[i] = v
            m = mu * buf[i] + gi / (np.sqrt(v) + e)
            buf[i] = m
            w[i] = wi - step * m

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _sweep_norm_signs(sgn, g, lam1):  # pragma: no cover - compiled
        """:func:`_sweep_norm` for the ℓ1 penalty alone, reading sign(w) from an int8 copy: the
        sweep is bound by memory, and a byte per weight instead of four cuts its traffic."""
        f = g.dtype.type
        acc = 0.0
        for i in range(g.shape[0]):
            gi = g[i] + lam1 * f(sgn[i])
            acc += gi * gi
        return acc

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _sweep_rmsprop_signs(w, g, sq, sgn, lam1, c, a, b, e, step):  # pragma: no cover - compiled
        """:func:`_sweep_rmsprop` for the ℓ1 penalty alone (the same arithmetic), also writing
        sign(w) after the step."""
        f = w.dtype.type
        for i in range(w.shape[0]):
            gi = (g[i] + lam1 * f(sgn[i])) * c
            v = a * sq[i] + b * gi * gi
            sq[i] = v
            wn = w[i] - step * gi / (np.sqrt(v) + e)
            w[i] = wn
            sgn[i] = 1 if wn > 0 else (-1 if wn < 0 else 0)

    @njit(cache=True, nogil=True)
    def _fused_update(w, g, sq, buf, offsets, sizes, penalised, n_trees, l1, l2, clip, lr, alpha, eps,
                      momentum, norms, signs):  # pragma: no cover - compiled
        """In place, per tree t: g += l1·sign(w) or l2·w on the penalised blocks; g *= min(1,
        clip / (‖g‖ + 1e-6)) when clip > 0; sq = α·sq + (1 − α)·g²; w −= lr·g / (√sq + eps)
        (through the momentum buffer when momentum > 0). Block j of the flat arrays holds every
        tree's copy of one parameter: tree t's elements are offsets[j] + t·sizes[j] + [0, sizes[j]).
        Two sweeps: the norms (reading w and g), then the update (the penalty added again; g itself
        is left as the loss's gradient). ``signs``: empty, or sign(w) as int8 (as long as w), for
        the ℓ1 penalty without ℓ2 or momentum (the paper's recipe): the norm sweep of a penalised
        block then reads a byte per weight instead of the weight, and the update keeps the signs
        current."""
        f = w.dtype.type
        use_signs = signs.shape[0] > 0
        for t in range(n_trees):
            norms[t] = 0.0
        for j in range(offsets.shape[0]):
            size = sizes[j]
            lam1, lam2 = f(l1 if penalised[j] else 0.0), f(l2 if penalised[j] else 0.0)
            for t in range(n_trees):
                lo = offsets[j] + t * size
                if use_signs and penalised[j]:
                    norms[t] += _sweep_norm_signs(signs[lo:lo + size], g[lo:lo + size], lam1)
                else:
                    norms[t] += _sweep_norm(w[lo:lo + size], g[lo:lo + size], lam1, lam2)
        for t in range(n_trees):
            norms[t] = math.sqrt(norms[t])
        for j in range(offsets.shape[0]):
            size = sizes[j]
            lam1, lam2 = f(l1 if penalised[j] else 0.0), f(l2 if penalised[j] else 0.0)
            for t in range(n_trees):
                lo = offsets[j] + t * size
                c = f(min(1.0, clip / (norms[t] + 1e-6)) if clip > 0.0 else 1.0)
                if use_signs and penalised[j]:
                    _sweep_rmsprop_signs(w[lo:lo + size], g[lo:lo + size], sq[lo:lo + size], signs[lo:lo + size],
                                         lam1, c, f(alpha), f(1.0 - alpha), f(eps), f(lr))
                elif momentum > 0.0:
                    _sweep_momentum(w[lo:lo + size], g[lo:lo + size], sq[lo:lo + size], buf[lo:lo + size], lam1,
                                    lam2, c, f(alpha), f(1.0 - alpha), f(eps), f(lr), f(momentum))
                else:
                    _sweep_rmsprop(w[lo:lo + size], g[lo:lo + size], sq[lo:lo + size], lam1, lam2, c, f(alpha),
                                   f(1.0 - alpha), f(eps), f(lr))


    @njit(cache=True, nogil=True)
    def _descend(z, leaf):  # pragma: no cover - compiled
        """leaf[t, b]: the leaf row b of tree t reaches, right iff z > 0, down the heap."""
        T, B, n = z.shape
        for t in range(T):
            for b in range(B):
                node = 0
                while node < n:
                    node = 2 * node + 1 + (1 if z[t, b, node] > 0 else 0)
                leaf[t, b] = node - n

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def _fused_head(z, leaves, y, labels, w, use_w, ce, scaled, gscale, G, grad_leaves, losses,
                    windows):  # pragma: no cover - compiled
        """:func:`head_forward`, :func:`loss_and_grad` and :func:`head_backward` for every tree and
        row in one pass: G = ∂loss/∂z (T, B, n), ∂loss/∂Θ, the loss and the open-window fraction
        per tree. The leaf is found by descending the heap; q for every leaf and ∂s from ∂q by
        one sweep over the heap each (a child counts whether it disagrees with its parent's sign;
        a node's ∂s is its right subtree's ∂q minus its left's)."""
        T, B, n = z.shape
        n_leaves, K = leaves.shape[1], leaves.shape[2]
        qv = np.empty(2 * n + 1, dtype=np.float64)
        sub = np.empty(2 * n + 1, dtype=np.float64)
        miss = np.empty(2 * n + 1, dtype=np.int64)
        height = 0
        while (1 << height) < n_leaves:
            height += 1
        table = np.empty(height + 1, dtype=np.float64)
        theta = np.empty((K, n_leaves), dtype=np.float64)
        dout = np.empty(K, dtype=np.float64)
        for t in range(T):
            fac = 1.0
            if scaled:
                acc = 0.0
                for b in range(B):
                    for j in range(n):
                        acc += abs(z[t, b, j])
                fac = acc / (B * n)
            for k in range(height + 1):
                table[k] = math.exp(-2.0 * fac * k)
            for i in range(n_leaves):
                for k in range(K):
                    theta[k, i] = leaves[t, i, k]
            wsum = 0.0
            if use_w:
                for b in range(B):
                    wsum += w[t, b]
            for i in range(n_leaves):
                for k in range(K):
                    grad_leaves[t, i, k] = 0.0
            total = 0.0
            opened = 0.0
            for b in range(B):
                rw = w[t, b] / wsum if use_w else 1.0 / B
                zb, Gb = z[t, b], G[t, b]
                node = 0
                while node < n:
                    node = 2 * node + 1 + (1 if zb[node] > 0 else 0)
                leaf = node - n
                # q_l = h − 2·(the nodes on l's path where l's side disagrees with the sign), so
                # softmax(fac·q) needs only the h + 1 values exp(−2·fac·k), k = 0 … h
                miss[0] = 0
                for j in range(n):
                    right = 1 if zb[j] > 0 else 0
                    miss[2 * j + 1] = miss[j] + right
                    miss[2 * j + 2] = miss[j] + 1 - right
                norm = 0.0
                for i in range(n_leaves):
                    e = table[miss[n + i]]
                    sub[n + i] = e
                    norm += e
                if ce:
                    best = -np.inf
                    for k in range(K):
                        best = max(best, leaves[t, leaf, k])
                    lse = 0.0
                    for k in range(K):
                        lse += math.exp(leaves[t, leaf, k] - best)
                    lse = best + math.log(lse)
                    c = labels[t, b]
                    total += rw * (lse - leaves[t, leaf, c])
                    for k in range(K):
                        dout[k] = rw * (math.exp(leaves[t, leaf, k] - lse) - (1.0 if k == c else 0.0))
                else:
                    sq = 0.0
                    for k in range(K):
                        diff = leaves[t, leaf, k] - y[t, b, k]
                        sq += diff * diff
                        dout[k] = rw * 2.0 * diff / K
                    total += rw * sq / K
                for k in range(K):
                    grad_leaves[t, leaf, k] += dout[k]
                # p (in sub[n:]), ∂p = ∂out Θᵀ (in qv[n:]), ∂q = p ⊙ (∂p − ⟨∂p, p⟩); loops over
                # the leaves innermost, so that they vectorise
                for i in range(n_leaves):
                    qv[n + i] = 0.0
                for k in range(K):
                    dk = dout[k]
                    for i in range(n_leaves):
                        qv[n + i] += dk * theta[k, i]
                inner = 0.0
                for i in range(n_leaves):
                    p = sub[n + i] / norm
                    sub[n + i] = p
                    inner += qv[n + i] * p
                for i in range(n_leaves):
                    sub[n + i] = sub[n + i] * (qv[n + i] - inner)
                for j in range(n - 1, -1, -1):  # branch-free: the window is open about half the time
                    right, left = sub[2 * j + 2], sub[2 * j + 1]
                    sub[j] = left + right
                    inside = 1.0 if abs(zb[j]) <= 1.0 else 0.0
                    Gb[j] = gscale * (right - left) * inside
                    opened += inside
            losses[t] = total
            windows[t] = opened / (B * n)


class _Flat:
    """Every tree's parameters in one flat buffer, block-major: block j holds all T copies of
    parameter j contiguously, so ``views[j]`` is a contiguous (T, *shape_j) tensor."""

    def __init__(self, shapes: Sequence[tuple[int, ...]], n_trees: int, dtype: torch.dtype, device: str) -> None:
        self.shapes = [tuple(s) for s in shapes]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        # every block starts on a 64-byte boundary (16 float32s), which the matrix products prefer
        spans = [-(-n_trees * s // 16) * 16 for s in self.sizes]
        self.offsets = np.cumsum([0, *spans])[:-1].astype(np.int64)
        self.n_trees = n_trees
        self.total = int(sum(spans))
        self.dtype, self.device = dtype, device

    def new(self) -> tuple[Tensor, list[Tensor]]:
        flat = torch.zeros(self.total, dtype=self.dtype, device=self.device)
        return flat, self.views(flat)

    def views(self, flat: Tensor) -> list[Tensor]:
        return [flat[o:o + self.n_trees * s].view(self.n_trees, *shape)
                for o, s, shape in zip(self.offsets, self.sizes, self.shapes)]


def _layout(net: DGTNetwork) -> list[tuple[int, ...]]:
    """Parameter shapes: W̃₁ = [W₁ | b₁], then W_k, b_k for k ≥ 2, then the leaf table Θ."""
    layers = net.layers
    shapes: list[tuple[int, ...]] = [(layers[0].out_features, layers[0].in_features + 1)]
    for layer in layers[1:]:
        shapes += [(layer.out_features, layer.in_features), (layer.out_features,)]
    shapes.append(tuple(net.leaves.shape))
    return shapes


def stack_parameters(nets: Sequence[DGTNetwork], flat: _Flat) -> tuple[Tensor, list[Tensor]]:
    buffer, views = flat.new()
    with torch.no_grad():
        for t, net in enumerate(nets):
            for dst, src in zip(views, _tree_tensors(net)):
                dst[t].copy_(src)
    return buffer, views


def _tree_tensors(net: DGTNetwork) -> list[Tensor]:
    layers = net.layers
    out = [torch.cat([layers[0].weight, layers[0].bias[:, None]], dim=1)]
    for layer in layers[1:]:
        out += [layer.weight, layer.bias]
    return [*out, net.leaves]


def unstack_parameters(views: Sequence[Tensor], nets: Sequence[DGTNetwork]) -> None:
    """Write tree t's parameters from the stacked ``views`` back into ``nets[t]``."""
    with torch.no_grad():
        for t, net in enumerate(nets):
            layers = net.layers
            d = layers[0].in_features
            layers[0].weight.copy_(views[0][t][:, :d])
            layers[0].bias.copy_(views[0][t][:, d])
            for k, layer in enumerate(layers[1:]):
                layer.weight.copy_(views[1 + 2 * k][t])
                layer.bias.copy_(views[2 + 2 * k][t])
            net.leaves.copy_(views[-1][t])


def cheapest_order(r: int, n: int) -> str:
    """The multiplication order of the collapsed gradients: inner size r = d + 1 or n = 2^h − 1."""
    return "r" if r <= n else "n"


class CollapsedStack:
    """The collapsed forward P̃ and the exact layer gradients from M̃ = Gᵀ X̃, for T stacked trees.

    ``views``: the parameter views of :class:`_Flat` (W̃₁ (T, H₁, r), W_k (T, H_k, H_{k−1}),
    b_k (T, H_k), ..., Θ); ``grads``: views of the same shapes receiving the gradients.

    The ``"r"`` order keeps the chain transposed, Q̃_kᵀ (T, r, H_k), as :class:`SingleTree` does:
    Q̃_kᵀ = Q̃_{k−1}ᵀ W_kᵀ, ∂W_k = (∂Q̃_kᵀ)ᵀ Q̃_{k−1}ᵀ and ∂Q̃_{k−1}ᵀ = ∂Q̃_kᵀ W_k. Batched BLAS
    runs these skinny products (inner or outer size r) several times faster in that layout than
    W_k Q̃_{k−1} and W_kᵀ ∂Q̃_k (measured in ``benchmarks/dgt.py``'s forest rows); the arithmetic
    is the same. :meth:`forward` returns P̃ as a view of Q̃_Lᵀ, so ``P.transpose(1, 2)`` is
    contiguous, and :meth:`backward` reads ∂Q̃_Lᵀ as ``M.transpose(1, 2)``: pass M̃ as the
    transposed view of X̃ᵀ G (see :meth:`gradient_input`) to keep that contiguous too."""

    def __init__(self, views: Sequence[Tensor], order: str | None = None) -> None:
        self.views = list(views)
        self.n_layers = (len(self.views) - 2) // 2 + 1
        r = self.views[0].shape[2]
        n = self.views[-2].shape[1] if self.n_layers > 1 else self.views[0].shape[1]  # 2^h − 1
        self.order = cheapest_order(r, n) if order is None else order

    def _W(self, k: int) -> Tensor:  # k ≥ 2
        return self.views[1 + 2 * (k - 2)]

    def _b(self, k: int) -> Tensor:
        return self.views[2 + 2 * (k - 2)]

    def gradient_input(self, G: Tensor, x: Tensor, out: Tensor | None = None) -> Tensor:
        """M̃ = Gᵀ X̃ (T, n, r) for :meth:`backward` from G (T, B, n) and the batch X̃ (T, B, r):
        in the ``"r"`` order of two or more layers, the transposed view of X̃ᵀ G (T, r, n), the
        layout :meth:`backward` reads; otherwise Gᵀ X̃ itself, into ``out`` when given (for L = 1,
        ∂W̃₁ is M̃: pass the gradient view)."""
        if self.order == "r" and self.n_layers > 1:
            return torch.bmm(x.transpose(1, 2), G).transpose(1, 2)
        return torch.bmm(G.transpose(1, 2), x, out=out)

    def forward(self) -> Tensor:
        """P̃ (T, n, r), keeping what the backward pass needs."""
        L, W1 = self.n_layers, self.views[0]
        if L == 1:
            return W1
        if self.order == "r":
            Qt = [W1.transpose(1, 2)]
            for k in range(2, L + 1):
                q = torch.bmm(Qt[-1], self._W(k).transpose(1, 2))  # Q̃_kᵀ (T, r, H_k)
                q[:, -1, :] += self._b(k)
                Qt.append(q)
            self._Qt = Qt
            return Qt[-1].transpose(1, 2)
        # "n": A_k = W_L ⋯ W_{k+1}, from A_{L−1} = W_L down to A_1
        A: dict[int, Tensor] = {L - 1: self._W(L)}
        for k in range(L - 1, 1, -1):
            A[k - 1] = torch.bmm(A[k], self._W(k))
        self._A = A
        P = torch.bmm(A[1], W1)
        shift = self._b(L).clone()
        for k in range(2, L):
            shift += torch.bmm(A[k], self._b(k)[:, :, None])[:, :, 0]
        P[:, :, -1] += shift
        return P

    def backward(self, M: Tensor, grads: Sequence[Tensor]) -> None:
        """The layer gradients from M̃ = Gᵀ X̃ (T, n, r), written into ``grads`` (Θ's excepted)."""
        L = self.n_layers
        if L == 1:
            if M.data_ptr() != grads[0].data_ptr():
                grads[0].copy_(M)
            return
        if self.order == "r":
            dQt = M.transpose(1, 2)  # ∂Q̃_Lᵀ (T, r, n)
            for k in range(L, 1, -1):
                torch.bmm(dQt.transpose(1, 2), self._Qt[k - 2], out=grads[1 + 2 * (k - 2)])
                grads[2 + 2 * (k - 2)].copy_(dQt[:, -1, :])
                dQt = torch.bmm(dQt, self._W(k))  # ∂Q̃_{k−1}ᵀ (T, r, H_{k−1})
            grads[0].copy_(dQt.transpose(1, 2))
            return
        W1, A = self.views[0], self._A
        g = M[:, :, -1:]  # (T, n, 1)
        S = torch.bmm(M, W1.transpose(1, 2))  # S₂ = M̃ W̃₁ᵀ (T, n, H₁)
        for k in range(2, L + 1):
            gW, gb = grads[1 + 2 * (k - 2)], grads[2 + 2 * (k - 2)]
            if k == L:
                gW.copy_(S)
                gb.copy_(g[:, :, 0])
            else:
                At = A[k].transpose(1, 2)
                torch.bmm(At, S, out=gW)
                torch.bmm(At, g, out=gb[:, :, None])
                S = torch.baddbmm(torch.bmm(g, self._b(k)[:, None, :]), S, self._W(k).transpose(1, 2))
        torch.bmm(A[1].transpose(1, 2), M, out=grads[0])


class SingleTree:
    """One tree's collapsed forward and exact gradients with two-dimensional matrix products into
    preallocated buffers (the ``"r"`` order, L ≥ 2): the path of a single tree on the CPU.

    It keeps the transposed chain Q̃_kᵀ (r × H_k), because the products then take the layouts the
    CPU's BLAS runs fastest at these skinny shapes (inner or outer size r): Q̃_kᵀ = Q̃_{k−1}ᵀ W_kᵀ,
    ∂W_k = (∂Q̃_kᵀ)ᵀ Q̃_{k−1}ᵀ and ∂Q̃_{k−1}ᵀ = ∂Q̃_kᵀ W_k, every one written with ``out=`` so a
    step allocates nothing. The arithmetic is that of :class:`CollapsedStack` (same products, same
    gradients); only the memory layout differs. P̃ is recomputed only when the parameters have
    changed (the caller sets ``stale``), so the validation pass and the next step share one
    forward."""

    def __init__(self, views: Sequence[Tensor], grads: Sequence[Tensor]) -> None:
        v = [x[0] for x in views]
        g = [x[0] for x in grads]
        self.n_layers = L = (len(v) - 2) // 2 + 1
        self.W1, self.gW1 = v[0], g[0]
        self.W = [v[1 + 2 * (k - 2)] for k in range(2, L + 1)]
        self.b = [v[2 + 2 * (k - 2)] for k in range(2, L + 1)]
        self.gW = [g[1 + 2 * (k - 2)] for k in range(2, L + 1)]
        self.gb = [g[2 + 2 * (k - 2)] for k in range(2, L + 1)]
        r, dtype = self.W1.shape[1], self.W1.dtype
        # Qt[0] = W̃₁ᵀ (a view), Qt[k−1] = Q̃_kᵀ (r × H_k); dQt likewise for the gradients
        self.Qt = [self.W1.T] + [torch.empty(r, W.shape[0], dtype=dtype) for W in self.W]
        self.dQt = [torch.empty(r, W.shape[1], dtype=dtype) for W in self.W] + \
            [torch.empty(r, self.W[-1].shape[0], dtype=dtype)]
        self._gW1_np, self._dQ1t_np = self.gW1.numpy(), self.dQt[0].numpy()
        self.stale = True

    def forward(self) -> Tensor:
        """P̃ᵀ (r × n): the split values of rows x̃ are x̃ P̃ᵀ."""
        if self.stale:
            for k, (W, b) in enumerate(zip(self.W, self.b)):
                torch.mm(self.Qt[k], W.T, out=self.Qt[k + 1])
                self.Qt[k + 1][-1].add_(b)
            self.stale = False
        return self.Qt[-1]

    def backward(self, x: Tensor, G: Tensor) -> None:
        """The layer gradients from the batch x̃ (B × r) and G = ∂loss/∂z (B × n), into the grads."""
        dQt = self.dQt
        torch.mm(x.T, G, out=dQt[-1])  # M̃ᵀ = X̃ᵀ G
        for k in range(self.n_layers - 2, -1, -1):  # layer k + 2
            torch.mm(dQt[k + 1].T, self.Qt[k], out=self.gW[k])
            self.gb[k].copy_(dQt[k + 1][-1])
            torch.mm(dQt[k + 1], self.W[k], out=dQt[k])
        np.copyto(self._gW1_np, self._dQ1t_np.T)  # numpy's transposed copy is several times torch's here


def head_backward(z: Tensor, leaves: Tensor, A: Tensor, dout: Tensor, leaf: Tensor, p: Tensor,
                  gscale: float, grad_leaves: Tensor) -> tuple[Tensor, Tensor]:
    """∂loss/∂z (T, B, n) through the straight-through head, and ∂loss/∂Θ into ``grad_leaves``.

    The head's value is Θ[l*] and its gradient that of Θ[l*] + (p − p̄)Θ with p = softmax(s Aᵀ),
    s = fac·sign(z), p̄ = p detached: ∂Θ = onehot(l*)ᵀ ∂out (the p and p̄ terms cancel),
    ∂p = ∂out Θᵀ, ∂q = p ⊙ (∂p − ⟨∂p, p⟩), ∂s = ∂q A, ∂z = gscale·1[|z| ≤ 1] ⊙ ∂s. Also returns
    the straight-through window 1[|z| ≤ 1]."""
    onehot = torch.zeros_like(p).scatter_(2, leaf[:, :, None], 1.0)
    torch.bmm(onehot.transpose(1, 2), dout, out=grad_leaves)
    dp = torch.bmm(dout, leaves.transpose(1, 2))
    dq = p * (dp - (dp * p).sum(dim=2, keepdim=True))
    window = (z.abs() <= 1).to(z.dtype)
    return torch.matmul(dq, A).mul_(window).mul_(gscale), window


def head_forward(z: Tensor, leaves: Tensor, At: Tensor, quantizer: str, *, soft: bool = True
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
    """(Θ[l*] (T, B, K), l* (T, B), p (T, B, 2^h) or None) for split values z (T, B, n): the leaf
    from the unscaled signs (right iff z > 0; the reached leaf is the only one with q = h), the
    softmax at the scaled signs (fac = mean |z| per tree for ``"scaled"``, 1 for ``"plain"``)."""
    sgn = torch.where(z > 0, 1.0, -1.0).to(z.dtype)
    q = torch.matmul(sgn, At)
    leaf = q.argmax(dim=2)
    out = torch.gather(leaves, 1, leaf[:, :, None].expand(-1, -1, leaves.shape[2]))
    if not soft:
        return out, leaf, None
    if quantizer == "scaled":
        q = q * z.abs().mean(dim=(1, 2), keepdim=True)
    return out, leaf, torch.softmax(q, dim=2)


def loss_and_grad(kind: str, out: Tensor, y: Tensor, w: Tensor | None) -> tuple[Tensor, Tensor]:
    """Per-tree loss (T,) and ∂loss/∂out (T, B, K): ``"mse"`` the mean over outputs of the squared
    error, ``"ce"`` the cross-entropy of the scores; the mean over rows, or the w-weighted mean."""
    B, K = out.shape[1], out.shape[2]
    if kind == "mse":
        diff = out - y
        per_row = diff.pow(2).mean(dim=2)
        grad = diff * (2.0 / K)
    else:
        logp = torch.log_softmax(out, dim=2)
        per_row = -torch.gather(logp, 2, y[:, :, None])[:, :, 0]
        grad = logp.exp().scatter_add_(2, y[:, :, None], torch.full_like(per_row[:, :, None], -1.0))
    if w is None:
        return per_row.mean(dim=1), grad.mul_(1.0 / B)
    wn = w / w.sum(dim=1, keepdim=True)
    return (per_row * wn).sum(dim=1), grad.mul_(wn[:, :, None])


def _torch_update(views, grads, sq, buf, penalised, config: TrainConfig, lr: float) -> None:
    """The optimiser step of :func:`_fused_update` as torch operations (GPUs, and without numba)."""
    T = views[0].shape[0]
    sumsq = torch.zeros(T, dtype=views[0].dtype, device=views[0].device)
    for p, g, pen in zip(views, grads, penalised):
        if pen and config.l1_penalty > 0:
            g.add_(torch.sign(p), alpha=config.l1_penalty)
        elif pen and config.l2_penalty > 0:
            g.add_(p, alpha=config.l2_penalty)
        sumsq += g.reshape(T, -1).pow(2).sum(dim=1)
    if config.grad_clip > 0:
        coef = (config.grad_clip / (sumsq.sqrt() + _CLIP_EPS)).clamp(max=1.0)
    for p, g, s, m in zip(views, grads, sq, buf):
        if config.grad_clip > 0:
            g.mul_(coef.view(T, *([1] * (g.dim() - 1))))
        s.mul_(_ALPHA).addcmul_(g, g, value=1 - _ALPHA)
        avg = s.sqrt().add_(config.eps)
        if config.momentum > 0:
            m.mul_(config.momentum).addcdiv_(g, avg)
            p.add_(m, alpha=-lr)
        else:
            p.addcdiv_(g, avg, value=-lr)


def _stack(tensors: Sequence[Tensor | None]) -> Tensor | None:
    return None if tensors[0] is None else torch.stack(list(tensors))


def _augment(X: Tensor) -> Tensor:
    return torch.cat([X, torch.ones(*X.shape[:-1], 1, dtype=X.dtype, device=X.device)], dim=-1)


@flush_denormals
def fit_stack(nets: Sequence[DGTNetwork], data: Sequence[TreeData], loss: str, config: TrainConfig, *,
              generators: Sequence[torch.Generator],
              record: Callable[[list[dict[str, Any]]], bool],
              validation: Callable[[Tensor, Tensor], dict[str, float]],
              stop: Callable[[], bool] = lambda: False, order: str | None = None,
              fused: bool | None = None) -> list[dict[str, Any]]:
    """Train T networks of equal shapes on data of equal shapes, as one batched program, and leave
    each at its best validation epoch (its last epoch without validation rows).

    ``record(numbers)`` gets the epoch's list of per-tree records (as :func:`fit_network`'s) and
    returns False to stop; ``stop()``, asked before every step, ends training at once (the epoch
    is not recorded). ``generators[t]`` draws tree t's batch order. Returns each tree's
    ``{"best_epoch", "steps"}``. ``order`` forces the multiplication order, ``fused`` the compiled
    optimiser step (default: on the CPU when numba is present)."""
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}")
    if config.l1_penalty > 0 and config.l2_penalty > 0:
        raise TreevizError("Use an ℓ1 or an ℓ2 penalty, not both (the paper never combines them).")
    T = len(nets)
    net0 = nets[0]
    dtype, device = net0.leaves.dtype, net0.leaves.device
    X = _augment(torch.stack([d.X for d in data]))  # (T, m, r)
    Y = torch.stack([d.Y for d in data])
    if loss == "mse" and Y.dim() == 2:
        Y = Y[:, :, None]
    Wt = _stack([d.W for d in data])
    has_val = data[0].X_val is not None and data[0].X_val.shape[0] > 0
    X_val = _augment(torch.stack([d.X_val for d in data])) if has_val else None
    _, m, r = X.shape
    batch = max(1, min(int(config.batch_size), m))
    steps_per_epoch = math.ceil(m / batch)
    period = restart_period(config.epochs, steps_per_epoch)

    layout = _Flat(_layout(net0), T, dtype, str(device))
    flat, views = stack_parameters(nets, layout)
    gflat, grads = layout.new()
    sqflat, sq = layout.new()
    bufflat, buf = layout.new()
    penalised = np.array([True] * (len(views) - 1) + [False])
    best_flat = flat.clone()
    use_fused = HAVE_NUMBA and device.type == "cpu" if fused is None else bool(fused)
    if use_fused:
        np_w, np_g, np_sq, np_buf = (t.numpy() for t in (flat, gflat, sqflat, bufflat))
        offsets, sizes = layout.offsets, np.asarray(layout.sizes, dtype=np.int64)
        norms = np.zeros(T, dtype=np.float64)
        # sign(w) as int8 for the ℓ1-only recipe (the paper's), see _fused_update
        use_signs = config.l1_penalty > 0 and config.l2_penalty == 0 and config.momentum == 0
        np_signs = np.sign(np_w).astype(np.int8) if use_signs else np.zeros(0, dtype=np.int8)
        np_leaves, np_grad_leaves = views[-1].numpy(), grads[-1].numpy()
        np_losses, np_windows, np_total, np_open = (np.zeros(T) for _ in range(4))
        dummy_y = np.zeros((1, 1, 1), dtype=np_leaves.dtype)
        dummy_w = np.zeros((1, 1), dtype=np_leaves.dtype)
        dummy_labels = np.zeros((1, 1), dtype=np.int64)
    ce, scaled = loss == "ce", net0.quantizer == "scaled"
    stack = CollapsedStack(views, order)
    # one tree on the CPU: two-dimensional products into preallocated buffers
    single = SingleTree(views, grads) if (use_fused and T == 1 and stack.n_layers > 1 and stack.order == "r") \
        else None
    buffers: dict[int, tuple[Tensor, Tensor, np.ndarray, np.ndarray]] = {}

    def batch_buffers(rows: int) -> tuple[Tensor, Tensor, np.ndarray, np.ndarray]:
        if rows not in buffers:
            z_buf = torch.empty(1, rows, views[-2].shape[1], dtype=dtype)  # (1, B, n)
            G_buf = torch.empty_like(z_buf)
            buffers[rows] = (z_buf, G_buf, z_buf.numpy(), G_buf.numpy())
        return buffers[rows]
    At = net0.A.T.contiguous().to(dtype)
    A = net0.A.to(dtype)
    gscale = 2.0 if net0.quantizer == "scaled" else 1.0
    flat_rows = (torch.arange(T, device=device) * m)[:, None]
    X2, Y2 = X.reshape(T * m, r), Y.reshape(T * m, *Y.shape[2:])
    W2 = None if Wt is None else Wt.reshape(T * m)

    best = [math.inf] * T
    best_epoch = [0] * T
    step = 0
    scheduler_steps = 0

    def lr_now() -> float:
        t_cur = scheduler_steps % period
        return config.eta_min + (config.learning_rate - config.eta_min) * (1 + math.cos(math.pi * t_cur / period)) / 2

    stopped = False
    for epoch in range(1, int(config.epochs) + 1):
        start = time.perf_counter()
        total = torch.zeros(T, dtype=dtype, device=device)
        open_window = torch.zeros(T, dtype=dtype, device=device)
        order_rows = torch.stack([torch.randperm(m, generator=g) for g in generators]).to(device) + flat_rows
        # the epoch's rows in batch order, gathered once: every batch is then a slice
        idx = order_rows.reshape(-1)
        X_epoch = X2.index_select(0, idx).view(T, m, r)
        Y_epoch = Y2.index_select(0, idx).view(T, m, *Y.shape[2:])
        W_epoch = None if W2 is None else W2.index_select(0, idx).view(T, m)
        lr_epoch = lr_now()
        for lo in range(0, m, batch):
            if stop():
                stopped = True
                break
            lr = lr_now()
            xb = X_epoch[:, lo:lo + batch]
            yb = Y_epoch[:, lo:lo + batch]
            wb = None if W_epoch is None else W_epoch[:, lo:lo + batch]
            if single is not None:
                x2 = xb[0]
                z, G, np_z, np_G = batch_buffers(x2.shape[0])
                torch.mm(x2, single.forward(), out=z[0])
                _fused_head(np_z, np_leaves, dummy_y if ce else yb.numpy(), yb.numpy() if ce else dummy_labels,
                            dummy_w if wb is None else wb.numpy(), wb is not None, ce, scaled, gscale, np_G,
                            np_grad_leaves, np_losses, np_windows)
                np_total += np_losses
                np_open += np_windows
                single.backward(x2, G[0])
                _fused_update(np_w, np_g, np_sq, np_buf, offsets, sizes, penalised, T, config.l1_penalty,
                              config.l2_penalty, config.grad_clip, lr, _ALPHA, config.eps, config.momentum, norms,
                              np_signs)
                single.stale = True
                step += 1
                if step % SCHEDULER_EVERY == 0:
                    scheduler_steps += 1
                continue
            P = stack.forward()
            z = torch.bmm(xb, P.transpose(1, 2))
            if use_fused:
                G = torch.empty_like(z)
                _fused_head(z.numpy(), np_leaves, dummy_y if ce else yb.numpy(), yb.numpy() if ce else dummy_labels,
                            dummy_w if wb is None else wb.numpy(), wb is not None, ce, scaled, gscale, G.numpy(),
                            np_grad_leaves, np_losses, np_windows)
                np_total += np_losses
                np_open += np_windows
            else:
                out, leaf, p = head_forward(z, views[-1], At, net0.quantizer)
                value, dout = loss_and_grad(loss, out, yb, wb)
                total += value
                G, window = head_backward(z, views[-1], A, dout, leaf, p, gscale, grads[-1])
                open_window += window.mean(dim=(1, 2))
            # for L = 1, ∂W̃₁ is M̃ itself: written straight into its gradient
            M = stack.gradient_input(G, xb, out=grads[0] if stack.n_layers == 1 else None)
            stack.backward(M, grads)
            if use_fused:
                _fused_update(np_w, np_g, np_sq, np_buf, offsets, sizes, penalised, T, config.l1_penalty,
                              config.l2_penalty, config.grad_clip, lr, _ALPHA, config.eps, config.momentum, norms,
                              np_signs)
            else:
                _torch_update(views, grads, sq, buf, penalised, config, lr)
            step += 1
            if step % SCHEDULER_EVERY == 0:
                scheduler_steps += 1
        if stopped or stop():
            break
        if use_fused:
            total += torch.as_tensor(np_total, dtype=dtype)
            open_window += torch.as_tensor(np_open, dtype=dtype)
            np_total[:], np_open[:] = 0.0, 0.0
        losses = (total / steps_per_epoch).tolist()
        opened = (open_window / steps_per_epoch).tolist()
        for value in losses:
            if not math.isfinite(value):
                raise TreevizError(f"Training diverged at epoch {epoch} (the loss is not a finite number); lower the "
                                   f"learning rate (now {config.learning_rate:g}).")
        numbers = [{"epoch": epoch, "loss": losses[t], "lr": lr_epoch, "step": step, "ste_open": opened[t]}
                   for t in range(T)]
        if has_val:
            with torch.no_grad():
                if single is not None:
                    z_val = torch.mm(X_val[0], single.forward())[None]
                else:
                    z_val = torch.bmm(X_val, stack.forward().transpose(1, 2))
                if use_fused:
                    leaf = torch.empty(z_val.shape[:2], dtype=torch.long)
                    _descend(z_val.numpy(), leaf.numpy())
                    out = torch.gather(views[-1], 1, leaf[:, :, None].expand(-1, -1, views[-1].shape[2]))
                else:
                    out, _, _ = head_forward(z_val, views[-1], At, net0.quantizer, soft=False)
            for t in range(T):
                numbers[t].update(validation(out[t], data[t].Y_val))
                if numbers[t]["val_loss"] < best[t]:
                    best[t], best_epoch[t] = numbers[t]["val_loss"], epoch
                    for v, bv in zip(views, layout.views(best_flat)):
                        bv[t].copy_(v[t])
        else:
            best_epoch = [epoch] * T
        elapsed = time.perf_counter() - start
        for t in range(T):
            numbers[t]["best_epoch"] = best_epoch[t]
            numbers[t]["epoch_s"] = elapsed
        if not record(numbers):
            break
    final = views
    if has_val:  # a tree without a finite validation loss keeps its last parameters
        final = [torch.stack([(bv if best[t] < math.inf else v)[t] for t in range(T)]) for v, bv in
                 zip(views, layout.views(best_flat))]
    unstack_parameters(final, nets)
    for net in nets:
        net.eval()
    return [{"best_epoch": best_epoch[t], "steps": step} for t in range(T)]
