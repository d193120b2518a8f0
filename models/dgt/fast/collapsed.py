"""The collapsed linear stack: every tree's parameters in one flat buffer, the split values
z = P̃ x̃ with P̃ the product of the layers, and the exact layer gradients from M̃ = Gᵀ X̃ (see
:mod:`models.dgt.fast`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import Tensor

from models.dgt.network import DGTNetwork


class FlatParameters:
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


def parameter_shapes(net: DGTNetwork) -> list[tuple[int, ...]]:
    """Parameter shapes: W̃₁ = [W₁ | b₁], then W_k, b_k for k ≥ 2, then the leaf table Θ."""
    layers = net.layers
    shapes: list[tuple[int, ...]] = [(layers[0].out_features, layers[0].in_features + 1)]
    for layer in layers[1:]:
        shapes += [(layer.out_features, layer.in_features), (layer.out_features,)]
    shapes.append(tuple(net.leaves.shape))
    return shapes


def stack_parameters(nets: Sequence[DGTNetwork], flat: FlatParameters) -> tuple[Tensor, list[Tensor]]:
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

    ``views``: the parameter views of :class:`FlatParameters` (W̃₁ (T, H₁, r), W_k (T, H_k, H_{k−1}),
    b_k (T, H_k), ..., Θ); ``grads``: views of the same shapes receiving the gradients.

    The ``"r"`` order keeps the chain transposed, Q̃_kᵀ (T, r, H_k), as :class:`SingleTree` does:
    Q̃_kᵀ = Q̃_{k−1}ᵀ W_kᵀ, ∂W_k = (∂Q̃_kᵀ)ᵀ Q̃_{k−1}ᵀ and ∂Q̃_{k−1}ᵀ = ∂Q̃_kᵀ W_k. Batched BLAS
    runs these skinny products (inner or outer size r) several times faster in that layout than
    W_k Q̃_{k−1} and W_kᵀ ∂Q̃_k (measured in the forest rows of ``benchmarks/paper/dgt_table4.py``); the arithmetic
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


def augment(X: Tensor) -> Tensor:
    return torch.cat([X, torch.ones(*X.shape[:-1], 1, dtype=X.dtype, device=X.device)], dim=-1)
