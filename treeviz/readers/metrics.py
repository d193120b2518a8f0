"""Metrics that read a Tree (dendrogram purity, ensemble votes, features used), and the quality
metrics of an embedding (kNN accuracy, trustworthiness).

Dendrogram purity (Heller & Ghahramani 2005; Monath et al. 2019) is the expected purity of the
least common ancestor of two points of the same class::

    DP = (1/|P*|) Σ_{(i, j) ∈ P*} pur(lvs(LCA(x_i, x_j)), class of i),   pur(S, c) = |S ∩ c| / |S|

Points are routed by the tree's hard paths; two points in the same leaf have that leaf as LCA.

Variants (the paper defines the first; its public code computes the second):

* ``"standard"`` (default): unordered pairs of distinct points, P* = {i < j, same class};
* ``"code"``: what the latent-tree reference code computes (and what produced the paper's DP
  numbers): ordered pairs *including self-pairs*, normalised by Σ_c N_c². The self-pairs are
  scored with leaf purity and inflate DP on small sets.

Both are computed in O(|T|·K) from per-node class counts: the same-class pairs whose LCA is an
internal node v are n_{L(v),c}·n_{R(v),c} (×2 for ordered pairs); at a leaf v they are
n_{v,c}(n_{v,c}−1)/2 (standard) or n_{v,c}² (code).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.ground.tree import Tree

DP_VARIANTS = ("standard", "code")


def dendrogram_purity_from_counts(tree: Tree, class_counts: np.ndarray, variant: str = "standard") -> float:
    """Dendrogram purity from per-node class counts ``class_counts[node, class]`` (hard routing)."""
    if variant not in DP_VARIANTS:
        raise TreevizError(f"Unknown dendrogram purity variant {variant!r}; use one of {DP_VARIANTS}.")
    counts = np.asarray(class_counts, dtype=np.float64)
    n_v = counts.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        purity = np.where(n_v > 0, counts / np.where(n_v > 0, n_v, 1.0), 0.0)
    pairs = np.zeros_like(counts)
    internal, leaves = tree.decision_nodes, tree.leaves
    cross = counts[tree.children_left[internal]] * counts[tree.children_right[internal]]
    leaf_counts = counts[leaves]
    if variant == "standard":
        pairs[internal] = cross
        pairs[leaves] = leaf_counts * (leaf_counts - 1.0) / 2.0
        total = (counts[0] * (counts[0] - 1.0) / 2.0).sum()
    else:
        pairs[internal] = 2.0 * cross
        pairs[leaves] = leaf_counts**2
        total = (counts[0] ** 2).sum()
    if total <= 0:
        raise TreevizError("Dendrogram purity needs at least two points of one class.")
    return float((pairs * purity).sum() / total)


def class_counts_by_node(tree: Tree, X: Any, labels: Any) -> tuple[np.ndarray, list[str]]:
    """Counts of each class among the points reaching each node by hard routing.

    ``labels`` are any class labels (they need not be the tree's outputs: a clustering tree is
    described by reference classes it never saw). Returns ``(counts[node, class], class names)``
    with classes in sorted order.
    """
    X = np.asarray(X, dtype=np.float64)
    names, y = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    y = y.reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise TreevizError(f"X has {X.shape[0]} rows but there are {y.shape[0]} labels.")
    membership = tree.decision_path(X).astype(np.float64)  # (n, n_nodes), hard paths
    onehot = np.zeros((y.size, names.size))
    onehot[np.arange(y.size), y] = 1.0
    return np.asarray(membership.T @ onehot), [str(n) for n in names]


def dendrogram_purity(tree: Tree, X: Any, labels: Any, variant: str = "standard") -> float:
    """Dendrogram purity of the hierarchy ``tree`` defines, for points ``X`` with classes ``labels``."""
    counts, _ = class_counts_by_node(tree, X, labels)
    return dendrogram_purity_from_counts(tree, counts, variant)


def dendrogram_purity_bruteforce(tree: Tree, X: Any, labels: Any, variant: str = "standard") -> float:
    """The O(n²) pair loop of the definition (for tests; use :func:`dendrogram_purity`)."""
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels).astype(str)
    paths = tree.paths(X)
    reach = tree.decision_path(X).toarray().astype(bool)
    total, count = 0.0, 0
    n = X.shape[0]
    for i in range(n):
        for j in range(n):
            if labels[i] != labels[j] or (variant == "standard" and j <= i):
                continue
            if variant == "standard" and i == j:
                continue
            on_j = set(paths[j][paths[j] >= 0].tolist())
            lca = [v for v in paths[i] if v >= 0 and v in on_j][-1]  # deepest common node
            members = reach[:, lca]
            total += float((labels[members] == labels[i]).sum()) / float(members.sum())
            count += 1
    return total / count


def tree_votes(trees: list[Tree] | tuple[Tree, ...], X: np.ndarray) -> np.ndarray:
    """Each tree's hard prediction per sample, shape (n_trees, n_samples): the arg max class index
    (classification) or the first output (regression)."""
    out = []
    for tree in trees:
        values = tree.predict_value(X)
        out.append(np.argmax(values, axis=1) if tree.task == "classification" else values[:, 0])
    return np.stack(out)


def vote_agreement(trees: list[Tree] | tuple[Tree, ...], X: np.ndarray) -> dict[str, Any]:
    """How alike an ensemble's trees vote on ``X`` (classification: equal labels; regression:
    correlation of predictions).

    Returns
    -------
    dict
        ``pairwise`` (n_trees × n_trees fractions, 1 on the diagonal), ``with_ensemble`` (each
        tree's agreement with the majority vote / mean prediction) and ``mean_pairwise`` (mean
        over distinct pairs; 1.0 for one tree).
    """
    if not trees:
        raise TreevizError("An ensemble needs at least one tree.")
    votes = tree_votes(trees, np.asarray(X, dtype=np.float64))
    t = votes.shape[0]
    if trees[0].task == "classification":
        pair = np.array([[np.mean(votes[i] == votes[j]) for j in range(t)] for i in range(t)])
        k = trees[0].n_outputs
        counts = np.stack([(votes == c).sum(axis=0) for c in range(k)], axis=1)
        majority = np.argmax(counts, axis=1)  # ties to the smaller class index
        with_ens = np.array([np.mean(votes[i] == majority) for i in range(t)])
    else:
        pair = np.corrcoef(votes) if t > 1 else np.ones((1, 1))
        pair = np.nan_to_num(pair, nan=1.0)
        mean = votes.mean(axis=0)
        with_ens = np.array([np.nan_to_num(np.corrcoef(votes[i], mean)[0, 1], nan=1.0) for i in range(t)])
    off = pair[~np.eye(t, dtype=bool)]
    return {"pairwise": pair, "with_ensemble": with_ens, "mean_pairwise": float(off.mean()) if off.size else 1.0}


def class_auc(labels: np.ndarray, proba: np.ndarray, classes: np.ndarray) -> float | None:
    """ROC AUC of class probabilities, as feature-selection papers report it: the probability of
    the second class for two classes, one-vs-one macro average for more (scikit-learn's
    ``multi_class="ovo"``, Hand & Till's mean over class pairs). ``proba`` columns follow ``classes``.
    Classes absent from ``labels`` are left out (their columns dropped and the rest renormalised);
    None with fewer than two present. Computed here from ranks (:func:`binary_auc`), equal to
    scikit-learn's ``roc_auc_score`` (tested) and without its input checks on each of the k(k-1)
    pairs, which took 1.8 s of a digits fit's 2 s of scoring."""
    labels, classes = np.asarray(labels), np.asarray(classes)
    index = {c: i for i, c in enumerate(classes.tolist())}
    y = np.array([index.get(v, -1) for v in labels.tolist()])
    keep = y >= 0
    y, proba = y[keep], np.asarray(proba, dtype=np.float64)[keep]
    present = np.unique(y)
    if present.size < 2:
        return None
    if present.size < classes.size:
        proba = proba[:, present]
        total = proba.sum(axis=1, keepdims=True)  # 0 where a row puts all its mass on absent classes
        proba = np.where(total > 0, proba / np.where(total > 0, total, 1.0), 1.0 / present.size)
        y = np.searchsorted(present, y)
    if proba.shape[1] == 2:
        return binary_auc(y == 1, proba[:, 1])
    pairs = []
    for a in range(proba.shape[1]):
        for b in range(a + 1, proba.shape[1]):
            rows = (y == a) | (y == b)
            pairs.append(0.5 * (binary_auc(y[rows] == a, proba[rows, a]) + binary_auc(y[rows] == b, proba[rows, b])))
    return float(np.mean(pairs))


def binary_auc(positive: np.ndarray, score: np.ndarray) -> float:
    """ROC AUC of ``score`` for the rows where ``positive`` is true against the others: the
    Mann-Whitney statistic from average ranks, so a tie counts one half (the trapezoidal area of
    scikit-learn's ``roc_auc_score``); both sides need a row."""
    from scipy.stats import rankdata  # deferred, as the other scipy users here

    positive = np.asarray(positive, dtype=bool)
    n_pos = int(positive.sum())
    n_neg = positive.size - n_pos
    ranks = rankdata(np.asarray(score, dtype=np.float64))
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def features_used(trees: list[Tree]) -> np.ndarray:
    """(n_features,) bool: the features some tree's split or linear leaf gives a nonzero weight."""
    used = np.zeros(trees[0].n_features, dtype=bool)
    for tree in trees:
        used |= np.any(tree.weight[tree.decision_nodes] != 0, axis=0)
        if tree.leaf_weight is not None:
            used |= np.any(tree.leaf_weight[tree.leaves] != 0, axis=(0, 1))
    return used


def feature_weight_norms(trees: list[Tree]) -> np.ndarray:
    """(n_features,) each feature's weight norm over every decision node of every tree: its group
    norm, for Skinny Trees; for axis-aligned trees the square root of the number of splits on it."""
    total = np.zeros(trees[0].n_features)
    for tree in trees:
        total += np.sum(tree.weight[tree.decision_nodes] ** 2, axis=0)
    return np.sqrt(total)


# ---------------------------------------------------------------------------- embeddings
#: Neighbours of the embedding-quality metrics (kNN accuracy, trustworthiness).
EMBEDDING_NEIGHBOURS = 5
#: Trustworthiness ranks all pairs; above this many points it is computed on a seeded sample.
TRUSTWORTHINESS_MAX_POINTS = 3000


def knn_accuracy(Z: Any, labels: Any, Z_eval: Any = None, labels_eval: Any = None, *,
                 k: int = EMBEDDING_NEIGHBOURS) -> float:
    """Accuracy of a k-nearest-neighbour vote in an embedding (not a measure from the tree
    embedding thesis; what a user judges a 2-D map by).

    Without ``Z_eval`` it is leave-one-out on ``Z`` (each point voted on by its k nearest other
    points); with it, the points ``Z_eval`` are voted on by their k nearest points of ``Z``. Ties
    go to the class that comes first in sorted order."""
    from sklearn.neighbors import NearestNeighbors  # deferred: scikit-learn's neighbours load slowly

    Z = np.asarray(Z, dtype=np.float64)
    names, y = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    loo = Z_eval is None
    Q = Z if loo else np.asarray(Z_eval, dtype=np.float64)
    truth = np.asarray(labels if loo else labels_eval).astype(str)
    k = int(min(k, Z.shape[0] - (1 if loo else 0)))
    if k < 1 or Q.shape[0] == 0:
        return float("nan")
    idx = NearestNeighbors(n_neighbors=k + int(loo)).fit(Z).kneighbors(Q, return_distance=False)
    idx = idx[:, 1:] if loo else idx
    votes = np.zeros((Q.shape[0], names.size))
    np.add.at(votes, (np.repeat(np.arange(Q.shape[0]), k), y.reshape(-1)[idx].reshape(-1)), 1.0)
    return float(np.mean(names[np.argmax(votes, axis=1)] == truth))


def trustworthiness_score(X: Any, Z: Any, *, k: int = EMBEDDING_NEIGHBOURS,
                          max_points: int = TRUSTWORTHINESS_MAX_POINTS, seed: int = 0) -> float:
    """scikit-learn's ``trustworthiness`` of an embedding ``Z`` of ``X`` (1 = every point's k
    nearest neighbours in the embedding are also near in the input), on at most ``max_points``
    points drawn with ``seed`` (it ranks all pairs, O(n²) memory)."""
    from sklearn.manifold import trustworthiness  # deferred: scikit-learn's manifold module loads slowly

    X, Z = np.asarray(X, dtype=np.float64), np.asarray(Z, dtype=np.float64)
    n = X.shape[0]
    if n > max_points:
        keep = np.sort(np.random.default_rng(seed).choice(n, max_points, replace=False))
        X, Z, n = X[keep], Z[keep], max_points
    if n < 2 * k + 2:  # trustworthiness needs k < n / 2
        return float("nan")
    return float(trustworthiness(X, Z, n_neighbors=k))
