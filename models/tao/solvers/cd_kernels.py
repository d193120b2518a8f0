"""The compiled kernels of the level solver (:mod:`models.tao.solvers.cd`, which checks the inputs, sorts the
rows by node and calls these): every node problem of one depth level in one numba call, by coordinate
descent, with warm starts.

A depth level's nodes partition the data, so solving all of them is about as much work as one
problem on N points; what made a level slow was calling a library solver once per node (input
checks, copies, set-up). Here the rows are sorted by node once, the features transposed once
(``Xt``, so that a feature's values within one node are contiguous), and a single compiled loop
runs over the nodes: no Python per node.

Three problems, each in **sum form** with the bias / intercepts unpenalised:

* **ℓ1-logistic** (decision nodes): ``min Σ v log(1 + exp(−y (w·x + b))) + λ‖w‖₁``, y = ±1.
  Solved by proximal Newton, the method of GLMNET and of liblinear's newGLMNET: at the current
  point the logistic loss is replaced by its second-order Taylor model (point weights
  ``h = v σ(1−σ)``), the ℓ1-penalised quadratic is minimised by cyclic coordinate descent
  (bias first, then each feature by a soft threshold; features that are zero with
  ``|∂f/∂w_j| ≤ λ`` at the start of the step are left out of it), and a backtracking
  line search on the true objective (Armijo, σ = 0.01) makes every step decrease it. A step with
  at least 4(m + 1) rows for its m active features solves the quadratic in covariance form: the
  weighted Gram matrix ``[X_a 1]ᵀ diag(h) [X_a 1]`` of the active features from one BLAS call,
  then coordinate steps that cost O(m) instead of O(n) (:func:`_gram_step`); fewer rows go through
  the residual (:func:`_residual_step`). (Gram matrices over all D features made a TAO fit on
  784 MNIST pixels at λ = 100 take 32 CPU s instead of 18.8.) Warm starts are guarded: the
  problem starts from w = 0 with the class-balance bias when that has the lower objective (a
  dense random hyperplane over many features saturates the loss, and its flat Newton model sent
  the line search into giving up far from the optimum), and a weight with no curvature and no
  slope (its feature is zero on the rows) goes to 0, the minimum of λ|w|. One
  exp per point per step serves both the loss and σ. It stops
  when the minimum-norm subgradient is at most ``tol · Σv`` (every partial derivative of the
  loss is bounded by ``Σ v |x_j|``, so this is a relative first-order optimality test), or when a
  step no longer lowers the objective (its rounding floor).
* **ℓ1-least-squares** (linear leaves of regression trees): ``min Σ s ‖y − W x − c‖² + λ‖W‖₁``,
  each output separately, by cyclic coordinate descent on the residual (Lasso's own method). It
  stops when a sweep lowers the objective by at most ``tol ·`` its value.
* **ℓ1-softmax** (linear / softmax leaves of classification trees):
  ``min Σ s (logsumexp_k S_k − S_y) + λ‖W‖₁`` with ``S_k = c_k + W_k·x`` over the classes the
  leaf models. Block coordinate descent over classes: with the other classes fixed, class k's
  part is a binary logistic problem with the offset ``−log Σ_{l≠k} exp S_l`` (label: y = k), and
  one proximal-Newton step of the solver above is taken on it (GLMNET's multinomial scheme). It
  stops when a sweep over the classes lowers the objective by at most ``tol ·`` its value.

Degenerate problems are answered exactly without iterating, as the other back-ends do: no row
with ``v > 0`` → ``w = 0, b = +1``; all labels on one side → ``w = 0, b = ±1`` toward it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: Armijo constant of the line search.
_SIGMA = 0.01
#: Inner coordinate-descent sweeps per proximal-Newton step (at most).
_INNER_SWEEPS = 50
#: Inner sweeps of the one proximal-Newton step a softmax class takes per sweep over the classes:
#: the other classes move right after, so solving its quadratic model exactly is wasted work.
_SOFTMAX_INNER = 3
#: Most inner sweeps in covariance form.
_GRAM_INNER = 200
#: In covariance form an inner sweep costs O(D²), so the quadratic model is solved much further.
_GRAM_INNER_REL = 1e-8
#: An inner sweep loop stops when its largest scaled step falls below this fraction of the first.
_INNER_REL = 1e-2


@njit(cache=True)
def _soft(u: float, t: float) -> float:
    if u > t:
        return u - t
    if u < -t:
        return u + t
    return 0.0


@njit(cache=True)
def _any_nonzero(w) -> bool:
    """Whether any weight is nonzero."""
    for j in range(w.size):
        if w[j] != 0.0:
            return True
    return False


@njit(cache=True, fastmath={"contract", "reassoc"})
def _gram_step(Xt, lo, n, h, grad, gb, hb, lam, w, act, d, dz, max_inner):
    """The proximal-Newton direction in covariance form over the step's active features ``act``
    (m of them; a feature outside it takes no step, so its row of the Gram matrix would never be
    read): their block ``Xa`` (m, n) of the node's rows, copied contiguous, ``A = [Xa 1]ᵀ diag(h)
    [Xa 1]`` (one BLAS call, cost n(m+1)(m+2)/2) and ``c = [Xa 1]ᵀ g`` (the gradient ``grad``,
    ``gb``, already at hand), then coordinate descent on the quadratic model in m-space (each
    coordinate O(m) instead of O(n)). ``d[:D]`` gets the weights' step (0 outside ``act``),
    ``d[D]`` the bias's, and ``dz`` the margins' change ``Xa d + d_b``."""
    m = act.size
    D = d.size - 1
    Xa = np.empty((m, n))
    Hx = np.empty((m, n))
    A = np.empty((m + 1, m + 1))
    c = np.empty(m + 1)
    q = np.zeros(m + 1)
    da = np.zeros(m + 1)
    for a in range(m):
        j = act[a]
        sj = 0.0
        for i in range(n):
            x = Xt[j, lo + i]
            Xa[a, i] = x
            hx = x * h[i]  # each row scaled by the point weights h
            Hx[a, i] = hx
            sj += hx
        c[a] = grad[j]
        A[a, m] = sj
        A[m, a] = sj
    if m > 0:
        A[:m, :m] = Hx @ Xa.T
    A[m, m] = hb
    c[m] = gb
    first = -1.0
    for _inner in range(max_inner):
        biggest = 0.0
        if hb > 0.0:
            step = -(c[m] + q[m]) / hb
            if step != 0.0:
                da[m] += step
                for k in range(m + 1):
                    q[k] += step * A[k, m]
                biggest = step * step * hb
        for a in range(m):
            aa = A[a, a]
            if aa <= 0.0:
                # no curvature and no slope: the feature is zero on the rows, so its model is λ|w|,
                # whose minimum is 0 (a warm start's weight there was otherwise kept forever)
                if c[a] + q[a] == 0.0 and w[act[a]] + da[a] != 0.0:
                    da[a] = -w[act[a]]
                continue
            cur = w[act[a]] + da[a]
            new = _soft(cur - (c[a] + q[a]) / aa, lam / aa)
            delta = new - cur
            if delta != 0.0:
                da[a] += delta
                for k in range(m + 1):
                    q[k] += delta * A[k, a]
                biggest = max(biggest, delta * delta * aa)
        if first < 0.0:
            first = biggest
        if biggest <= _GRAM_INNER_REL * first or biggest == 0.0:
            break
    for j in range(D):
        d[j] = 0.0
    d[D] = da[m]
    for i in range(n):
        dz[i] = da[m]
    for a in range(m):
        step = da[a]
        d[act[a]] = step
        if step != 0.0:
            for i in range(n):
                dz[i] += step * Xa[a, i]


@njit(cache=True, fastmath={"contract", "reassoc"})
def _residual_step(Xt, lo, n, g, h, hb, lam, w, active, H, d, dz, max_inner):
    """The proximal-Newton direction by coordinate descent on the residual ``dz = X d + d_b``
    (each coordinate O(n)); for problems with few rows per feature. ``d[D]`` is the bias's step."""
    D = Xt.shape[0]
    for j in range(D + 1):
        d[j] = 0.0
    for i in range(n):
        dz[i] = 0.0
    first = -1.0
    for _inner in range(max_inner):
        biggest = 0.0
        if hb > 0.0:
            gr = 0.0
            for i in range(n):
                gr += g[i] + h[i] * dz[i]
            step = -gr / hb
            d[D] += step
            for i in range(n):
                dz[i] += step
            biggest = max(biggest, step * step * hb)
        for j in range(D):
            a = H[j]
            if not active[j]:
                continue
            cur = w[j] + d[j]
            gr = 0.0
            for i in range(n):
                gr += Xt[j, lo + i] * (g[i] + h[i] * dz[i])
            if a <= 0.0:  # no curvature: as in _gram_step, a weight without slope goes to 0
                if gr == 0.0 and cur != 0.0:
                    d[j] -= cur
                    for i in range(n):
                        dz[i] -= cur * Xt[j, lo + i]
                continue
            new = _soft(cur - gr / a, lam / a)
            delta = new - cur
            if delta != 0.0:
                d[j] += delta
                for i in range(n):
                    dz[i] += delta * Xt[j, lo + i]
                biggest = max(biggest, delta * delta * a)
        if first < 0.0:
            first = biggest
        if biggest <= _INNER_REL * first or biggest == 0.0:
            break


@njit(cache=True, fastmath={"contract", "reassoc"})
def _logistic(Xt, lo, n, y, v, off, lam, w, b, max_outer, max_inner, tol, z):
    """Proximal Newton for one ℓ1-logistic problem on the rows ``lo … lo + n − 1`` (columns of the
    transposed, C-contiguous ``Xt``, shape (D, N); indexing it directly keeps the inner loops
    contiguous, so they vectorise); ``y``, ``v``, ``off``, ``z`` are the problem's own rows.

    ``w`` is updated in place, the final margins ``w·x + b + off`` are left in ``z``; returns
    (b, objective, Newton steps taken).
    """
    D = Xt.shape[0]
    for i in range(n):
        z[i] = b + off[i]
    for j in range(D):
        wj = w[j]
        if wj != 0.0:
            for i in range(n):
                z[i] += wj * Xt[j, lo + i]
    l1 = 0.0
    for j in range(D):
        l1 += abs(w[j])
    F = lam * l1
    vsum = 0.0
    E = np.empty(n)  # exp(−|y z|), shared by the loss and σ so each point costs one exp per step
    Enew = np.empty(n)
    pos = 0.0
    for i in range(n):
        t = y[i] * z[i]
        E[i] = np.exp(-abs(t))
        F += v[i] * (max(-t, 0.0) + np.log1p(E[i]))
        vsum += v[i]
        if y[i] > 0.0:
            pos += v[i]
    if _any_nonzero(w) and 0.0 < pos < vsum:
        # The better start of the warm one and w = 0 with the class-balance bias. A warm start whose
        # margins are large and wrong (a random hyperplane over hundreds of features) saturates the
        # loss: its Newton model is nearly flat, the step huge, and the line search gave up there
        # (MNIST, 784 pixels: 2.7e6 where liblinear, from zero, reached 2.0e4).
        b0 = np.log(pos / (vsum - pos))
        F0 = 0.0
        for i in range(n):
            t = y[i] * (b0 + off[i])
            F0 += v[i] * (max(-t, 0.0) + np.log1p(np.exp(-abs(t))))
        if F0 < F:
            w[:] = 0.0
            b = b0
            F = F0
            l1 = 0.0
            for i in range(n):
                z[i] = b + off[i]
                E[i] = np.exp(-abs(y[i] * z[i]))
    g = np.empty(n)
    h = np.empty(n)
    dz = np.empty(n)
    znew = np.empty(n)
    d = np.zeros(D + 1)
    H = np.empty(D)
    active = np.zeros(D, dtype=np.bool_)
    grad = np.empty(D)
    steps = 0
    for _ in range(max_outer):
        gb = 0.0
        hb = 0.0
        for i in range(n):
            e = E[i]
            s = e / (1.0 + e) if y[i] * z[i] >= 0.0 else 1.0 / (1.0 + e)  # σ(−y z)
            g[i] = -v[i] * y[i] * s
            h[i] = v[i] * s * (1.0 - s)
            gb += g[i]
            hb += h[i]
        viol = abs(gb)
        n_active = 0
        for j in range(D):
            gj = 0.0
            for i in range(n):
                gj += g[i] * Xt[j, lo + i]
            grad[j] = gj
            if w[j] > 0.0:
                vj = abs(gj + lam)
            elif w[j] < 0.0:
                vj = abs(gj - lam)
            else:
                vj = max(abs(gj) - lam, 0.0)
            viol = max(viol, vj)
            active[j] = w[j] != 0.0 or abs(gj) > lam
            n_active += active[j]
        if viol <= tol * vsum:
            break
        # covariance form pays off for n ≫ the active features (a strong λ keeps few of many)
        if n >= 4 * (n_active + 1) and max_inner > _SOFTMAX_INNER:
            _gram_step(Xt, lo, n, h, grad, gb, hb, lam, w, np.flatnonzero(active), d, dz, _GRAM_INNER)
        else:
            for j in range(D):
                if active[j]:
                    hj = 0.0
                    for i in range(n):
                        hj += h[i] * Xt[j, lo + i] * Xt[j, lo + i]
                    H[j] = hj
            _residual_step(Xt, lo, n, g, h, hb, lam, w, active, H, d, dz, max_inner)
        db = d[D]
        # directional derivative of the composite objective, then the line search
        l1new = 0.0
        for j in range(D):
            l1new += abs(w[j] + d[j])
        delta_f = lam * (l1new - l1)
        for i in range(n):
            delta_f += g[i] * dz[i]
        if not delta_f < 0.0:
            break
        alpha = 1.0
        accepted = False
        for _ls in range(40):
            l1a = 0.0
            for j in range(D):
                l1a += abs(w[j] + alpha * d[j])
            Fa = lam * l1a
            for i in range(n):
                znew[i] = z[i] + alpha * dz[i]
                t = y[i] * znew[i]
                Enew[i] = np.exp(-abs(t))
                Fa += v[i] * (max(-t, 0.0) + np.log1p(Enew[i]))
            if Fa <= F + _SIGMA * alpha * delta_f:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            break
        for j in range(D):
            w[j] += alpha * d[j]
        b += alpha * db
        for i in range(n):
            z[i] = znew[i]
            E[i] = Enew[i]
        l1 = l1a
        steps += 1
        decrease = F - Fa
        F = Fa
        if decrease <= 1e-15 * abs(F):
            break
    return b, F, steps


@njit(cache=True)
def logistic_level(Xt, y, v, starts, lam, W, B, max_outer, tol):
    """Every group ``g`` (rows ``starts[g]:starts[g+1]``) in turn; ``W``, ``B`` warm starts, in place."""
    G = starts.size - 1
    steps = np.zeros(G, dtype=np.int64)
    z = np.empty(Xt.shape[1])
    off = np.zeros(Xt.shape[1])
    for gi in range(G):
        lo, hi = starts[gi], starts[gi + 1]
        n_pos = 0
        for i in range(lo, hi):
            if y[i] > 0.0:
                n_pos += 1
        if hi == lo or n_pos == hi - lo:
            W[gi, :] = 0.0
            B[gi] = 1.0
            continue
        if n_pos == 0:
            W[gi, :] = 0.0
            B[gi] = -1.0
            continue
        w = W[gi]
        b, _, k = _logistic(Xt, lo, hi - lo, y[lo:hi], v[lo:hi], off[lo:hi], lam, w, B[gi], max_outer, _INNER_SWEEPS,
                             tol, z[lo:hi])
        B[gi] = b
        steps[gi] = k
    return steps


@njit(cache=True)
def _lasso_objective(r, s, w, lam):
    """Σ s r² + λ‖w‖₁ of one output's residual ``r``."""
    F = 0.0
    for i in range(r.size):
        F += s[i] * r[i] * r[i]
    for j in range(w.size):
        F += lam * abs(w[j])
    return F


@njit(cache=True)
def _softmax_objective(S, lse, ya, s, W, classes, lam):
    """Σ s (logsumexp − S_y) + λ‖W‖₁ over the modelled classes (``ya``: each row's class position)."""
    F = 0.0
    for i in range(ya.size):
        F += s[i] * (lse[i] - S[ya[i], i])
    for a in range(classes.size):
        for j in range(W.shape[1]):
            F += lam * abs(W[classes[a], j])
    return F


@njit(cache=True)
def lasso_level(Xt, Yt, s, starts, lam, W, C, max_sweeps, tol):
    """ℓ1-least-squares of every group and output; ``W`` (G, K, D), ``C`` (G, K) warm starts, in place."""
    D = Xt.shape[0]
    K = Yt.shape[0]
    G = starts.size - 1
    sweeps = np.zeros(G, dtype=np.int64)
    a = np.empty(D)
    for gi in range(G):
        lo, hi = starts[gi], starts[gi + 1]
        n = hi - lo
        ssum = 0.0
        for i in range(lo, hi):
            ssum += s[i]
        for j in range(D):
            aj = 0.0
            for i in range(lo, hi):
                aj += s[i] * Xt[j, i] * Xt[j, i]
            a[j] = aj
        r = np.empty(n)
        for k in range(K):
            for j in range(D):
                if a[j] == 0.0:  # a feature that is zero on every row: its ℓ1 optimum is 0
                    W[gi, k, j] = 0.0
            for i in range(n):
                r[i] = Yt[k, lo + i] - C[gi, k]
            for j in range(D):
                wj = W[gi, k, j]
                if wj != 0.0:
                    for i in range(n):
                        r[i] -= wj * Xt[j, lo + i]
            F = _lasso_objective(r, s[lo:hi], W[gi, k], lam)
            for sweep in range(max_sweeps):
                if ssum > 0.0:  # the intercept, exactly
                    mean = 0.0
                    for i in range(n):
                        mean += s[lo + i] * r[i]
                    mean /= ssum
                    C[gi, k] += mean
                    for i in range(n):
                        r[i] -= mean
                for j in range(D):
                    if a[j] == 0.0:
                        continue
                    wj = W[gi, k, j]
                    rho = 0.0
                    for i in range(n):
                        rho += s[lo + i] * Xt[j, lo + i] * r[i]
                    new = _soft(rho + a[j] * wj, 0.5 * lam) / a[j]
                    delta = new - wj
                    if delta != 0.0:
                        W[gi, k, j] = new
                        for i in range(n):
                            r[i] -= delta * Xt[j, lo + i]
                F_new = _lasso_objective(r, s[lo:hi], W[gi, k], lam)
                decrease = F - F_new
                F = F_new
                sweeps[gi] = max(sweeps[gi], sweep + 1)
                if decrease <= tol * abs(F):
                    break
    return sweeps


@njit(cache=True)
def softmax_level(Xt, Y, s, starts, active, lam, W, C, max_sweeps, tol):
    """ℓ1-softmax of every group over its active classes (``active`` (G, K) bool); ``W`` (G, K, D),
    ``C`` (G, K) warm starts, in place (inactive classes untouched)."""
    D = Xt.shape[0]
    G = starts.size - 1
    sweeps = np.zeros(G, dtype=np.int64)
    for gi in range(G):
        lo, hi = starts[gi], starts[gi + 1]
        n = hi - lo
        classes = np.flatnonzero(active[gi])
        m = classes.size
        if m < 2 or n == 0:
            continue
        S = np.empty((m, n))
        for a in range(m):
            k = classes[a]
            for i in range(n):
                S[a, i] = C[gi, k]
            for j in range(D):
                wkj = W[gi, k, j]
                if wkj != 0.0:
                    for i in range(n):
                        S[a, i] += wkj * Xt[j, lo + i]
        lse = np.empty(n)
        for i in range(n):
            mx = S[0, i]
            for a in range(1, m):
                mx = max(mx, S[a, i])
            tot = 0.0
            for a in range(m):
                tot += np.exp(S[a, i] - mx)
            lse[i] = mx + np.log(tot)
        ya = np.empty(n, dtype=np.int64)  # each row's class as a position in ``classes``
        for i in range(n):
            for a in range(m):
                if classes[a] == Y[lo + i]:
                    ya[i] = a
        F = _softmax_objective(S, lse, ya, s[lo:hi], W[gi], classes, lam)
        off = np.empty(n)
        lab = np.empty(n)
        z = np.empty(n)
        sg = s[lo:hi]
        for sweep in range(max_sweeps):
            for a in range(m):
                k = classes[a]
                for i in range(n):
                    p = np.exp(S[a, i] - lse[i])
                    if p < 0.5:
                        other = lse[i] + np.log1p(-p)
                    else:  # the other classes' log-sum directly (no cancellation)
                        mx = -np.inf
                        for c in range(m):
                            if c != a:
                                mx = max(mx, S[c, i])
                        tot = 0.0
                        for c in range(m):
                            if c != a:
                                tot += np.exp(S[c, i] - mx)
                        other = mx + np.log(tot)
                    off[i] = -other
                    lab[i] = 1.0 if ya[i] == a else -1.0
                b, _, _ = _logistic(Xt, lo, n, lab, sg, off, lam, W[gi, k], C[gi, k], 1, _SOFTMAX_INNER, 0.0, z)
                C[gi, k] = b
                for i in range(n):
                    S[a, i] = z[i] - off[i]
                    o = -off[i]
                    hi_ = max(o, S[a, i])
                    lse[i] = hi_ + np.log1p(np.exp(-abs(o - S[a, i])))
            F_new = _softmax_objective(S, lse, ya, s[lo:hi], W[gi], classes, lam)
            decrease = F - F_new
            F = F_new
            sweeps[gi] = sweep + 1
            if decrease <= tol * abs(F):
                break
    return sweeps
