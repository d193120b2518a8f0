"""The paper's synthetic sparse regression (Ibrahim, Behdin & Mazumder 2024, section 6, Table 1).

X ~ N(0, Σ) with Σ_ij = σ^|i−j| (a correlated design), and y = X·β* + ε with ε ~ N(0, 0.5²): the
noise's *standard deviation* is 0.5, as in the authors' code, so the best possible test MSE is 0.25.
β* has eight ones, at the equally spaced columns p/16, p/16 + p/8, …: 16, 48, …, 240 for p = 256.
N rows are drawn for training and validation (split 80/20 by the caller) and 10 000 for testing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOISE_SD = 0.5
TEST_ROWS = 10_000


def true_support(p: int) -> np.ndarray:
    """The eight columns of β* that are 1: arange(p/16, p, p/8)."""
    return np.arange(p // 16, p, p // 8)


def correlated_design(n: int, p: int, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """n rows of N(0, Σ), Σ_ij = σ^|i−j|, drawn as the stationary AR(1) chain x_j = σ·x_(j−1) + √(1−σ²)·e_j."""
    # the chain runs over columns, so it runs on the transpose, where a column is contiguous (a
    # strided column walk took 0.8 s for the 11 000 x 256 design of one Table 1 simulation)
    e = np.ascontiguousarray(rng.standard_normal((n, p)).T)
    Xt = np.empty((p, n))
    Xt[0] = e[0]
    scale = np.sqrt(1.0 - sigma**2)
    for j in range(1, p):
        np.multiply(Xt[j - 1], sigma, out=Xt[j])
        Xt[j] += scale * e[j]
    return np.ascontiguousarray(Xt.T)


@dataclass(frozen=True)
class SparseRegression:
    """One simulation: training+validation rows, test rows and the true support."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    support: np.ndarray


def sparse_regression(n: int, p: int, sigma: float, seed: int, n_test: int = TEST_ROWS) -> SparseRegression:
    """Draw one simulation of the paper's Table 1 setting (σ, p, N) with its own seed."""
    if p < 16 or p % 16:
        raise ValueError("p must be a positive multiple of 16 (the eight true columns are p/8 apart).")
    rng = np.random.default_rng(seed)
    beta = np.zeros(p)
    support = true_support(p)
    beta[support] = 1.0
    X = correlated_design(n + n_test, p, sigma, rng)
    y = X @ beta + NOISE_SD * rng.standard_normal(n + n_test)
    return SparseRegression(X[:n], y[:n], X[n:], y[n:], support)


def support_f1(selected: np.ndarray, support: np.ndarray) -> float:
    """F1 of the selected columns against the true support."""
    selected, support = set(np.asarray(selected).tolist()), set(np.asarray(support).tolist())
    hits = len(selected & support)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(selected), hits / len(support)
    return 2 * precision * recall / (precision + recall)
