"""Tree Alternating Optimization (Zharmagambetov 2022, ``shared/specs/tao.md``): the training loop.

TAO minimises, for a fixed tree structure (eq. 2.1, **sum form**: λ is not divided by N)::

    E(Θ) = Σ_n s_n L(y_n, T(x_n; Θ)) + λ Σ_i ‖w_i‖₁

with ``s_n`` optional sample weights, L the 0/1 loss (classification; cross-entropy with
absent classes scored β is an option for softmax leaves) or the squared error (regression,
vector targets allowed), and the ℓ1 sum over decision nodes and linear leaves.

One iteration visits depth levels leaves-first (reverse BFS, the default; ``tao.md`` §3.1): all
nodes of one level are non-descendants, so each is optimised on its own reduced set with the
others fixed (separability theorem, §2.1):

* a **leaf** is refitted exactly (majority class / weighted mean) or by an ℓ1 model (Lasso for
  regression, ℓ1 multinomial logistic regression with SAGA for classification; only the k most
  populous classes for softmax-tree leaves);
* a **decision node** solves the weighted binary problem of §2.2: each sample in its reduced
  set would incur loss ``l_left`` or ``l_right`` through the (fixed) children's subtrees; the
  pseudolabel is the better child, the weight ``v = |l_left - l_right|``; "don't care" points
  (v = 0) are dropped; the surrogate is ℓ1 logistic regression with an unpenalised bias
  (scikit-learn per node, or a batched torch proximal-gradient solver per level), or exact
  enumeration for axis-aligned nodes. No care point, or one pseudolabel only: the exact
  optimum is the constant split ``w = 0`` (§3.5), which later prunes a child.
* **guard** (``tao.md`` §2.4, on by default): an update is kept only if the node's reduced
  objective (weighted 0/1 + λ‖w‖₁, or the leaf's own objective) does not increase, so E never
  increases. ``guard="off"`` is the thesis's unguarded behaviour.

After the iterations: :func:`prune` (zero-weight nodes, dead branches, pure subtrees), one exact
leaf pass on the final routing, and a second prune (§3.3, §4).
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from models.tao.state import ABSENT, TAOTree, group_rows
from treeviz.errors import TreevizError

TASKS = ("classification", "regression")
LEAVES = ("constant", "linear", "softmax")
ORDERS = ("reverse_bfs", "bfs")
GUARDS = ("objective", "off")
SOLVERS = ("sklearn", "torch")
NODE_TYPES = ("oblique", "axis")
LOSSES = ("zero_one", "cross_entropy")


@dataclass(frozen=True)
class TAOConfig:
    """Everything the training loop needs besides data and the initial tree.

    ``n_outputs`` is the number of classes K (classification) or target dimensions (regression).
    ``solver_tol`` / ``solver_max_iter`` go to the node solvers; ``min_leaf_samples`` is the
    fewest samples a linear leaf is fitted on (below it the leaf is constant, ``tao.md`` pitfall 21).
    """

    task: str
    n_outputs: int
    l1_penalty: float = 0.01
    leaf: str = "constant"
    leaf_classes: int | None = None
    node_type: str = "oblique"
    max_iter: int = 20
    tol: float = 1e-4
    order: str = "reverse_bfs"
    guard: str = "objective"
    solver: str = "sklearn"
    device: str = "cpu"
    loss: str = "zero_one"
    beta: float = 100.0
    solver_tol: float = 1e-4
    solver_max_iter: int = 200
    min_leaf_samples: int = 2

    def __post_init__(self) -> None:
        for name, allowed in (("task", TASKS), ("leaf", LEAVES), ("order", ORDERS), ("guard", GUARDS),
                              ("solver", SOLVERS), ("node_type", NODE_TYPES), ("loss", LOSSES)):
            if getattr(self, name) not in allowed:
                raise TreevizError(f"TAO: {name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}.")
        if self.l1_penalty < 0:
            raise TreevizError("TAO: the ℓ1 penalty λ must be zero or positive.")
        if self.leaf == "softmax" and self.task != "classification":
            raise TreevizError("Softmax leaves are for classification; use constant or linear leaves for regression.")

    @property
    def linear_leaves(self) -> bool:
        return self.leaf != "constant"


# ---------------------------------------------------------------------------- losses
def class_probabilities(tree: TAOTree, scores: np.ndarray) -> np.ndarray:
    """Class probabilities from leaf scores: constant leaves store them; linear leaves a softmax."""
    if tree.leaf_weight is None:
        return scores
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def sample_loss(tree: TAOTree, scores: np.ndarray, Y: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """Per-sample loss L(y_n, leaf output) (unweighted)."""
    if cfg.task == "regression":
        return ((scores - Y) ** 2).sum(axis=1)
    if cfg.loss == "zero_one":
        return (np.argmax(scores, axis=1) != Y).astype(np.float64)
    p = class_probabilities(tree, scores)[np.arange(Y.shape[0]), Y]
    with np.errstate(divide="ignore"):
        return np.minimum(-np.log(p), cfg.beta)  # absent class (p = 0): β, never inf (§5.3 option 2)


def predictions_error(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    """Weighted training error rate (classification) or RMSE (regression)."""
    scores = tree.leaf_scores(X, tree.apply(X))
    if cfg.task == "classification":
        return float(np.sum(sw * (np.argmax(scores, axis=1) != Y)) / np.sum(sw))
    return float(np.sqrt(np.sum(sw * ((scores - Y) ** 2).sum(axis=1)) / (np.sum(sw) * Y.shape[1])))


def objective(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> float:
    """E(Θ) of eq. 2.1 in sum form (see module doc)."""
    scores = tree.leaf_scores(X, tree.apply(X))
    return float(np.sum(sw * sample_loss(tree, scores, Y, cfg)) + cfg.l1_penalty * tree.l1_norm())


# ---------------------------------------------------------------------------- leaves
def constant_leaf(tree: TAOTree, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """The exact constant leaf: class fractions (argmax = weighted majority, ties to the smallest
    class id) or the weighted mean; for linear-leaf trees the log-fractions (softmax = fractions)."""
    if cfg.task == "regression":
        return np.average(Y, axis=0, weights=sw)
    counts = np.bincount(Y, weights=sw, minlength=cfg.n_outputs)
    if tree.leaf_weight is not None:  # a softmax-tree leaf models its k most populous classes only
        counts = np.where(np.isin(np.arange(counts.size), _leaf_classes(counts, cfg)), counts, 0.0)
    frac = counts / counts.sum()
    if tree.leaf_weight is None:
        return frac
    with np.errstate(divide="ignore"):
        return np.where(frac > 0, np.log(np.maximum(frac, 1e-300)), ABSENT)


def _leaf_classes(counts: np.ndarray, cfg: TAOConfig) -> np.ndarray:
    """The classes a linear leaf models: those present, or for softmax leaves with
    ``leaf_classes = k`` the k most populous (ties to the smaller class id), sorted."""
    present = np.flatnonzero(counts > 0)
    if cfg.leaf == "softmax" and cfg.leaf_classes is not None and present.size > cfg.leaf_classes:
        order = np.argsort(-counts, kind="stable")
        present = np.sort(order[: cfg.leaf_classes])
    return present


def _leaf_objective(tree: TAOTree, leaf: int, value: np.ndarray, W: np.ndarray | None, Xi: np.ndarray,
                    Yi: np.ndarray, swi: np.ndarray, cfg: TAOConfig) -> float:
    scores = np.broadcast_to(value, (Xi.shape[0], value.shape[0])).copy()
    if W is not None:
        scores += Xi @ W.T
    loss = np.sum(swi * sample_loss(tree, scores, Yi, cfg))
    return float(loss + (cfg.l1_penalty * np.abs(W).sum() if W is not None else 0.0))


def _linear_leaf(Xi: np.ndarray, Yi: np.ndarray, swi: np.ndarray, cfg: TAOConfig,
                 constant: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An ℓ1 linear leaf: Lasso (regression) or ℓ1 softmax over the leaf's classes (classification).

    Sum-form λ converted per solver (``tao.md`` §3.4): Lasso minimises
    (1/(2Σs)) Σ s‖y − ŷ‖² + α‖W‖₁, so α = λ / (2 Σ s); LogisticRegression minimises
    C Σ s·logloss + ‖W‖₁, so C = 1/λ. SAGA, not SAG: sklearn's ``sag`` has no ℓ1 (§2.3).
    """
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression

    K, D = cfg.n_outputs, Xi.shape[1]
    W = np.zeros((K, D))
    lam = cfg.l1_penalty
    if cfg.task == "regression":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            if lam > 0:
                model = Lasso(alpha=lam / (2.0 * swi.sum()), tol=cfg.solver_tol, max_iter=max(1000, cfg.solver_max_iter))
            else:
                model = LinearRegression()
            model.fit(Xi, Yi, sample_weight=swi)
        W[:] = np.asarray(model.coef_).reshape(K, D)
        return np.asarray(model.intercept_, dtype=np.float64).reshape(K), W
    present = _leaf_classes(np.bincount(Yi, weights=swi, minlength=K), cfg)
    if present.size < 2:
        value = np.full(K, ABSENT)
        value[present] = 0.0
        return value, W
    keep = np.isin(Yi, present)
    Xk, yk, sk = Xi[keep], Yi[keep], swi[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = LogisticRegression(C=1.0 / max(lam, 1e-12), l1_ratio=1.0, solver="saga",
                                   tol=cfg.solver_tol, max_iter=cfg.solver_max_iter, random_state=0)
        model.fit(Xk, yk, sample_weight=sk)
    value = np.full(K, ABSENT)
    classes = model.classes_.astype(np.int64)
    if classes.size == 2:  # one logit: class b scores w·x + b against class a's 0
        value[classes[0]] = 0.0
        value[classes[1]] = float(model.intercept_[0])
        W[classes[1]] = model.coef_[0]
    else:
        value[classes] = model.intercept_
        W[classes] = model.coef_
    return value, W


def fit_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
               groups: list[tuple[int, np.ndarray]]) -> int:
    """Refit each leaf on its reduced set (``groups``: (leaf, sample indices)); returns the number
    of updates the guard rejected. Leaves with no samples are left as they are (pitfall 11)."""
    rejected = 0
    for leaf, idx in groups:
        if idx.size == 0:
            continue
        Yi, swi = Y[idx], sw[idx]
        constant = constant_leaf(tree, Yi, swi, cfg)
        if not cfg.linear_leaves:
            tree.value[leaf] = constant
            continue
        Xi = X[idx]
        if idx.size < cfg.min_leaf_samples:
            value, W = constant, np.zeros_like(tree.leaf_weight[leaf])
        else:
            value, W = _linear_leaf(Xi, Yi, swi, cfg, constant)
        if cfg.guard == "objective":
            new = _leaf_objective(tree, leaf, value, W, Xi, Yi, swi, cfg)
            old = _leaf_objective(tree, leaf, tree.value[leaf], tree.leaf_weight[leaf], Xi, Yi, swi, cfg)
            if new > old + 1e-12 * max(1.0, abs(old)):
                rejected += 1
                continue
        tree.value[leaf] = value
        tree.leaf_weight[leaf] = W
    return rejected


# ---------------------------------------------------------------------------- decision nodes
@dataclass
class NodeProblem:
    """The reduced problem of one decision node (``tao.md`` §2.2), on its care points."""

    node: int
    X: np.ndarray  # care points
    y: np.ndarray  # pseudolabels, +1 = right child better, -1 = left
    v: np.ndarray  # weights |l_left - l_right| (times sample weights)
    n_right_now: int
    n_left_now: int


def reduced_problems(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
                     groups: list[tuple[int, np.ndarray]]) -> list[NodeProblem]:
    """Care points, pseudolabels and weights of decision nodes (all at one level), from the
    children's *current* subtrees (pitfall 2)."""
    if not groups:
        return []
    rows = np.concatenate([idx for _, idx in groups])
    owner = np.concatenate([np.full(idx.size, node) for node, idx in groups])
    Xs, Ys, ss = X[rows], Y[rows], sw[rows]
    losses = []
    for child in (tree.left[owner], tree.right[owner]):
        leaves = tree.apply(Xs, child)
        losses.append(ss * sample_loss(tree, tree.leaf_scores(Xs, leaves), Ys, cfg))
    l_left, l_right = losses
    v = np.abs(l_left - l_right)
    ybar = np.where(l_right < l_left, 1.0, -1.0)
    goes_right = tree.decision_values(Xs, np.arange(rows.size), owner) > 0
    out, start = [], 0
    for node, idx in groups:
        sl = slice(start, start + idx.size)
        start += idx.size
        care = v[sl] > 0
        out.append(NodeProblem(node, Xs[sl][care], ybar[sl][care], v[sl][care],
                               int(goes_right[sl].sum()), int((~goes_right[sl]).sum())))
    return out


def reduced_objective(p: NodeProblem, w: np.ndarray, b: float, lam: float) -> float:
    """Ē_i(θ) = Σ_care v·I(f(x) ≠ ȳ) + λ‖w‖₁ (eq. 2.2), with right iff w·x + b > 0."""
    pred = np.where(p.X @ w + b > 0, 1.0, -1.0) if p.X.shape[0] else np.zeros(0)
    return float(np.sum(p.v * (pred != p.y)) + lam * np.abs(w).sum())


def solve_problems(problems: list[NodeProblem], tree: TAOTree, cfg: TAOConfig) -> dict[int, tuple[np.ndarray, float]]:
    """New (w, b) per node: the exact constant split where it is optimal (§3.5), else the solver."""
    from models.tao import solvers

    D = tree.n_features
    out: dict[int, tuple[np.ndarray, float]] = {}
    hard: list[NodeProblem] = []
    for p in problems:
        if p.y.size == 0:  # no care point: every θ has the same loss; with ℓ1 the optimum is w = 0
            out[p.node] = (np.zeros(D), 1.0 if p.n_right_now >= p.n_left_now else -1.0)
        elif np.all(p.y == p.y[0]):  # one pseudolabel: send everything to that child
            out[p.node] = (np.zeros(D), float(p.y[0]))
        else:
            hard.append(p)
    if not hard:
        return out
    if cfg.node_type == "axis":
        for p in hard:
            feature, threshold, orientation, _ = solvers.best_axis_split(p.X, p.y, p.v)
            w, b = solvers.axis_split_to_hyperplane(feature, threshold, orientation, D)
            out[p.node] = (np.asarray(w, dtype=np.float64), float(b))
        return out
    lam = max(cfg.l1_penalty, 0.0)
    if cfg.solver == "sklearn":
        for p in hard:
            w, b = solvers.l1_logistic_sklearn(p.X, p.y, p.v, lam, tol=cfg.solver_tol, max_iter=cfg.solver_max_iter)
            out[p.node] = (np.asarray(w, dtype=np.float64), float(b))
        return out
    Xall = np.concatenate([p.X for p in hard])
    group = np.concatenate([np.full(p.y.size, g) for g, p in enumerate(hard)])
    with _cpu_threads(cfg.device, 1):
        W, B = solvers.l1_logistic_torch(
            Xall, np.concatenate([p.y for p in hard]), np.concatenate([p.v for p in hard]), group, len(hard), lam,
            w0=np.stack([tree.weight[p.node] for p in hard]), b0=np.array([tree.bias[p.node] for p in hard]),
            device=cfg.device, tol=min(cfg.solver_tol, 1e-5), max_iter=max(cfg.solver_max_iter, 500))
    for g, p in enumerate(hard):
        out[p.node] = (np.asarray(W[g], dtype=np.float64), float(B[g]))
    return out


@contextmanager
def _cpu_threads(device: str, n: int):
    """Run torch on ``n`` CPU threads inside the block (restored after). The batched solver makes
    many small tensor operations per step; with several threads on a shared or busy CPU their
    synchronisation dominates (measured 1.4x liblinear's time with one thread, 8-180x with two
    on a loaded 2-core machine, ``benchmarks/tao_paper.py``)."""
    if not device.startswith("cpu"):
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def exact_bias(p: NodeProblem, w: np.ndarray) -> float:
    """The bias minimising the weighted 0/1 loss of ``p`` for the direction ``w`` (exact 1-D search
    over the cuts between consecutive distinct projections; the threshold is the midpoint)."""
    if p.y.size == 0:
        return 1.0
    s = p.X @ w
    order = np.argsort(s, kind="stable")
    s, y, v = s[order], p.y[order], p.v[order]
    # loss when the first k go left: right-labelled among them + left-labelled among the rest
    left_cost = np.concatenate([[0.0], np.cumsum(v * (y > 0))])
    right_cost = np.concatenate([np.cumsum((v * (y < 0))[::-1])[::-1], [0.0]])
    cost = left_cost + right_cost
    distinct = np.concatenate([[True], s[1:] > s[:-1], [True]])  # a cut only between distinct values
    cost = np.where(distinct, cost, np.inf)
    k = int(np.argmin(cost))
    if k == 0:
        return float(-s[0] + 1.0)  # everything right
    if k == s.size:
        return float(-s[-1])  # everything left (s + b <= 0)
    mid = 0.5 * (s[k - 1] + s[k])
    if not (s[k - 1] < mid < s[k]):  # adjacent floats: the cut sits on the left value
        mid = s[k - 1]
    return float(-mid)


def fit_decisions(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig,
                  groups: list[tuple[int, np.ndarray]]) -> tuple[int, int]:
    """Update every decision node of one level; returns (changed, rejected by the guard)."""
    problems = reduced_problems(tree, X, Y, sw, cfg, groups)
    new = solve_problems(problems, tree, cfg)
    changed = rejected = 0
    for p in problems:
        w, b = new[p.node]
        if cfg.guard == "objective":
            # Candidates: the surrogate's solution, the same direction with the exact 0/1-optimal bias,
            # and the old parameters with theirs; the best reduced objective wins (ties prefer the new
            # ones, listed first). The old parameters are a candidate, so Ē never increases.
            w_old, b_old = tree.weight[p.node].copy(), float(tree.bias[p.node])
            candidates = [(w, b), (w, exact_bias(p, w)), (w_old, b_old), (w_old, exact_bias(p, w_old))]
            scores = [reduced_objective(p, cw, cb, cfg.l1_penalty) for cw, cb in candidates]
            best = int(np.argmin(scores))
            w, b = candidates[best]
            if best >= 2:  # the surrogate's direction lost; at most the old bias improves
                rejected += 1
                if best == 2:
                    continue
        if not (np.array_equal(w, tree.weight[p.node]) and b == tree.bias[p.node]):
            changed += 1
        tree.weight[p.node] = w
        tree.bias[p.node] = b
    return changed, rejected


# ---------------------------------------------------------------------------- the loop
def _levels_from_assignment(tree: TAOTree, leaf_of_sample: np.ndarray) -> list[np.ndarray]:
    """Levels (as :meth:`TAOTree.route`) when samples are *assigned* to leaves (clustering init)."""
    parent = np.full(tree.n_slots, -1, dtype=np.int64)
    internal = np.flatnonzero(tree.left >= 0)
    parent[tree.left[internal]] = internal
    parent[tree.right[internal]] = internal
    depth = tree.depths()
    paths = [leaf_of_sample.astype(np.int64)]
    cur = paths[0]
    while np.any(parent[cur] >= 0):
        cur = np.where(parent[cur] >= 0, parent[cur], cur)
        paths.append(cur)
    n_levels = int(depth.max()) + 1
    levels = [np.full(leaf_of_sample.size, -1, dtype=np.int64) for _ in range(n_levels)]
    for p in paths:
        for d in range(n_levels):
            hit = depth[p] == d
            levels[d][hit] = p[hit]
    return levels


def _groups_at(levels: list[np.ndarray], d: int) -> list[tuple[int, np.ndarray]]:
    if d >= len(levels):
        return []
    return [(node, idx) for node, idx in group_rows(levels[d]) if node >= 0]


def one_pass(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, *,
             levels: list[np.ndarray] | None = None, leaves_only: bool = False) -> tuple[int, int]:
    """One TAO iteration over all depth levels; returns (changed decision nodes, guard rejections)."""
    changed = rejected = 0
    depth = tree.depths()
    max_depth = int(depth.max())
    order = range(max_depth, -1, -1) if cfg.order == "reverse_bfs" else range(max_depth + 1)
    if levels is None or cfg.order == "bfs":
        levels = tree.route(X) if levels is None else levels
    for d in order:
        if cfg.order == "bfs" and d > 0:
            levels = tree.route(X)  # top-down: recompute reduced sets before every level (pitfall 1)
        groups = _groups_at(levels, d)
        leaf_groups = [(n, i) for n, i in groups if tree.left[n] < 0]
        dec_groups = [(n, i) for n, i in groups if tree.left[n] >= 0]
        rejected += fit_leaves(tree, X, Y, sw, cfg, leaf_groups)
        if not leaves_only and dec_groups:
            c, r = fit_decisions(tree, X, Y, sw, cfg, dec_groups)
            changed += c
            rejected += r
    return changed, rejected


def refit_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> None:
    """Refit every leaf on the current routing, decision nodes frozen (§3.3 step 5; LapTAO's
    post-processing)."""
    groups = [(n, i) for n, i in tree.members(X).items() if tree.left[n] < 0]
    fit_leaves(tree, X, Y, sw, cfg, groups)


def prune(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> int:
    """Remove zero-weight nodes, dead branches and pure subtrees until nothing changes (§3.3).

    * ``w = 0``: the node sends everything one way (right iff its bias > 0); it is replaced by
      that child's subtree. Predictions do not change for any input.
    * a child no training sample reaches: the parent is replaced by the live child's subtree.
      Training predictions do not change.
    * constant leaves only: a subtree whose leaves all predict the same class (or the same value)
      becomes one leaf (class fractions pooled over its samples, so the arg max is unchanged).

    Returns the number of nodes removed.
    """
    before = tree.reachable().size
    while True:
        members = tree.members(X)
        changed = False
        for node in tree.postorder():
            if tree.left[node] < 0:
                continue
            left, right = int(tree.left[node]), int(tree.right[node])
            if not np.any(tree.weight[node]):
                keep = right if tree.bias[node] > 0 else left
            elif left not in members:
                keep = right
            elif right not in members:
                keep = left
            else:
                continue
            tree.splice(int(node), keep)
            changed = True
        if not cfg.linear_leaves:
            changed |= _collapse_pure(tree, tree.members(X), sw, cfg)
        if not changed:
            return before - tree.reachable().size


def _collapse_pure(tree: TAOTree, members: dict[int, np.ndarray], sw: np.ndarray, cfg: TAOConfig) -> bool:
    key: dict[int, object] = {}
    mass: dict[int, float] = {}
    pooled: dict[int, np.ndarray] = {}
    for node in tree.postorder():
        node = int(node)
        if tree.left[node] < 0:
            v = tree.value[node]
            key[node] = int(np.argmax(v)) if cfg.task == "classification" else tuple(v.tolist())
            mass[node] = float(sw[members[node]].sum()) if node in members else 0.0
            pooled[node] = v * mass[node]
            continue
        a, b = int(tree.left[node]), int(tree.right[node])
        same = key[a] is not None and key[a] == key[b]
        key[node] = key[a] if same else None
        mass[node] = mass[a] + mass[b]
        pooled[node] = pooled[a] + pooled[b]
    changed = False
    for node in tree.reachable():  # top-down: collapse the largest pure subtrees
        node = int(node)
        if tree.left[node] < 0 or key.get(node) is None:
            continue
        if cfg.task == "classification" and mass[node] > 0:
            value = pooled[node] / mass[node]
        else:
            value = tree.value[_first_leaf(tree, node)].copy()
        tree.make_leaf(node, value)
        changed = True
    return changed


def _first_leaf(tree: TAOTree, node: int) -> int:
    while tree.left[node] >= 0:
        node = int(tree.left[node])
    return node


def train(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, *,
          on_iteration: Callable[[dict], bool] | None = None, initial_leaf: np.ndarray | None = None,
          finalize: bool = True) -> TAOTree:
    """Run TAO on ``tree`` in place and return it.

    Parameters
    ----------
    tree : TAOTree
        The initial tree (from :mod:`models.tao.init`) or a previous result (warm start).
    X : (N, D) float64;  Y : (N,) class indices or (N, K) float targets;  sw : (N,) weights.
    on_iteration : callable, optional
        Called with each iteration's record (iteration, objective, train_error, n_nonzero,
        n_decision_nodes, n_leaves, n_changed, n_rejected, time_s); return False to stop.
    initial_leaf : (N,) int, optional
        Leaf assignment used as the reduced sets of the first iteration (clustering init, §5.4).
    finalize : bool
        Prune, refit the leaves once and prune again at the end (the default).
    """
    e_prev = objective(tree, X, Y, sw, cfg)
    for it in range(cfg.max_iter):
        start = time.perf_counter()
        levels = _levels_from_assignment(tree, initial_leaf) if (it == 0 and initial_leaf is not None) else None
        if cfg.guard == "objective":
            # First try the plain (unguarded) pass; keep it if E did not increase. Otherwise redo the
            # pass from the saved tree with every node update guarded, which cannot increase E.
            saved = tree.copy()
            changed, rejected = one_pass(tree, X, Y, sw, replace(cfg, guard="off"), levels=levels)
            e = objective(tree, X, Y, sw, cfg)
            if e > e_prev + 1e-12 * max(1.0, abs(e_prev)):
                _restore(tree, saved)
                changed, rejected = one_pass(tree, X, Y, sw, cfg, levels=levels)
                e = objective(tree, X, Y, sw, cfg)
        else:
            changed, rejected = one_pass(tree, X, Y, sw, cfg, levels=levels)
            e = objective(tree, X, Y, sw, cfg)
        record = dict(iteration=it + 1, objective=e, train_error=predictions_error(tree, X, Y, sw, cfg),
                      n_nonzero=tree.n_nonzero(), n_decision_nodes=int(tree.decision_nodes().size),
                      n_leaves=int(tree.leaves().size), n_changed=changed, n_rejected=rejected,
                      time_s=time.perf_counter() - start)
        if on_iteration is not None and on_iteration(record) is False:
            break
        if changed == 0 and it > 0 and initial_leaf is None:
            break
        if abs(e_prev - e) <= cfg.tol * max(1.0, abs(e_prev)) and it > 0:
            break
        e_prev = e
    if finalize:
        finish(tree, X, Y, sw, cfg)
    return tree


def _restore(tree: TAOTree, saved: TAOTree) -> None:
    """Put ``saved``'s parameters back into ``tree`` (in place: callers hold ``tree``)."""
    tree.left[:], tree.right[:] = saved.left, saved.right
    tree.weight[:], tree.bias[:], tree.value[:] = saved.weight, saved.bias, saved.value
    if tree.leaf_weight is not None:
        tree.leaf_weight[:] = saved.leaf_weight
    tree.root = saved.root


def finish(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> None:
    """Prune, refit the leaves on the final routing, prune again (``tao.md`` §4)."""
    prune(tree, X, Y, sw, cfg)
    refit_leaves(tree, X, Y, sw, cfg)
    prune(tree, X, Y, sw, cfg)


def with_penalty(cfg: TAOConfig, l1_penalty: float) -> TAOConfig:
    return replace(cfg, l1_penalty=float(l1_penalty))
