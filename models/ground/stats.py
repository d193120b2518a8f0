"""What a data set looks like inside a tree: per-node counts, class counts and target statistics
(:class:`NodeStats`), and class labels mapped to the tree's outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from models.ground import routing
from models.ground.errors import TreevizError

if TYPE_CHECKING:
    from models.ground.tree import Tree


@dataclass(frozen=True)
class NodeStats:
    """Per-node statistics of a data set routed through a tree.

    ``count[i]`` is the number of samples reaching node ``i`` (a sum of reach probabilities for
    soft routing). ``class_counts[i, k]`` counts samples of class index ``k`` (classification).
    ``value_mean`` / ``value_std`` are the mean and standard deviation of the target among the
    samples reaching each node (regression), NaN where no sample arrives.
    """

    count: np.ndarray
    class_counts: np.ndarray | None = None
    value_mean: np.ndarray | None = None
    value_std: np.ndarray | None = None

    @property
    def class_fraction(self) -> np.ndarray | None:
        if self.class_counts is None:
            return None
        total = self.class_counts.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, self.class_counts / np.where(total > 0, total, 1), 0.0)


def class_index(tree: Tree, labels: Any) -> np.ndarray:
    """Positions of class labels (compared as strings) in ``output_names``.

    Estimators may order classes differently from a dataset, so statistics and figures map
    labels through this rather than assuming the dataset's class order.
    """
    labels = np.asarray(labels).astype(str)
    uniq, inverse = np.unique(labels, return_inverse=True)
    lookup = {name: i for i, name in enumerate(tree.output_names)}
    missing = [str(u) for u in uniq if u not in lookup]
    if missing:
        raise TreevizError(
            f"Class {missing[0]!r} is not one of this tree's outputs "
            f"({', '.join(tree.output_names[:10])}); use the data the tree was trained on."
        )
    return np.array([lookup[u] for u in uniq], dtype=np.int64)[inverse.reshape(-1)]


def node_stats(tree: Tree, X: Any, y: Any = None, *, soft: bool | None = None) -> NodeStats:
    """Counts (and class counts or target mean/std) of the samples reaching each node.

    Parameters
    ----------
    X : array (n_samples, n_features)
    y : array, optional
        Class indices ``0..n_outputs-1`` for classification, or target values (1-D) for
        regression. Ignored for clustering and embedding trees (their leaves hold cluster or
        embedding outputs, not labels).
    soft : bool, optional
        Weight samples by their reach probability. Defaults to True for soft trees.
    """
    soft = tree.routing == "soft" if soft is None else soft
    X = routing.check_X(tree, X)
    if soft:
        weights = routing.reach_probability(tree, X)  # (n, n_nodes), dense
    else:
        # sparse (n, n_nodes) membership: deep trees on large data stay cheap
        weights = routing.decision_path(tree, X).astype(np.float64)
    count = np.asarray(weights.sum(axis=0)).reshape(-1)
    if y is None or tree.task in ("clustering", "embedding"):
        return NodeStats(count=count)
    y = np.asarray(y)
    if y.shape[0] != X.shape[0]:
        raise TreevizError(f"X has {X.shape[0]} rows but y has {y.shape[0]}.")
    if tree.task == "classification":
        y = y.astype(np.int64)
        k = tree.n_outputs
        if y.size and (y.min() < 0 or y.max() >= k):
            raise TreevizError(f"Class indices must lie in 0..{k - 1} for this tree.")
        onehot = sp.csr_matrix((np.ones(y.size), (np.arange(y.size), y)), shape=(y.size, k))
        counts = weights.T @ onehot
        return NodeStats(count=count, class_counts=counts.toarray() if sp.issparse(counts) else counts)
    yv = y.astype(np.float64).reshape(y.shape[0], -1)[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.asarray(weights.T @ yv).reshape(-1) / count
        second = np.asarray(weights.T @ (yv * yv)).reshape(-1) / count
    std = np.sqrt(np.maximum(second - mean * mean, 0.0))
    return NodeStats(count=count, value_mean=mean, value_std=std)
