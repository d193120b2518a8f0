"""A trained model's tree with one split of its data routed through it (what explorers show)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.tree import NodeStats, Tree
from treeviz.services.data import PreparedData

PARTS = ("train", "val", "test")


@dataclass(frozen=True, eq=False)
class RunView:
    """The model, its tree, the rows of one split, their labels in the tree's class order, and node stats.

    ``labels`` are what the estimator was fitted on (class names or target values, None for
    clustering); ``y_tree`` are the same as class indices into ``tree.output_names``
    (classification) or floats (regression), None for clustering and embedding trees; ``stats``
    is None when the split is empty.
    """

    model: Any
    tree: Tree
    prepared: PreparedData
    part: str
    X: np.ndarray
    labels: np.ndarray | None
    y_tree: np.ndarray | None
    stats: NodeStats | None

    @classmethod
    def build(cls, model: Any, prepared: PreparedData, part: str, tree_index: int = 0) -> RunView:
        """``tree_index`` picks one tree of an ensemble (0 for single-tree models)."""
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}")
        trees = model.to_trees() if tree_index else None
        tree = model.to_tree() if trees is None else trees[min(max(int(tree_index), 0), len(trees) - 1)]
        X = prepared.X(part)
        labels = prepared.labels(part)
        if labels is None or tree.task in ("clustering", "embedding"):  # leaves hold no labels
            y_tree = None
        elif tree.task == "classification":
            y_tree = tree.class_index(labels)
        else:
            y_tree = np.asarray(labels, dtype=np.float64)
        stats = tree.node_stats(X, y_tree) if X.shape[0] else None
        return cls(model, tree, prepared, part, X, labels, y_tree, stats)

    def rules_tree(self, original_units: bool = True) -> Tree:
        """The tree to read rules from: in the data's own units when the preprocessing is affine
        (none / standard scaling) and ``original_units`` is set, else in model units."""
        affine = self.prepared.affine_scaling() if original_units else None
        return self.tree if affine is None else self.tree.in_input_units(*affine)

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])

    def predicted_label(self, row: int) -> str:
        """The model's prediction for one row, in words (from the model, which for some families
        is not the tree's leaf value)."""
        x = self.X[row : row + 1]
        if not hasattr(self.model, "predict"):  # an embedding: the point's coordinates
            return "(" + ", ".join(f"{v:.4g}" for v in np.asarray(self.model.transform(x)).reshape(-1)) + ")"
        value = np.asarray(self.model.predict(x)).reshape(-1)[0]
        return f"{value:.4g}" if isinstance(value, (float, np.floating)) else str(value)

    def true_label(self, row: int) -> str | None:
        if self.labels is None:
            return None
        v = self.labels[row]
        return f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v)
