"""The compiled loops of the hand-written rounds (:mod:`models.dgt.bandit.rounds`): the tree's forward
pass, its straight-through backward pass, and torch's RMSprop step on flat arrays."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def tree_forward(X, rows, W, b, leaves, height, z, leaf, theta):  # pragma: no cover - compiled
    """z = x W^T + b per round's row, the reached leaf (right iff z > 0) and θ = Θ[leaf]."""
    n_nodes, d = W.shape
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(n_nodes):
            acc = b[j]
            for k in range(d):
                acc += W[j, k] * X[r, k]
            z[i, j] = acc
        node = 0
        for _ in range(height):
            node = 2 * node + 1 + (1 if z[i, node] > 0 else 0)
        leaf[i] = node - n_nodes
        for k in range(leaves.shape[1]):
            theta[i, k] = leaves[leaf[i], k]


@njit(cache=True, nogil=True)
def tree_backward(X, rows, z, leaf, dout, leaves, path_node, path_sign, scaled, gscale, gW, gb, gleaves
                   ):  # pragma: no cover - compiled
    """Accumulate the gradients of Σ_i dout_i·o_i (o_i the network's straight-through output)
    into gW, gb and gleaves; the formulas are :class:`TreeRounds`'. The AND matrix is given by its
    nonzero entries: leaf m's row has ``path_sign[m, k]`` at node ``path_node[m, k]`` (k < h,
    nodes ascending), so q = A s and Aᵀ ∂q cost 2^h·h instead of 2^h·(2^h − 1)."""
    n_leaves, height = path_node.shape
    n_nodes, K = z.shape[1], leaves.shape[1]
    s = np.empty(n_nodes, dtype=z.dtype)
    p = np.empty(n_leaves, dtype=z.dtype)
    dq = np.empty(n_leaves, dtype=z.dtype)
    ds = np.empty(n_nodes, dtype=z.dtype)
    for i in range(rows.shape[0]):
        fac = 1.0
        if scaled:
            fac = 0.0
            for j in range(n_nodes):
                fac += abs(z[i, j])
            fac /= n_nodes
        for j in range(n_nodes):
            s[j] = fac if z[i, j] > 0 else -fac
        top = -np.inf
        for m in range(n_leaves):
            q = 0.0
            for k in range(height):
                q += path_sign[m, k] * s[path_node[m, k]]
            p[m] = q
            top = max(top, q)
        total = 0.0
        for m in range(n_leaves):
            p[m] = np.exp(p[m] - top)
            total += p[m]
        centre = 0.0
        for m in range(n_leaves):
            p[m] /= total
            dp = 0.0
            for k in range(K):
                dp += leaves[m, k] * dout[i, k]
            dq[m] = dp
            centre += p[m] * dp
        ds[:] = 0.0
        for m in range(n_leaves):
            g = p[m] * (dq[m] - centre)
            for k in range(height):
                ds[path_node[m, k]] += path_sign[m, k] * g
        r = rows[i]
        for j in range(n_nodes):
            if abs(z[i, j]) <= 1:
                dz = ds[j] * gscale
                gb[j] += dz
                for k in range(X.shape[1]):
                    gW[j, k] += dz * X[r, k]
        for k in range(K):
            gleaves[leaf[i], k] += dout[i, k]


@njit(cache=True, nogil=True)
def rmsprop(param, grad, square, lr, alpha, beta, eps):  # pragma: no cover - compiled
    """torch's RMSprop step (no momentum, not centred; β = 1 − α) on flat arrays; the gradient is
    zeroed."""
    for j in range(param.shape[0]):
        g = grad[j]
        square[j] = square[j] * alpha + beta * g * g
        param[j] -= lr * (g / (np.sqrt(square[j]) + eps))
        grad[j] = 0.0
