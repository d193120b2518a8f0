"""The rows of a split that reach one node of a tree, and the number each is split on there.

The Tree explorer's split histogram reads :func:`node_split`: which of the split's rows reach the
node, the node's score for each (``w·x + b`` for an oblique node, the feature's value for an
axis-aligned one), the side each row went to, and the threshold between the sides. The sides come
from the tree's own routing (missing values by ``missing_right``), so the rows on each side are
exactly the rows that reach each child. :func:`sample_pixels` gives one row in the data's own units,
for the picture of a sample of an image table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.ground.errors import TreevizError
from treeviz.services.views.run_view import RunView

#: The axis title of an oblique node's score.
OBLIQUE_SCORE = "w·x + b"


@dataclass(frozen=True, eq=False)
class NodeSplit:
    """The rows of one split that reach a decision node, and how the node splits them.

    ``rows`` index the split's rows; ``score[i]`` is row ``rows[i]``'s value on the node's axis
    (NaN where a feature the node uses is missing), ``right[i]`` whether it went to the right child.
    Rows whose score is above ``threshold`` go right when ``right_above`` (else left). ``y`` holds
    the rows' class indices into the tree's ``output_names`` (classification), their targets
    (regression), or is None (no labels in the leaves). ``soft``: the tree routes softly, and a row
    counts where its most probable path goes.
    """

    node: int
    rows: np.ndarray
    score: np.ndarray
    right: np.ndarray
    threshold: float
    right_above: bool
    feature: int | None
    label: str
    y: np.ndarray | None
    soft: bool

    @property
    def n_rows(self) -> int:
        return int(self.rows.size)

    @property
    def n_right(self) -> int:
        return int(self.right.sum())

    @property
    def n_left(self) -> int:
        return self.n_rows - self.n_right

    @property
    def n_missing(self) -> int:
        return int(np.isnan(self.score).sum())


def reaching_rows(view: RunView, node: int) -> tuple[np.ndarray, np.ndarray]:
    """The split's rows whose (most probable) path passes ``node``, and for each the next node on
    its path (-1 at a leaf)."""
    tree = view.tree
    _check_node(view, node)
    if view.n_rows == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    paths = tree.paths(view.X)
    depth = int(tree.node_depth[node])
    rows = np.flatnonzero(paths[:, depth] == node)
    after = paths[rows, depth + 1] if depth + 1 < paths.shape[1] else np.full(rows.size, -1)
    return rows, after


def node_split(view: RunView, node: int, *, original_units: bool = True) -> NodeSplit:
    """How decision node ``node`` splits the rows of ``view``'s split that reach it.

    Parameters
    ----------
    view : RunView
        The run's tree and one split of its data.
    node : int
        A decision node of ``view.tree``.
    original_units : bool
        For an axis-aligned node, give the feature and its threshold in the data's own units when
        the preprocessing is affine (none or standard scaling); else in the model's units. An
        oblique node's ``w·x + b`` is the same number in both.

    Raises
    ------
    TreevizError
        When ``node`` is not a decision node of the tree.
    """
    tree = view.tree
    if tree.is_leaf[_check_node(view, node)]:
        raise TreevizError(f"Node {node} is a leaf: it splits nothing. Pick a decision node.")
    rows, after = reaching_rows(view, node)
    right = after == tree.children_right[node]
    X = view.X[rows]
    w, b = tree.weight[node], float(tree.bias[node])
    used = np.flatnonzero(w)
    missing = np.isnan(X[:, used]).any(axis=1) if used.size else np.zeros(rows.size, dtype=bool)
    if tree.is_axis_aligned()[node]:
        f = int(used[0])
        shown = view.rules_tree(original_units)
        wf, bf = float(shown.weight[node, f]), float(shown.bias[node])
        value = X[:, f]
        affine = view.prepared.affine_scaling() if original_units else None
        if affine is not None:
            value = value * affine[1][f] + affine[0][f]
        score = np.where(missing, np.nan, value)
        return NodeSplit(int(node), rows, score, right, -bf / wf, wf > 0, f, tree.feature_names[f],
                         _labels(view, rows), tree.routing == "soft")
    score = np.where(np.isnan(X), 0.0, X) @ w + b
    score[missing] = np.nan
    return NodeSplit(int(node), rows, score, right, 0.0, True, None, OBLIQUE_SCORE, _labels(view, rows),
                     tree.routing == "soft")


def _check_node(view: RunView, node: int) -> int:
    if not 0 <= int(node) < view.tree.n_nodes:
        raise TreevizError(f"Node {node} is not in this tree (nodes 0 to {view.tree.n_nodes - 1}).")
    return int(node)


def _labels(view: RunView, rows: np.ndarray) -> np.ndarray | None:
    return None if view.y_tree is None else np.asarray(view.y_tree)[rows]


def sample_pixels(view: RunView, row: int) -> np.ndarray:
    """Row ``row`` of ``view``'s split in the data's own units (as read from the table, missing
    values NaN): the pixels of an image table's sample.

    Raises
    ------
    TreevizError
        When the split has no such row.
    """
    prepared = view.prepared
    index = {"train": prepared.train_idx, "val": prepared.val_idx, "test": prepared.test_idx}[view.part]
    if not 0 <= int(row) < index.size:
        raise TreevizError(f"The {view.part} split has no row {row} (it has {index.size} rows).")
    return np.asarray(prepared.dataset.X[index[int(row)]], dtype=np.float64)
