"""A latent-tree training step as one compiled CPU kernel: forward, backward and optimiser.

The autograd path (:func:`models.latent.train_loop.fit_net` with torch operations) spends most
of a training step on per-operation overhead: at the papers' batch sizes a step is a few tens
of thousands of multiply-adds spread over ~60 torch calls, an autograd graph and ~40 optimiser
kernels. This module runs the whole step for the common configuration in one numba kernel, and
many steps per call:

* splits ``s = act(BN(x Wᵀ + b) + β)`` with BatchNorm on the batch's statistics (biased variance
  to normalise, running statistics updated with the unbiased one, momentum 0.1, as
  :class:`torch.nn.BatchNorm1d` does), act ∈ {identity, ELU};
* the pruning layer S → (Q, a, Z) of :mod:`models.latent.fused` (the same algorithm), on the
  entries that matter only: (i, t) with ``q_it > −½`` (:func:`_sparse_layer`), a subtree around
  each sample's hard path, so its cost grows with the depth D rather than with 2^D;
* a linear predictor on ``[x; z]`` (or ``z``), visiting only the nonzero entries of ``z``: with
  the default "code" read-out a sample's ``z`` is nonzero only on its root-to-leaf path, so the
  predictor costs O(D) per sample instead of O(2^D);
* the loss (logistic, cross-entropy or squared error, weighted by row) and its gradient written
  by hand, the chain rule back through the predictor, the pruning layer, ELU, BatchNorm and the
  linear split layer;
* QHAdam or Adam on one flat parameter vector (both are elementwise, so flat is the same
  update as per-tensor).

Arithmetic is float64 inside the kernel whatever the parameters' dtype (float32 in training).
The evaluation pass (:func:`eval_rows`) runs the network in evaluation mode (BatchNorm's running
statistics) and either solves the pruning QP on its rows (a frozen pruning vector and those rows'
outputs in one pass) or uses a given pruning vector.

``tests/models/latent/test_engine.py`` checks steps and evaluation against autograd through the
torch modules in float64 (to 1e-10) and whole fits against the autograd training loop. The
Python side (which configurations the step applies to, the data and parameters as the kernels read
them) is :mod:`models.latent.engine_driver`.
"""

from __future__ import annotations

import math

import numpy as np

from models.latent.fused import njit

LOSSES = {"bce": 0, "ce": 1, "mse": 2}


@njit(cache=True, nogil=True)
def _splits(Xb, Wl, bl, gamma, bnb, beta, mean, inv, elu, St, Hn, train, momentum, rm, rv, eps):
    """Split scores of the rows ``Xb`` into ``St`` (node-major, (m, n)); in training also the
    normalised ``Hn`` (m, n) and the BatchNorm batch statistics (``mean``, ``inv``), with the
    running statistics updated."""
    m, nb = St.shape
    np.dot(Wl, Xb.T, St)
    for j in range(m):
        if train:
            acc = 0.0
            for i in range(nb):
                acc += St[j, i]
            mu = acc / nb
            acc = 0.0
            for i in range(nb):
                diff = St[j, i] - mu
                acc += diff * diff
            var = acc / nb
            mu += bl[j]  # the linear layer's bias moves the mean only
            mean[j] = mu
            inv[j] = 1.0 / math.sqrt(var + eps)
            rm[j] = (1.0 - momentum) * rm[j] + momentum * mu
            rv[j] = (1.0 - momentum) * rv[j] + momentum * var * nb / (nb - 1)
        else:
            mean[j] = rm[j]
            inv[j] = 1.0 / math.sqrt(rv[j] + eps)
        shift = bl[j] - mean[j]
        g, b = gamma[j], bnb[j] + beta[j]
        for i in range(nb):
            h = (St[j, i] + shift) * inv[j]
            Hn[j, i] = h
            v = g * h + b
            if elu and v <= 0.0:
                v = math.expm1(v)
            St[j, i] = v


@njit(cache=True, nogil=True)
def _sparse_layer(St, lam, shift, delta, upper, solve, a, scale, thresh, cut, Xb, Wf, bf, elu):
    """The pruning layer on the entries that matter: (start, rows, q, z, parent entry).

    An entry (i, t) matters when ``q_it > -cut``. With ``cut = shift`` those are the only
    entries that can be in the QP's support (``c = q + shift > 0``) or have ``z > 0`` (both
    read-outs), and the only ones that receive gradient; with a given ``a`` only ``z`` is needed
    and ``cut = delta`` suffices (z > 0 iff q > −delta: the hard path for the "code" read-out).
    Since ``q_child <= q_parent``, node t's entries come from its parent's, so they are built
    top-down (node t's entries are ``start[t]:start[t+1]``, in row order as in the dense
    kernel, so sums run in the same order and give the same bits). A sample's entries form a
    subtree around its hard path, a few percent of the 2^(D+1) − 1 nodes in deep trees.

    Split scores: ``St`` (m, n), or when ``St`` has no columns computed for the entries that need
    them as ``act(Wf[t] · x_i + bf[t])`` (evaluation mode, BatchNorm folded into ``Wf, bf``).

    ``solve``: a, scale, thresh as :func:`models.latent.fused._forward` computes them (the fixed
    point over a node's positive shifted rewards, here on a buffer that keeps only the entries
    above the current value), else ``a`` is given.
    """
    nb = Xb.shape[0]
    m = (a.shape[0] - 1) // 2
    lazy = St.shape[1] != nb
    d = Xb.shape[1]
    T = 2 * m + 1
    capacity = nb * min(T, 32)  # grown when needed: entries are usually a few per row and level
    rows = np.empty(capacity, dtype=np.int64)
    q = np.empty(capacity)
    par = np.empty(capacity, dtype=np.int64)
    start = np.empty(T + 1, dtype=np.int64)
    for i in range(nb):
        rows[i] = i
        q[i] = 1.0
        par[i] = -1
    start[0] = 0
    start[1] = nb
    end = nb
    r_rows = np.empty(nb, dtype=np.int64)  # the right children's entries, appended after the left's
    r_q = np.empty(nb)
    r_par = np.empty(nb, dtype=np.int64)
    for t in range(m):  # children of t, left then right (heap order)
        need = end + 2 * (start[t + 1] - start[t])
        if need > capacity:
            capacity = max(2 * capacity, need)
            rows2 = np.empty(capacity, dtype=np.int64)
            q2 = np.empty(capacity)
            par2 = np.empty(capacity, dtype=np.int64)
            rows2[:end] = rows[:end]
            q2[:end] = q[:end]
            par2[:end] = par[:end]
            rows, q, par = rows2, q2, par2
        n_right = 0
        for e in range(start[t], start[t + 1]):
            i = rows[e]
            if lazy:
                s = bf[t]
                for f in range(d):
                    s += Xb[i, f] * Wf[t, f]
                if elu and s <= 0.0:
                    s = math.expm1(s)
            else:
                s = St[t, i]
            v = min(q[e], -s)
            if v > -cut:
                rows[end] = i
                q[end] = v
                par[end] = e
                end += 1
            v = min(q[e], s)
            if v > -cut:
                r_rows[n_right] = i
                r_q[n_right] = v
                r_par[n_right] = e
                n_right += 1
        start[2 * t + 2] = end
        for j in range(n_right):
            rows[end] = r_rows[j]
            q[end] = r_q[j]
            par[end] = r_par[j]
            end += 1
        start[2 * t + 3] = end
    z = np.empty(end)
    buf = np.empty(nb)
    for t in range(T):
        lo, hi = start[t], start[t + 1]
        if solve:
            scale[t] = 0.0
            thresh[t] = math.inf
            value = 0.0
            if hi > lo:
                # a(k*) is the fixed point of value <- sum_{c > value} c / (lam + #{c > value});
                # from 0 the iterates increase and {c > value} shrinks to the k* largest entries
                acc = 0.0
                kept = 0
                for e in range(lo, hi):
                    c = q[e] + shift
                    if c > 0.0:
                        buf[kept] = c
                        acc += c
                        kept += 1
                value = acc / (lam + kept)
                k = kept
                while True:
                    acc = 0.0
                    kept = 0
                    for j in range(k):
                        c = buf[j]
                        if c > value:
                            buf[kept] = c
                            acc += c
                            kept += 1
                    value = acc / (lam + kept)
                    if kept == k:
                        break
                    k = kept
                if 0.0 < value < 1.0:
                    scale[t] = 1.0 / (lam + k)
                    thresh[t] = value
            a[t] = min(max(value, 0.0), 1.0)
        cap = min(max(a[t], 0.0), upper)
        for e in range(lo, hi):
            z[e] = max(0.0, min(q[e] + delta, cap))
    return start, rows[:end], q[:end], z, par[:end]


@njit(cache=True, nogil=True)
def _sparse_backward(start, rows, q, z, par, a, scale, thresh, shift, upper, Gz, gSt):
    """Backward of :func:`_sparse_layer` (no gradient into a): ``Gz`` per entry; adds into
    ``gSt`` (m, n). Read-out, the QP's Jacobian and the path minimum, bottom-up, as
    :func:`models.latent.fused._backward` on the entries that matter."""
    T = start.shape[0] - 1
    gQ = np.zeros(q.shape[0])
    for t in range(T - 1, -1, -1):
        lo, hi = start[t], start[t + 1]
        cap = min(max(a[t], 0.0), upper)
        ga = 0.0
        for e in range(lo, hi):
            ze = z[e]
            if ze > 0.0:
                if ze < cap:
                    gQ[e] += Gz[e]
                else:
                    ga += Gz[e]
        if scale[t] > 0.0 and ga != 0.0:
            g = ga * scale[t]
            limit = thresh[t]
            for e in range(lo, hi):
                if q[e] + shift > limit:
                    gQ[e] += g
        if t == 0:
            break
        parent = (t - 1) // 2
        sign = -1.0 if t % 2 == 1 else 1.0
        for e in range(lo, hi):
            g = gQ[e]
            if g != 0.0:
                p = par[e]
                if q[e] >= q[p]:
                    gQ[p] += g
                else:
                    gSt[parent, rows[e]] += sign * g


@njit(cache=True, nogil=True)
def _sparse_head(Xb, start, rows, z, Wh, bh, xz, out):
    """``out = [x; z] Whᵀ + bh`` (or ``z Whᵀ + bh``) from the entries of z."""
    nb, d = Xb.shape
    K = Wh.shape[0]
    T = start.shape[0] - 1
    off = d if xz else 0
    if xz:
        out[:, :] = Xb @ np.ascontiguousarray(Wh[:, :d]).T
    else:
        out[:, :] = 0.0
    for i in range(nb):
        for k in range(K):
            out[i, k] += bh[k]
    for t in range(T):
        for e in range(start[t], start[t + 1]):
            ze = z[e]
            if ze != 0.0:
                i = rows[e]
                for k in range(K):
                    out[i, k] += ze * Wh[k, off + t]


@njit(cache=True, nogil=True)
def _loss_grad(out, yf, yi, rows, w, has_w, kind, G):
    """The weighted mean loss of the outputs and its gradient ``G`` (same shape as ``out``).

    kind 0: logistic loss on one logit (``yf[r, 0]`` in {0, 1}); 1: cross-entropy on K logits
    (class ``yi[r]``); 2: mean squared error over the K outputs (targets ``yf[r]``).
    """
    nb, K = out.shape
    total_w = 0.0
    for i in range(nb):
        total_w += w[rows[i]] if has_w else 1.0
    loss = 0.0
    for i in range(nb):
        r = rows[i]
        wi = (w[r] if has_w else 1.0) / total_w
        if kind == 0:
            o = out[i, 0]
            y = yf[r, 0]
            loss += wi * (max(o, 0.0) - o * y + math.log1p(math.exp(-abs(o))))
            if o >= 0.0:
                p = 1.0 / (1.0 + math.exp(-o))
            else:
                e = math.exp(o)
                p = e / (1.0 + e)
            G[i, 0] = wi * (p - y)
        elif kind == 1:
            top = out[i, 0]
            for k in range(1, K):
                top = max(top, out[i, k])
            acc = 0.0
            for k in range(K):
                acc += math.exp(out[i, k] - top)
            lse = top + math.log(acc)
            c = yi[r]
            loss += wi * (lse - out[i, c])
            for k in range(K):
                G[i, k] = wi * math.exp(out[i, k] - lse)
            G[i, c] -= wi
        else:
            acc = 0.0
            for k in range(K):
                diff = out[i, k] - yf[r, k]
                acc += diff * diff
                G[i, k] = wi * 2.0 * diff / K
            loss += wi * acc / K
    return loss, total_w


@njit(cache=True, nogil=True)
def _step_grad(X, yf, yi, w, has_w, kind, rows, theta, shape, lam, shift, delta, upper, elu, xz,
               rm, rv, momentum, eps_bn, grad, work):
    """Forward and backward of one training step on ``X[rows]``: the gradient into ``grad`` (flat,
    ``theta``'s layout); returns (loss, weight of the batch, active nodes of the batch's a).
    ``work`` (at least 4 m n numbers) holds the four (m, n) arrays, reused from step to step
    (fresh arrays of that size cost page faults that took a third of a large batch's step)."""
    m, d, K, F = shape[0], shape[1], shape[2], shape[3]
    T = 2 * m + 1
    nb = rows.shape[0]
    o_wl, o_bl, o_g, o_bb, o_be = 0, m * d, m * d + m, m * d + 2 * m, m * d + 3 * m
    o_wh = m * d + 4 * m
    o_bh = o_wh + K * F
    Wl = theta[o_wl:o_bl].reshape((m, d))
    bl, gamma, bnb, beta = theta[o_bl:o_g], theta[o_g:o_bb], theta[o_bb:o_be], theta[o_be:o_wh]
    Wh = theta[o_wh:o_bh].reshape((K, F))
    bh = theta[o_bh:o_bh + K]

    Xb = np.empty((nb, d))
    for i in range(nb):
        for f in range(d):
            Xb[i, f] = X[rows[i], f]
    size = m * nb
    S = work[:size].reshape((m, nb))
    Hn = work[size:2 * size].reshape((m, nb))
    gS = work[2 * size:3 * size].reshape((m, nb))
    gH = work[3 * size:4 * size].reshape((m, nb))
    mean = np.empty(m)
    inv = np.empty(m)
    _splits(Xb, Wl, bl, gamma, bnb, beta, mean, inv, elu, S, Hn, True, momentum, rm, rv, eps_bn)

    a = np.empty(T)
    scale = np.empty(T)
    thresh = np.empty(T)
    start, erows, q, z, par = _sparse_layer(S, lam, shift, delta, upper, True, a, scale, thresh, shift, Xb,
                                            Wl, bl, elu)
    active = 0
    for t in range(T):
        if a[t] > 0.0:
            active += 1

    out = np.empty((nb, K))
    _sparse_head(Xb, start, erows, z, Wh, bh, xz, out)
    G = np.empty((nb, K))
    loss, total_w = _loss_grad(out, yf, yi, rows, w, has_w, kind, G)

    # predictor
    grad[:] = 0.0
    gWh = grad[o_wh:o_bh].reshape((K, F))
    gbh = grad[o_bh:o_bh + K]
    off = d if xz else 0
    for i in range(nb):
        for k in range(K):
            gbh[k] += G[i, k]
    if xz:
        gWh[:, :d] = G.T @ Xb
    Gz = np.zeros(z.shape[0])
    for t in range(T):
        for e in range(start[t], start[t + 1]):
            ze = z[e]
            if ze != 0.0:
                i = erows[e]
                acc = 0.0
                for k in range(K):
                    acc += G[i, k] * Wh[k, off + t]
                    gWh[k, off + t] += G[i, k] * ze
                Gz[e] = acc
    # pruning layer (read-out, QP Jacobian, path minimum)
    gS[:, :] = 0.0
    _sparse_backward(start, erows, q, z, par, a, scale, thresh, shift, upper, Gz, gS)
    # ELU, then BatchNorm (batch statistics) and β
    gWl = grad[o_wl:o_bl].reshape((m, d))
    gbl, ggam, gbnb, gbeta = grad[o_bl:o_g], grad[o_g:o_bb], grad[o_bb:o_be], grad[o_be:o_wh]
    for j in range(m):
        sum_g = 0.0
        sum_gh = 0.0
        for i in range(nb):
            g = gS[j, i]
            if elu and S[j, i] <= 0.0:
                g *= S[j, i] + 1.0
                gS[j, i] = g
            sum_g += g
            sum_gh += g * Hn[j, i]
        gbeta[j] = sum_g
        gbnb[j] = sum_g
        ggam[j] = sum_gh
        # d/dH of gamma * (H - mean) * inv: inv * gamma * (g - mean(g) - Hn * mean(g * Hn))
        c = gamma[j] * inv[j]
        mg, mgh = sum_g / nb, sum_gh / nb
        acc_b = 0.0
        for i in range(nb):
            gh = c * (gS[j, i] - mg - Hn[j, i] * mgh)
            gH[j, i] = gh
            acc_b += gh
        gbl[j] = acc_b
    gWl[:, :] = gH @ Xb
    return loss, total_w, active


@njit(cache=True, nogil=True)
def _optimiser(theta, grad, m1, m2, step, lr, b1, b2, nu1, nu2, eps):
    """One QHAdam step on the flat vectors (Adam when nu1 = nu2 = 1)."""
    bc1 = 1.0 - b1**step
    bc2 = 1.0 - b2**step
    for p in range(theta.shape[0]):
        g = grad[p]
        m1[p] = b1 * m1[p] + (1.0 - b1) * g
        m2[p] = b2 * m2[p] + (1.0 - b2) * g * g
        num = nu1 * (m1[p] / bc1) + (1.0 - nu1) * g
        den = math.sqrt((1.0 - nu2) * g * g + nu2 * (m2[p] / bc2)) + eps
        theta[p] -= lr * num / den


@njit(cache=True, nogil=True)
def train_steps(X, yf, yi, w, has_w, kind, order, starts, batch, theta, shape, lam, shift,
                delta, upper, elu, xz, rm, rv, momentum, eps_bn, m1, m2, step, lr, b1, b2, nu1, nu2,
                eps, stats, work):
    """The training steps of the batches starting at ``order[starts[j]]``, in turn. ``stats``
    accumulates (Σ loss·weight, Σ weight, Σ active fraction, batches); returns the step count."""
    n = order.shape[0]
    m = shape[0]
    T = 2 * m + 1
    grad = np.empty(theta.shape[0])
    for j in range(starts.shape[0]):
        lo = starts[j]
        hi = min(lo + batch, n)
        if hi - lo < 2 and stats[1] > 0:  # BatchNorm cannot train on one row
            continue
        loss, weight, active = _step_grad(X, yf, yi, w, has_w, kind, order[lo:hi], theta, shape, lam,
                                          shift, delta, upper, elu, xz, rm, rv, momentum, eps_bn, grad, work)
        step += 1
        _optimiser(theta, grad, m1, m2, step, lr, b1, b2, nu1, nu2, eps)
        stats[0] += loss * weight
        stats[1] += weight
        stats[2] += active / T
        stats[3] += 1.0
    return step


@njit(cache=True, nogil=True)
def eval_rows(X, theta, shape, elu, xz, rm, rv, eps_bn, lam, a_in, solve, shift, delta, upper,
              out, a_out):
    """Evaluation-mode outputs of the rows of ``X`` into ``out``: with the pruning vector ``a_in``,
    or (``solve``) with a solved on these rows with strength ``lam`` (into ``a_out``)."""
    m, d, K, F = shape[0], shape[1], shape[2], shape[3]
    T = 2 * m + 1
    n = X.shape[0]
    o_bl, o_g, o_bb, o_be = m * d, m * d + m, m * d + 2 * m, m * d + 3 * m
    o_wh = m * d + 4 * m
    o_bh = o_wh + K * F
    Xb = np.empty((n, d))
    for i in range(n):
        for f in range(d):
            Xb[i, f] = X[i, f]
    # BatchNorm (running statistics) folded into the split weights; scores computed only where
    # an entry needs them
    Wl = theta[:o_bl].reshape((m, d))
    Wf = np.empty((m, d))
    bf = np.empty(m)
    for j in range(m):
        c = theta[o_g + j] / math.sqrt(rv[j] + eps_bn)
        for f in range(d):
            Wf[j, f] = c * Wl[j, f]
        bf[j] = c * (theta[o_bl + j] - rm[j]) + theta[o_bb + j] + theta[o_be + j]
    scale = np.empty(T)
    thresh = np.empty(T)
    start, erows, _, z, _ = _sparse_layer(np.empty((m, 0)), lam, shift, delta, upper, solve, a_in, scale, thresh,
                                          shift if solve else delta, Xb, Wf, bf, elu)
    _sparse_head(Xb, start, erows, z, theta[o_wh:o_bh].reshape((K, F)), theta[o_bh:o_bh + K], xz, out)
