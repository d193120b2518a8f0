"""Initial trees for TAO: from CART, random, or greedy class clustering (softmax trees)."""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from models.cart.estimators import float64_threshold
from models.ground.errors import TreevizError
from models.tao.config import TAOConfig
from models.tao.leaves import constant_leaf
from models.tao.state import TAOTree, complete_tree, group_rows


def cart_init(X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, depth: int,
              random_state: int | None) -> TAOTree:
    """Embed a scikit-learn CART of max depth ``depth``: split "x_j <= t -> left" becomes
    ``w = e_j``, ``b = -t'`` with ``t'`` the float64 image of sklearn's float32 comparison, so the
    tree routes every input (thresholds included) exactly as CART does."""
    if depth == 0:  # one leaf (scikit-learn's CART refuses max_depth=0)
        tree = complete_tree(0, X.shape[1], cfg.n_outputs, linear_leaves=cfg.linear_leaves)
        _fit_initial_leaves(tree, X, Y, sw, cfg)
        return tree
    if cfg.task == "classification":
        model = DecisionTreeClassifier(max_depth=depth, random_state=random_state).fit(X, Y, sample_weight=sw)
    else:
        model = DecisionTreeRegressor(max_depth=depth, random_state=random_state).fit(X, Y, sample_weight=sw)
    st = model.tree_
    n, D = st.node_count, X.shape[1]
    left = st.children_left.astype(np.int64)
    right = st.children_right.astype(np.int64)
    internal = np.flatnonzero(left >= 0)
    weight = np.zeros((n, D))
    weight[internal, st.feature[internal]] = 1.0
    bias = np.zeros(n)
    bias[internal] = -float64_threshold(st.threshold[internal])
    tree = TAOTree(left, right, weight, bias, np.zeros((n, cfg.n_outputs)),
                   np.zeros((n, cfg.n_outputs, D)) if cfg.linear_leaves else None, 0)
    _fit_initial_leaves(tree, X, Y, sw, cfg)
    return tree


def random_init(X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, depth: int,
                rng: np.random.Generator) -> TAOTree:
    """A complete tree of ``depth`` with unit-norm Gaussian weights (thesis) and, since the thesis
    leaves the bias open, ``b_i = -median(w_i·x)`` over the node's initial reduced set, computed
    top-down, so every node starts with data on both sides and none starts dead."""
    tree = complete_tree(depth, X.shape[1], cfg.n_outputs, linear_leaves=cfg.linear_leaves)
    internal = np.flatnonzero(tree.left >= 0)
    w = rng.standard_normal((internal.size, X.shape[1]))
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    tree.weight[internal] = w / np.where(norms > 0, norms, 1.0)
    at = np.zeros(X.shape[0], dtype=np.int64)
    for _ in range(depth):
        nxt = at.copy()
        for node, idx in group_rows(at):
            if tree.left[node] < 0:
                continue
            tree.bias[node] = 0.0
            s = tree.decision_values(X, idx, np.full(idx.size, node))  # w·x exactly as routing computes it
            tree.bias[node] = -_weighted_median(s, sw[idx])
            nxt[idx] = np.where(s + tree.bias[node] > 0, tree.right[node], tree.left[node])
        at = nxt
    _fit_initial_leaves(tree, X, Y, sw, cfg)
    return tree


def _weighted_median(s: np.ndarray, w: np.ndarray) -> float:
    """Median of ``s`` with sample weights ``w`` (``np.median`` when the weights are equal): the
    mean of the lower and upper weighted medians, so integer weights act as repeated samples."""
    order = np.argsort(s, kind="stable")
    s, cum = s[order], np.cumsum(w[order])
    half = 0.5 * cum[-1]
    lo = int(np.searchsorted(cum, half, side="left"))
    hi = int(np.searchsorted(cum, half, side="right"))
    return 0.5 * (float(s[min(lo, s.size - 1)]) + float(s[min(hi, s.size - 1)]))


def _fit_initial_leaves(tree: TAOTree, X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig) -> None:
    """Exact constant leaves on the initial routing (so a top-down first pass sees sensible
    children); linear leaves start constant (zero weights) and are fitted by the first pass."""
    for node, idx in tree.members(X).items():
        if tree.left[node] < 0:
            tree.value[node] = constant_leaf(tree, Y[idx], sw[idx], cfg)


# ---------------------------------------------------------------------------- clustering init
def greedy_level_pairs(means: np.ndarray, counts: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    """Pair clusters for one level of the clustering init: repeatedly merge the two
    closest remaining clusters (Euclidean distance of means); a new supercluster is not merged
    again at this level. Returns the pairs (in merge order), and the superclusters' means and
    counts (count-weighted means)."""
    m = means.shape[0]
    if m % 2:
        raise TreevizError("The clustering init needs an even number of clusters at every level.")
    d2 = ((means[:, None, :] - means[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(d2, np.inf)
    remaining = np.ones(m, dtype=bool)
    pairs = []
    for _ in range(m // 2):
        masked = np.where(remaining[:, None] & remaining[None, :], d2, np.inf)
        a, b = np.unravel_index(int(np.argmin(masked)), masked.shape)
        a, b = int(min(a, b)), int(max(a, b))
        pairs.append((a, b))
        remaining[[a, b]] = False
    new_counts = np.array([counts[a] + counts[b] for a, b in pairs], dtype=np.float64)
    safe = np.where(new_counts > 0, new_counts, 1.0)
    new_means = np.stack([(means[a] * counts[a] + means[b] * counts[b]) for a, b in pairs]) / safe[:, None]
    return pairs, new_means, new_counts


def clustering_init(X: np.ndarray, Y: np.ndarray, sw: np.ndarray, cfg: TAOConfig, depth: int,
                    rng: np.random.Generator) -> tuple[TAOTree, np.ndarray]:
    """The softmax-tree initial tree: 2^depth clusters paired greedily level by level.

    With at least 2^depth classes the class prototypes (class means, weighted by class counts)
    are clustered, so every class goes to exactly one leaf; otherwise the samples are. Returns
    the tree (random unit hyperplanes, median biases) and the leaf assigned to each sample, which
    the first TAO iteration uses as reduced sets.
    """
    if cfg.task != "classification":
        raise TreevizError("The clustering initialisation is for classification; use 'cart' or 'random'.")
    L = 2**depth
    seed = int(rng.integers(2**31 - 1))
    counts = np.bincount(Y, weights=sw, minlength=cfg.n_outputs)
    classes = np.flatnonzero(counts > 0)
    if classes.size >= L:
        protos = np.stack([np.average(X[Y == c], axis=0, weights=sw[Y == c]) for c in classes])
        km = KMeans(n_clusters=L, n_init=4, random_state=seed).fit(protos, sample_weight=counts[classes])
        class_cluster = np.full(cfg.n_outputs, 0, dtype=np.int64)
        class_cluster[classes] = km.labels_
        cluster_of_sample = class_cluster[Y]
    else:
        if X.shape[0] < L:
            raise TreevizError(f"The clustering init needs at least {L} samples for depth {depth}.")
        km = KMeans(n_clusters=L, n_init=4, random_state=seed).fit(X, sample_weight=sw)
        cluster_of_sample = km.labels_.astype(np.int64)
    means = np.zeros((L, X.shape[1]))
    mass = np.bincount(cluster_of_sample, weights=sw, minlength=L)
    for c, idx in group_rows(cluster_of_sample):
        means[c] = np.average(X[idx], axis=0, weights=sw[idx])
    # bottom-up levels; members[k] = original clusters under supercluster k at the current level
    members: list[list[int]] = [[c] for c in range(L)]
    tree_levels = []
    while len(members) > 1:
        pairs, means, mass = greedy_level_pairs(means, mass)
        tree_levels.append(pairs)
        members = [members[a] + members[b] for a, b in pairs]
    # top-down: heap node of every cluster (root = supercluster 0 of the last level)
    node_of = {0: 0}  # index at current level -> heap node
    for pairs in reversed(tree_levels):
        nxt = {}
        for k, (a, b) in enumerate(pairs):
            heap = node_of[k]
            nxt[a], nxt[b] = 2 * heap + 1, 2 * heap + 2
        node_of = nxt
    leaf_of_cluster = np.array([node_of[c] for c in range(L)], dtype=np.int64)
    tree = random_init(X, Y, sw, cfg, depth, rng)
    return tree, leaf_of_cluster[cluster_of_sample]
