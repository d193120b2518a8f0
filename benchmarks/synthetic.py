"""The synthetic tables of the side-by-side runs against the authors' code, made once for every
benchmark that uses them (the external runs write them for the reference's side; the DGT and Skinny
speed rows rebuild them in process).

Both come from one generator seeded with :data:`SEED`, the DGT table first, then Skinny's, so a
benchmark that needs only Skinny's table draws the DGT one too (and drops it). Each has 30 000 rows:
20 000 training, 5 000 validation and 5 000 test (:data:`PARTS`).
"""

from __future__ import annotations

import numpy as np

SEED = 12345
#: Rows of the training, validation and test parts, in that order.
PARTS = (20_000, 5_000, 5_000)
#: The same parts as row slices, by name.
SLICES = {"train": slice(0, PARTS[0]), "val": slice(PARTS[0], PARTS[0] + PARTS[1]),
          "test": slice(PARTS[0] + PARTS[1], None)}


def dgt_regression(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """30 000 rows x 50 features and their targets (float32): a depth-4 sparse oblique tree's leaf
    value plus a linear term of five features and unit noise."""
    X = rng.standard_normal((30_000, 50)).astype(np.float32)
    depth = 4
    W = rng.standard_normal((2 ** depth - 1, 50))
    W[np.abs(W) < 1.0] = 0.0  # sparse oblique splits
    b = rng.standard_normal(2 ** depth - 1) * 0.3
    leaf_value = rng.uniform(0, 20, 2 ** depth)
    node = np.zeros(X.shape[0], dtype=int)
    for _ in range(depth):
        go_right = (np.einsum("ij,ij->i", X, W[node]) + b[node]) > 0
        node = 2 * node + 1 + go_right
    y = leaf_value[node - (2 ** depth - 1)] + 0.5 * X[:, :5].sum(1) + rng.standard_normal(X.shape[0])
    return X, y.astype(np.float32)


def skinny_classification(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """30 000 rows x 100 features (float32, standardised with the training part's statistics) and 0 / 1
    labels through a nonlinear logit of 10 of them."""
    n_train = PARTS[0]
    X = rng.standard_normal((30_000, 100))
    beta = np.zeros(100)
    beta[:10] = rng.uniform(1, 2, 10) * rng.choice([-1, 1], 10)
    logit = X @ beta + 1.5 * np.sin(2 * X[:, 0]) * X[:, 1] - X[:, 2] * X[:, 3]
    y = (rng.random(X.shape[0]) < 1 / (1 + np.exp(-logit))).astype(np.int64)
    X = (X - X[:n_train].mean(0)) / X[:n_train].std(0)
    return X.astype(np.float32), y


def parts(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """``X_train, y_train, X_val, y_val, X_test, y_test`` by :data:`PARTS`."""
    return tuple(a for part in SLICES.values() for a in (X[part], y[part]))


def dgt_table() -> tuple[np.ndarray, ...]:
    """The DGT table in its parts (:func:`parts`)."""
    return parts(*dgt_regression(np.random.default_rng(SEED)))


def skinny_table() -> tuple[np.ndarray, ...]:
    """The Skinny table in its parts, drawn after the DGT table from the same generator."""
    rng = np.random.default_rng(SEED)
    dgt_regression(rng)
    return parts(*skinny_classification(rng))
