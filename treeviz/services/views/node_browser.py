"""The rows of one split that reach a node or leaf of a run's tree (the explorer's node and leaf
browser): their values in the data's own columns, the model's prediction for each and whether it is
wrong.

A row reaches a node when its hard root-to-leaf path passes through it (``Tree.decision_path``), the
routing the node's sample count uses for a hard tree. A soft tree's count weighs every row by its
probability of reaching the node; its browser lists the rows whose most probable path passes the
node and gives that probability beside each. Predictions are the model's own (``predict``: the
whole ensemble for a forest, a head for trees whose head decides), so a row is marked misclassified
exactly when the model gets it wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from treeviz.services.views.node_split import reaching_rows
from treeviz.services.views.run_view import RunView

#: The table's first columns, before the data's own.
ROW, PART_ROW, TRUE, PREDICTED, WRONG, ERROR, REACH = (
    "row", "row of the split", "true", "predicted", "misclassified", "error (predicted − true)", "P(reach)")
_CUT = ("positions", "data_rows", "values", "truth", "predicted", "wrong", "error", "reach")


@dataclass(frozen=True, eq=False)
class NodeRows:
    """The rows of split ``part`` reaching ``node``, in the split's order.

    ``positions`` index the split (the explorer's "Row of the split"), ``data_rows`` the data set;
    ``values`` are their features in the data's own units (before imputation and scaling, NaN kept).
    ``truth`` and ``predicted`` are class names (classification) or target values (regression);
    ``wrong`` marks predictions that differ from the truth (classification), ``error`` is the
    predicted value minus the true one (regression); each is None where the task has none.
    ``reach`` is the probability of reaching the node, for soft trees only.
    """

    node: int
    part: str
    task: str
    soft: bool
    positions: np.ndarray
    data_rows: np.ndarray
    values: np.ndarray
    feature_names: tuple[str, ...]
    image_shape: tuple[int, int] | None
    truth: np.ndarray | None
    predicted: np.ndarray | None
    wrong: np.ndarray | None
    error: np.ndarray | None
    reach: np.ndarray | None

    @property
    def n_rows(self) -> int:
        return int(self.positions.size)

    @property
    def n_wrong(self) -> int | None:
        return None if self.wrong is None else int(self.wrong.sum())

    def only_wrong(self) -> NodeRows:
        """The same rows cut to the misclassified ones (all of them when the task marks none)."""
        if self.wrong is None:
            return self
        keep = self.wrong
        cut = {name: None if getattr(self, name) is None else getattr(self, name)[keep] for name in _CUT}
        return NodeRows(self.node, self.part, self.task, self.soft, feature_names=self.feature_names,
                        image_shape=self.image_shape, **cut)

    def table(self, limit: int | None = None) -> pd.DataFrame:
        """One line per row (the first ``limit`` rows, default all): its row numbers, truth, prediction
        and mark, then the data's own columns (a column of the data named like one of the first ones
        keeps its name; theirs get brackets)."""
        cut = slice(None, limit)
        out: dict[str, object] = {ROW: self.data_rows[cut], PART_ROW: self.positions[cut]}
        for name, column in ((REACH, None if self.reach is None else np.round(self.reach, 4)),
                             (TRUE, self.truth), (PREDICTED, self.predicted), (WRONG, self.wrong),
                             (ERROR, self.error)):
            if column is not None:
                out[name] = column[cut]
        taken = set(self.feature_names)
        front = pd.DataFrame({_free(name, taken): column for name, column in out.items()})
        values = pd.DataFrame(self.values[cut], columns=list(self.feature_names))
        return pd.concat([front, values], axis=1)

    def labels(self) -> list[str]:
        """A short caption per row for a thumbnail: "row 12 · 3", "row 12 · 3 → 5" when wrong."""
        out = []
        for i in range(self.n_rows):
            text = f"row {int(self.data_rows[i])}"
            if self.truth is not None:
                text += f" · {_short(self.truth[i])}"
                if self.predicted is not None and (self.wrong is None or self.wrong[i]):
                    text += f" → {_short(self.predicted[i])}"
            out.append(text)
        return out


def _free(name: str, taken: set[str]) -> str:
    """``name``, bracketed until no column of the data has it (the data keeps its own names)."""
    while name in taken:
        name = f"[{name}]"
    return name


def _short(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, (float, np.floating)) else str(value)


def model_predictions(view: RunView) -> np.ndarray | None:
    """The model's prediction for every row of the view's split (None for a model that does not
    predict, such as an embedding)."""
    if not hasattr(view.model, "predict") or view.n_rows == 0 or view.tree.task == "embedding":
        return None
    return np.asarray(view.model.predict(view.X))


def node_rows(view: RunView, node: int, predictions: np.ndarray | None = None) -> NodeRows:
    """The rows of ``view``'s split that reach ``node``.

    ``predictions`` are the model's predictions for the whole split (:func:`model_predictions`,
    computed here when not given).
    """
    tree = view.tree
    positions, _ = reaching_rows(view, node)  # checks the node
    node = int(node)
    prepared = view.prepared
    idx = np.asarray({"train": prepared.train_idx, "val": prepared.val_idx, "test": prepared.test_idx}[view.part])
    soft = tree.routing == "soft"
    reach = None
    if soft:
        reach = tree.reach_probability(view.X[positions])[:, node] if positions.size else np.zeros(0)
    if predictions is None:
        predictions = model_predictions(view)
    truth = predicted = wrong = error = None
    if view.labels is not None and tree.task in ("classification", "regression"):
        truth = np.asarray(view.labels)[positions]
    if predictions is not None:
        predicted = np.asarray(predictions)[positions]
    if truth is not None and predicted is not None:
        if tree.task == "classification":
            truth, predicted = truth.astype(str), predicted.astype(str)
            wrong = predicted != truth
        else:
            truth = truth.astype(np.float64)
            predicted = predicted.astype(np.float64).reshape(truth.shape)
            error = predicted - truth
    dataset = prepared.dataset
    shape = tuple(int(v) for v in dataset.image_shape) if dataset.image_shape is not None else None
    return NodeRows(node=node, part=view.part, task=tree.task, soft=soft, positions=positions,
                    data_rows=idx[positions], values=dataset.X[idx[positions]],
                    feature_names=tuple(dataset.feature_names), image_shape=shape, truth=truth,
                    predicted=predicted, wrong=wrong, error=error, reach=reach)
