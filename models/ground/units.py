"""A tree rewritten for the inputs' own units, so that its rules read in the data's units."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from models.ground.errors import TreevizError

if TYPE_CHECKING:
    from models.ground.tree import Tree


def in_input_units(tree: Tree, mean: Any, scale: Any) -> Tree:
    """The same tree for inputs before an affine scaling ``x_model = (x - mean) / scale``.

    Hyperplanes are rewritten exactly in the original units: ``w·((x - μ)/σ) + b`` equals
    ``(w/σ)·x + (b - Σ w μ/σ)``, so rules read in the data's own units (e.g. "petal width >
    0.8"). Routing raw inputs through the result agrees with routing scaled inputs through
    this tree up to floating-point rounding at the thresholds; use it to *show* rules.
    """
    mean = np.asarray(mean, dtype=np.float64).reshape(-1)
    scale = np.asarray(scale, dtype=np.float64).reshape(-1)
    if mean.shape != (tree.n_features,) or scale.shape != (tree.n_features,):
        raise TreevizError(f"The scaling needs {tree.n_features} means and scales.")
    if np.any(scale == 0) or not np.all(np.isfinite(scale)):
        raise TreevizError("Scales must be finite and nonzero.")
    weight = tree.weight / scale
    bias = tree.bias - weight @ mean
    leaf_weight, leaf_value = tree.leaf_weight, tree.leaf_value
    if leaf_weight is not None:
        leaf_weight = leaf_weight / scale
        leaf_value = leaf_value - np.where(tree.is_leaf[:, None], leaf_weight @ mean, 0.0)
    return tree._replace(weight=weight, bias=bias, leaf_weight=leaf_weight, leaf_value=leaf_value)
