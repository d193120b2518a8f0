"""The soft tree ensemble as one tensor program: every split node of every tree in one matmul.

m perfect binary trees of depth d, each with |I| = 2^d − 1 oblique split nodes and 2^d leaves.
All split hyperplanes live in one kernel K of shape (p, m·|I|): **row k is feature k's group**
(its weights in every node of every tree), column ``tree·|I| + node`` is one node. Nodes are
numbered breadth-first within a tree (root 0, children of i are 2i+1 and 2i+2), leaves left to
right. Node i sends x **left** with probability S(x·K[:, i] + b[i]), where S is the logistic
sigmoid or the smooth-step of width γ_ss (exactly 0 or 1 outside ±γ_ss/2). A sample reaches a leaf
with the product of the branch probabilities on its path; each tree outputs the expectation of
its leaf values, and the ensemble **sums** the trees (it does not average them):

    f(x) = Σ_trees Σ_leaves P_tree(x → leaf) · o_leaf

For classification f gives one logit per class (two for binary problems, with softmax
cross-entropy, as in the authors' code); for regression one value per output.

Initialisation follows the authors' Keras defaults, which matter because the feature-removal
threshold is absolute: the kernel is Glorot-uniform over (p, m·|I|), the biases are zero, and the
leaves are Glorot-uniform over the shape (1, c, m) of one leaf's values (bound √(6 / (c + m))).
"""

from __future__ import annotations

import math

import torch


def smoothstep(t: torch.Tensor, width: float = 1.0) -> torch.Tensor:
    """S(t) = 3u² − 2u³ with u = clamp(t / width + 1/2, 0, 1): 0 below −width/2, 1 above width/2,
    S(0) = 1/2 and S'(0) = 3 / (2·width)."""
    u = torch.clamp(t / width + 0.5, 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u)


def activate(z: torch.Tensor, activation: str, width: float) -> torch.Tensor:
    """The probability of going left at each node, from its split values ``z``."""
    if activation == "sigmoid":
        return torch.sigmoid(z)
    if activation == "smoothstep":
        return smoothstep(z, width)
    raise ValueError(f"activation must be 'sigmoid' or 'smoothstep', got {activation!r}")


def leaf_probabilities(left: torch.Tensor, depth: int) -> torch.Tensor:
    """(B, m, 2^d) probabilities of reaching each leaf, from (B, m, 2^d − 1) left-probabilities.

    Level by level: the nodes of level ℓ are 2^ℓ − 1 … 2^(ℓ+1) − 2; a node's mass goes to its left
    child times S and to its right child times 1 − S, so children stay interleaved (2i+1, 2i+2)."""
    batch, trees = left.shape[0], left.shape[1]
    prob = left.new_ones(batch, trees, 1)
    for level in range(depth):
        s = left[:, :, 2**level - 1: 2 ** (level + 1) - 1]
        prob = torch.stack((prob * s, prob * (1.0 - s)), dim=-1).reshape(batch, trees, 2 ** (level + 1))
    return prob


class SoftTreeEnsemble(torch.nn.Module):
    """m soft oblique trees of depth d over p features with c outputs.

    Parameters: ``kernel`` (p, m·|I|), ``bias`` (m·|I|,) and ``leaves`` (m, 2^d, c).
    """

    def __init__(self, n_features: int, n_outputs: int, n_trees: int, depth: int, *,
                 activation: str = "sigmoid", width: float = 1.0, generator: torch.Generator | None = None,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.n_trees, self.depth = int(n_trees), int(depth)
        self.activation, self.width = activation, float(width)
        n_nodes = self.n_nodes
        kernel_bound = math.sqrt(6.0 / (n_features + n_trees * n_nodes))
        leaf_bound = math.sqrt(6.0 / (n_outputs + n_trees))
        self.kernel = torch.nn.Parameter(_uniform((n_features, n_trees * n_nodes), kernel_bound, generator, dtype))
        self.bias = torch.nn.Parameter(torch.zeros(n_trees * n_nodes, dtype=dtype))
        self.leaves = torch.nn.Parameter(_uniform((n_trees, 2**depth, n_outputs), leaf_bound, generator, dtype))

    @property
    def n_nodes(self) -> int:
        """Split nodes per tree, |I| = 2^d − 1."""
        return 2**self.depth - 1

    def left_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """(B, m, |I|): the probability that each node sends each row left."""
        z = torch.addmm(self.bias, x, self.kernel)
        return activate(z, self.activation, self.width).view(x.shape[0], self.n_trees, self.n_nodes)

    def leaf_probabilities(self, x: torch.Tensor) -> torch.Tensor:
        """(B, m, 2^d): the probability of reaching each leaf of each tree (sums to 1 per tree)."""
        return leaf_probabilities(self.left_probabilities(x), self.depth)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, c): the sum over trees of each tree's expected leaf value."""
        return torch.einsum("bml,mlc->bc", self.leaf_probabilities(x), self.leaves)

    def group_norms(self) -> torch.Tensor:
        """(p,): the Frobenius norm of each feature's group (its row of the kernel)."""
        return torch.linalg.vector_norm(self.kernel, dim=1)


def _uniform(shape: tuple[int, ...], bound: float, generator: torch.Generator | None,
             dtype: torch.dtype) -> torch.Tensor:
    """U(−bound, bound), drawn on the CPU so a seed gives the same model on every device."""
    return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2.0 - 1.0).mul_(bound).to(dtype)
