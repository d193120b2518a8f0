"""The compiled loops of DGT's training step: the fused optimiser step (the penalty, the clip and
RMSprop over every tree's parameters in two sweeps), the descent to the reached leaf, and the fused
head (the straight-through head, the loss and their gradients in one pass)."""

from __future__ import annotations

import math

import numpy as np

try:
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False


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
    def fused_update(w, g, sq, buf, offsets, sizes, penalised, n_trees, l1, l2, clip, lr, alpha, eps,
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
    def descend(z, leaf):  # pragma: no cover - compiled
        """leaf[t, b]: the leaf row b of tree t reaches, right iff z > 0, down the heap."""
        T, B, n = z.shape
        for t in range(T):
            for b in range(B):
                node = 0
                while node < n:
                    node = 2 * node + 1 + (1 if z[t, b, node] > 0 else 0)
                leaf[t, b] = node - n

    @njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
    def fused_head(z, leaves, y, labels, w, use_w, ce, scaled, gscale, G, grad_leaves, losses,
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
