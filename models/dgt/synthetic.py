"""Synthetic data labelled by a random oblique tree: the sanity problem for DGT's tests.

``x ~ N(0, I_d)``; a complete oblique tree of height ``depth`` whose splits have unit-norm normal
directions and biases 0.3·N(0, 1) (so every split cuts near the middle of the data) gives each
point a leaf. Classification labels are the leaf's class (classes spread over the leaves so that
every class owns at least one leaf when there are enough leaves); regression targets are the
leaf's value, drawn uniformly in [0, 1], plus Gaussian noise of standard deviation ``noise``.
Classification labels are noiseless: ``noise`` applies to regression targets only.

Axis-aligned trees fit this poorly (CART reaches about 60% at depths 3 to 6 with K = 4), while a
DGT tree of the same height can represent it exactly. The tree and the data come from one seeded
generator, tree first: the same seed gives the same tree for every ``n``, and a larger ``n`` only
appends rows, so ``oblique_tree_data(n_train + n_test)`` split by rows gives train and test sets of
one problem. Routing follows the shared Tree convention: right iff ``w·x + b > 0``, heap order.
This module needs only numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TASKS = ("classification", "regression")


@dataclass(frozen=True)
class ObliqueTree:
    """A complete oblique tree: ``weight`` (2^h − 1, d), ``bias`` (2^h − 1,) in heap order, and
    ``leaf_value`` (2^h,), class indices or real values, leaves left to right."""

    weight: np.ndarray
    bias: np.ndarray
    leaf_value: np.ndarray
    task: str

    @property
    def depth(self) -> int:
        return int(self.weight.shape[0] + 1).bit_length() - 1

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The leaf (0..2^h − 1) each row reaches."""
        Z = np.asarray(X, dtype=np.float64) @ self.weight.T + self.bias
        node = np.zeros(Z.shape[0], dtype=np.int64)
        rows = np.arange(Z.shape[0])
        for _ in range(self.depth):
            node = 2 * node + 1 + (Z[rows, node] > 0)
        return node - self.weight.shape[0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The noiseless label (class index) or target of each row."""
        return self.leaf_value[self.apply(X)]


def _check(d: int, depth: int, n_classes: int, task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if int(d) < 1 or int(depth) < 1:
        raise ValueError("d and depth must be at least 1")
    if task == "classification" and int(n_classes) < 2:
        raise ValueError("a classification problem needs at least 2 classes")


def _draw_tree(rng: np.random.Generator, d: int, depth: int, n_classes: int, task: str) -> ObliqueTree:
    n_nodes, n_leaves = 2 ** depth - 1, 2 ** depth
    weight = rng.standard_normal((n_nodes, d))
    weight /= np.linalg.norm(weight, axis=1, keepdims=True)
    bias = 0.3 * rng.standard_normal(n_nodes)
    if task == "classification":
        if n_leaves >= n_classes:  # every class owns a leaf, the classes spread as evenly as possible
            leaf_value = rng.permutation(np.arange(n_leaves) % n_classes)
        else:
            leaf_value = rng.choice(n_classes, size=n_leaves, replace=False)
        leaf_value = leaf_value.astype(np.int64)
    else:
        leaf_value = rng.uniform(0.0, 1.0, size=n_leaves)
    return ObliqueTree(weight=weight, bias=bias, leaf_value=leaf_value, task=task)


def oblique_tree(d: int = 6, depth: int = 3, n_classes: int = 4, task: str = "classification",
                 seed: int = 0) -> ObliqueTree:
    """The tree that labels ``oblique_tree_data(..., seed=seed)`` with the same settings."""
    _check(d, depth, n_classes, task)
    return _draw_tree(np.random.default_rng(seed), int(d), int(depth), int(n_classes), task)


def oblique_tree_data(n: int, d: int = 6, depth: int = 3, n_classes: int = 4, task: str = "classification",
                      noise: float = 0.05, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points ``x ~ N(0, I_d)`` labelled by a random oblique tree of height ``depth``.

    Returns ``(X, y)``: X (n, d) float64; y (n,) int64 class indices in 0..n_classes − 1 for
    classification, or float64 targets (leaf value in [0, 1] plus N(0, noise²)) for regression.
    See :func:`oblique_tree` for the labelling tree.
    """
    _check(d, depth, n_classes, task)
    rng = np.random.default_rng(seed)
    tree = _draw_tree(rng, int(d), int(depth), int(n_classes), task)
    X = rng.standard_normal((int(n), int(d)))
    y = tree.predict(X)
    if task == "regression" and noise > 0:
        y = y + float(noise) * rng.standard_normal(int(n))
    return X, y
