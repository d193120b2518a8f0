"""Decision regions: what a run's model predicts over a grid of two features, the others held fixed.

:func:`decision_regions` builds the rows of the grid (every other feature held at one row of the
page's split, or at the training rows' median), has the run's own estimator predict them (through
:func:`treeviz.services.views.predict.model_outputs`, so every family answers as it does on the
Predict page, a head or an ensemble included), and gives the training points to draw over them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.ground.errors import TreevizError
from treeviz.services.views.predict import model_outputs, output_kind
from treeviz.services.views.run_view import RunView

#: Grid points along each feature.
RESOLUTION = 60
#: The most training points drawn over the regions (a seeded sample beyond).
MAX_POINTS = 2000


@dataclass(frozen=True, eq=False)
class Regions:
    """The model's output over a grid of features ``features`` (x first, then y).

    ``grid_x`` / ``grid_y`` are the grid's values in the model's (prepared) units, ``shown_x`` /
    ``shown_y`` the same in the units shown (``units``). ``output[i, j]`` is the model's output for
    :meth:`row` ``(i, j)``: feature y at ``grid_y[i]``, feature x at ``grid_x[j]``, every other
    feature as in ``held``. For ``kind == "class"`` outputs are codes into ``names`` (a
    classifier's codes are positions in the tree's ``output_names``, as in the tree's colours);
    for ``"value"`` they are predicted values. ``points`` are training rows in the shown units,
    ``point_values`` their class codes or targets (None without labels).
    """

    features: tuple[int, int]
    feature_names: tuple[str, str]
    grid_x: np.ndarray
    grid_y: np.ndarray
    shown_x: np.ndarray
    shown_y: np.ndarray
    held: np.ndarray
    held_label: str
    kind: str
    output: np.ndarray
    names: tuple[str, ...]
    points: np.ndarray
    point_values: np.ndarray | None
    units: str

    def row(self, i: int, j: int) -> np.ndarray:
        """The model-unit row predicted at grid point ``(i, j)``."""
        x = self.held.copy()
        x[self.features[0]] = self.grid_x[j]
        x[self.features[1]] = self.grid_y[i]
        return x

    def rows(self) -> np.ndarray:
        """Every grid row, y-major (row ``i * len(grid_x) + j`` is :meth:`row` ``(i, j)``)."""
        return grid_rows(self.held, self.features, self.grid_x, self.grid_y)


def grid_rows(held: np.ndarray, features: tuple[int, int], grid_x: np.ndarray, grid_y: np.ndarray) -> np.ndarray:
    """``held`` repeated over the grid, features ``features`` set to the grid's values, y-major."""
    out = np.repeat(np.asarray(held, dtype=np.float64)[None, :], grid_y.size * grid_x.size, axis=0)
    xx, yy = np.meshgrid(grid_x, grid_y)
    out[:, features[0]] = xx.ravel()
    out[:, features[1]] = yy.ravel()
    return out


def default_features(view: RunView) -> tuple[int, int]:
    """The two features the tree leans on most (largest total |weight| over its decision nodes),
    ties and unused features in column order."""
    d = view.tree.n_features
    if d < 2:
        raise TreevizError("Decision regions need two features; this data set has one.")
    total = np.abs(view.tree.weight[~view.tree.is_leaf]).sum(axis=0)
    order = np.argsort(-total, kind="stable")
    return int(order[0]), int(order[1])


def _grid(values: np.ndarray, resolution: int) -> np.ndarray:
    finite = values[np.isfinite(values)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (-1.0, 1.0)
    pad = 0.05 * (hi - lo) if hi > lo else 1.0
    return np.linspace(lo - pad, hi + pad, int(resolution))


def decision_regions(view: RunView, features: tuple[int, int], *, hold_row: int | None = None,
                     original_units: bool = True, resolution: int = RESOLUTION,
                     max_points: int = MAX_POINTS) -> Regions:
    """The run's predictions over a grid of two features.

    Parameters
    ----------
    view : RunView
        The run: its model, tree and prepared data; ``hold_row`` is a row of ``view``'s split.
    features : (int, int)
        The features along x and y (column indices, two different ones).
    hold_row : int, optional
        Hold every other feature at this row of the split; None holds them at the training rows'
        median.
    original_units : bool
        Give the axes in the data's own units when the preprocessing is affine; else in the model's.
    resolution : int
        Grid points along each axis.
    max_points : int
        The most training points returned (a seeded sample beyond).

    Raises
    ------
    TreevizError
        For an embedding (no predictions), the same feature twice, a feature or row out of range,
        or rows the model refuses.
    """
    a, b = (int(f) for f in features)
    prepared, tree = view.prepared, view.tree
    d = tree.n_features
    if not (0 <= a < d and 0 <= b < d) or a == b:
        raise TreevizError(f"Pick two different features (columns 0 to {d - 1}) for the decision regions.")
    kind = output_kind(view.model)
    if kind == "embedding":
        raise TreevizError("An embedding maps rows to coordinates and predicts no class or value, "
                           "so it has no decision regions.")
    X_train = prepared.X("train")
    if hold_row is None:
        held = np.nanmedian(X_train, axis=0) if X_train.shape[0] else np.zeros(d)
        held_label = "the training rows' median"
    else:
        if not 0 <= int(hold_row) < view.n_rows:
            raise TreevizError(f"The {view.part} split has no row {hold_row} (it has {view.n_rows} rows).")
        held, held_label = view.X[int(hold_row)].astype(np.float64), f"{view.part} row {int(hold_row)}"
    held = np.where(np.isfinite(held), held, 0.0)
    grid_x, grid_y = _grid(X_train[:, a], resolution), _grid(X_train[:, b], resolution)
    affine = prepared.affine_scaling() if original_units else None
    to_shown = (lambda v, f: v) if affine is None else (lambda v, f: v * affine[1][f] + affine[0][f])
    raw = model_outputs(view.model, grid_rows(held, (a, b), grid_x, grid_y), what="this run's model")[kind]
    output, names, out_kind = _codes(view, raw)
    points, values = _points(view, X_train, (a, b), max_points)
    shown = np.column_stack([to_shown(points[:, 0], a), to_shown(points[:, 1], b)])
    return Regions((a, b), (tree.feature_names[a], tree.feature_names[b]), grid_x, grid_y,
                   to_shown(grid_x, a), to_shown(grid_y, b), held, held_label, out_kind,
                   output.reshape(grid_y.size, grid_x.size), names, shown, values,
                   "the data's own units" if affine is not None else "the model's units")


def _codes(view: RunView, raw: np.ndarray) -> tuple[np.ndarray, tuple[str, ...], str]:
    """Model outputs as class codes with their names, or as values."""
    tree = view.tree
    if tree.task == "classification":
        return tree.class_index(raw), tuple(tree.output_names), "class"
    if tree.task == "regression":
        return np.asarray(raw, dtype=np.float64).reshape(raw.shape[0], -1)[:, 0], (), "value"
    ids = np.unique(raw)  # clusters: codes in id order
    names = tuple("no cluster" if int(c) < 0 else f"cluster {int(c)}" for c in ids)
    return np.searchsorted(ids, raw), names, "class"


def _points(view: RunView, X_train: np.ndarray, features: tuple[int, int],
            max_points: int) -> tuple[np.ndarray, np.ndarray | None]:
    """Training rows (model units, the two features) and their codes or targets, sampled."""
    labels = view.prepared.labels("train")
    take = np.arange(X_train.shape[0])
    if take.size > max_points:
        take = np.sort(np.random.default_rng(0).choice(take, max_points, replace=False))
    points = X_train[np.ix_(take, list(features))]
    if labels is None or view.tree.task not in ("classification", "regression"):
        return points, None
    if view.tree.task == "classification":
        return points, view.tree.class_index(np.asarray(labels)[take])
    return points, np.asarray(labels, dtype=np.float64)[take]
