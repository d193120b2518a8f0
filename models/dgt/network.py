"""The DGT network: a complete oblique binary tree of height h written as a quantised network.

Karthikeyan, Jain, Natarajan & Jain (TMLR 2022), "Learning Accurate Decision Trees with Bandit
Feedback via Quantized Gradient Descent". The forward pass *is* the hard tree::

    x → L linear layers (no nonlinearity)      → z ∈ R^(2^h − 1)    one oblique split per node
      → sign, straight-through in backward     → s ∈ {±1}^(2^h − 1)
      → fixed AND matrix A                     → q = A s            q_l = h for the reached leaf only
      → one-hot argmax (softmax in backward)   → e_l*
      → leaf table Θ                           → f(x) = Θ[l*]

Conventions, chosen once and used by the AND matrix, the extracted tree and every view:

* Nodes in heap order (children of n are 2n+1 left and 2n+2 right), leaves 0..2^h−1 from left to
  right. ``A[l, n] = +1`` when leaf l lies in the right subtree of its ancestor n, ``-1`` in the
  left subtree, 0 when n is not on l's path (the paper's S(i, l)).
* **A node sends x right iff z = w·x + b > 0**, the shared Tree's convention (so z = 0 goes left,
  as scikit-learn's ``x <= t``). The paper sends z ≥ 0 right and the authors' code sends z ≥ 0
  left; the three agree except on the measure-zero set z = 0, and this choice makes the network
  and :class:`models.ground.tree.Tree` route every input, exact zeros included, to the same leaf.
* The forward leaf comes from the *unscaled* signs (``torch.sign(0) = 0``, and an all-zero batch
  giving fac = 0 would otherwise tie every leaf).

Quantisers (``quantizer``):

* ``"scaled"`` — the authors' ``ScaleBinarizer1`` used for all of the paper's numbers: the signs
  are multiplied by fac = mean |z| over the batch and nodes (detached), so the backward softmax
  runs at temperature 1/fac, and the straight-through gradient is 2·1[|z| ≤ 1].
* ``"plain"`` — the paper's Algorithm 2: fac = 1 and gradient 1[|z| ≤ 1].
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import torch
from torch import Tensor, nn

QUANTIZERS = ("scaled", "plain")

#: Hidden width per layer as a multiple of 2^h − 1 (the paper's Table 12 for L = 3: h = 2 → 240,
#: 4 → 600, 6 → 1008, 8 → 1530, 10 → 2046). Odd heights take the multiplier of h + 1, heights
#: above 10 take 2.
_TABLE12_MULTIPLIER = {1: 80, 2: 80, 3: 40, 4: 40, 5: 16, 6: 16, 7: 6, 8: 6, 9: 2, 10: 2}


def n_internal(height: int) -> int:
    return 2 ** int(height) - 1


def hidden_widths(height: int, n_layers: int, multiplier: float | None = None) -> list[int]:
    """Widths of the L − 1 hidden layers: ``multiplier``·(2^h − 1) each (Table 12's multiplier by
    default). ``n_layers = 1`` is a plain tree (no hidden layer)."""
    if n_layers <= 1:
        return []
    m = _TABLE12_MULTIPLIER.get(int(height), 2) if multiplier is None else float(multiplier)
    width = max(1, round(m * n_internal(height)))
    return [width] * (int(n_layers) - 1)


def and_matrix(height: int) -> np.ndarray:
    """The fixed AND matrix A, shape (2^h, 2^h − 1), entries in {−1, 0, +1}, h non-zeros per row:
    ``A[l, n]`` is +1 if leaf l is in the right subtree of node n, −1 if in the left subtree."""
    h = int(height)
    if h < 1:
        raise ValueError("The tree height must be at least 1.")
    n_nodes, n_leaves = n_internal(h), 2**h
    A = np.zeros((n_leaves, n_nodes), dtype=np.int8)
    for leaf in range(n_leaves):
        node = 0
        for level in range(h):
            right = (leaf >> (h - 1 - level)) & 1
            A[leaf, node] = 1 if right else -1
            node = 2 * node + 1 + right
    return A


def route(weight: np.ndarray, bias: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The leaf (0..2^h − 1) each row of X reaches in the hard tree with splits ``weight`` (n_nodes,
    d) and ``bias`` (n_nodes,), going right iff w·x + b > 0. Computed in float64."""
    n_nodes = weight.shape[0]
    height = round(math.log2(n_nodes + 1))
    Z = np.asarray(X, dtype=np.float64) @ np.asarray(weight, dtype=np.float64).T + np.asarray(bias, np.float64)
    node = np.zeros(Z.shape[0], dtype=np.int64)
    rows = np.arange(Z.shape[0])
    for _ in range(height):
        node = 2 * node + 1 + (Z[rows, node] > 0)
    return node - n_nodes


class _ScaledSign(torch.autograd.Function):
    """Forward ``fac · sign(z)`` with sign(0) = −1 (z = 0 goes left); backward
    ``gscale · 1[|z| ≤ 1] · grad`` (the hard-tanh straight-through estimator)."""

    @staticmethod
    def forward(ctx, z: Tensor, fac: Tensor, gscale: float) -> Tensor:
        ctx.save_for_backward(z)
        ctx.gscale = gscale
        return torch.where(z > 0, fac, -fac)

    @staticmethod
    def backward(ctx, grad: Tensor):
        (z,) = ctx.saved_tensors
        return grad * (z.abs() <= 1).to(grad.dtype) * ctx.gscale, None, None


def scaled_sign(z: Tensor, quantizer: str = "scaled", *, per_row: bool = False) -> Tensor:
    """The quantised split values s (see the module docstring for the two quantisers). With
    ``per_row`` the scale mean |z| is taken per row, so a batch of B rows gives exactly the values
    and gradients of B batches of one row (the bandit learner's rounds)."""
    if quantizer == "scaled":
        fac = z.detach().abs().mean(dim=1, keepdim=True) if per_row else z.detach().abs().mean()
        return _ScaledSign.apply(z, fac, 2.0)
    return _ScaledSign.apply(z, torch.ones((), dtype=z.dtype, device=z.device), 1.0)


class DGTNetwork(nn.Module):
    """The tree as a network: ``predicate`` (L linear layers), the AND buffer ``A`` and the leaf
    table ``leaves`` (2^h, K). ``forward`` returns the hard prediction Θ[l*] (with the
    straight-through gradients) and the leaf index l*.

    Initialisation as the authors' code: PyTorch's default weights, zero predicate biases (so the
    straight-through window |z| ≤ 1 is open at the start), Θ uniform in ±1/√(2^h).
    """

    def __init__(self, n_features: int, height: int, n_outputs: int, *, n_layers: int = 1,
                 width_multiplier: float | None = None, quantizer: str = "scaled",
                 generator: torch.Generator | None = None, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if quantizer not in QUANTIZERS:
            raise ValueError(f"quantizer must be one of {QUANTIZERS}")
        self.height, self.quantizer = int(height), quantizer
        sizes = [int(n_features), *hidden_widths(height, n_layers, width_multiplier), n_internal(height)]
        layers = []
        for fan_in, fan_out in itertools.pairwise(sizes):
            layer = nn.Linear(fan_in, fan_out, dtype=dtype)
            bound = 1.0 / math.sqrt(fan_in)  # PyTorch's default kaiming-uniform(a=√5) bound
            with torch.no_grad():
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.zero_()
            layers.append(layer)
        self.predicate = nn.Sequential(*layers)
        self.register_buffer("A", torch.as_tensor(and_matrix(height), dtype=dtype))
        n_leaves = 2 ** self.height
        leaves = torch.empty(n_leaves, int(n_outputs), dtype=dtype)
        bound = 1.0 / math.sqrt(n_leaves)
        leaves.uniform_(-bound, bound, generator=generator)
        self.leaves = nn.Parameter(leaves)

    @property
    def layers(self) -> list[nn.Linear]:
        return list(self.predicate)

    def split_values(self, x: Tensor) -> Tensor:
        """z = W^(L)…W^(1) x + biases: (B, 2^h − 1)."""
        return self.predicate(x)

    def leaf_index(self, z: Tensor) -> Tensor:
        """l* from the unscaled signs: route right iff z > 0, h steps down the heap."""
        node = torch.zeros(z.shape[0], dtype=torch.long, device=z.device)
        for _ in range(self.height):
            node = 2 * node + 1 + (z.gather(1, node[:, None])[:, 0] > 0).long()
        return node - (2 ** self.height - 1)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        return self.head(self.split_values(x))

    def head(self, z: Tensor, *, per_row: bool = False) -> tuple[Tensor, Tensor]:
        """From split values z to (prediction Θ[l*], l*), with the straight-through gradients
        (``per_row``: see :func:`scaled_sign`)."""
        leaf = self.leaf_index(z.detach())
        if not torch.is_grad_enabled():
            return self.leaves[leaf], leaf
        s = scaled_sign(z, self.quantizer, per_row=per_row)
        p = torch.softmax(s @ self.A.T, dim=1)
        # The argmax straight-through estimator: the value is Θ[l*] exactly (a one-hot row times Θ),
        # the gradient reaches q through the softmax, as if o = onehot(l*) + p − p.detach().
        return self.leaves[leaf] + (p - p.detach()) @ self.leaves, leaf

    def regularised_parameters(self) -> list[Tensor]:
        """The predicate layers' weights and biases (the ℓ1/ℓ2 penalty's scope; never Θ or A)."""
        return [p for layer in self.layers for p in (layer.weight, layer.bias)]

    @torch.no_grad()
    def collapse(self) -> tuple[np.ndarray, np.ndarray]:
        """One hyperplane per node: W̃ = W^(L)…W^(1) and b̃ (every layer's bias pushed through the
        later weights), in float64 on the CPU. Shapes (2^h − 1, d) and (2^h − 1,)."""
        W, b = None, None
        for layer in self.layers:
            Wl = layer.weight.detach().cpu().double().numpy()
            bl = layer.bias.detach().cpu().double().numpy()
            if W is None:
                W, b = Wl, bl
            else:
                W, b = Wl @ W, Wl @ b + bl
        return W, b

    @torch.no_grad()
    def leaf_table(self) -> np.ndarray:
        return self.leaves.detach().cpu().double().numpy()
