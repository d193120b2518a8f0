"""A Tree as JSON: the description :meth:`Tree.to_json` writes and :meth:`Tree.from_json` reads back
exactly (NaN written as null), with its format version checked in both directions."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np

from models.ground.errors import TreevizError
from models.ground.jsonio import check_version

if TYPE_CHECKING:
    from models.ground.tree import Tree

FORMAT_VERSION = 1
#: The oldest tree description version :func:`from_dict` reads (``FORMAT_VERSION`` is the newest).
MIN_FORMAT_VERSION = 1


def _encode(a: np.ndarray | None) -> Any:
    if a is None:
        return None
    if np.isinf(a).any():
        raise ValueError("A Tree with infinite parameters cannot be written as JSON.")
    obj = a.astype(object)  # Python floats: json writes them with an exact repr
    obj[np.isnan(a)] = None
    return obj.tolist()


def _decode(v: Any) -> np.ndarray | None:
    if v is None:
        return None
    return np.array(_none_to_nan(v), dtype=np.float64)


def _none_to_nan(v: Any) -> Any:
    if v is None:
        return math.nan
    if isinstance(v, list):
        return [_none_to_nan(u) for u in v]
    return v


def to_dict(tree: Tree) -> dict[str, Any]:
    """A JSON-ready dict (NaN written as null) that :func:`from_dict` turns back exactly."""
    return {
        "format": "treeviz.Tree",
        "version": FORMAT_VERSION,
        "children_left": tree.children_left.tolist(),
        "children_right": tree.children_right.tolist(),
        "weight": _encode(tree.weight),
        "bias": _encode(tree.bias),
        "leaf_value": _encode(tree.leaf_value),
        "active": _encode(tree.active),
        "leaf_weight": _encode(tree.leaf_weight),
        "routing": tree.routing,
        "activation": tree.activation,
        "activation_width": tree.activation_width,
        "feature_names": list(tree.feature_names),
        "output_names": list(tree.output_names),
        "task": tree.task,
        "family": tree.family,
        "meta": tree.meta,
        "missing_right": tree.missing_right.tolist(),
    }


def from_dict(cls: type[Tree], data: dict[str, Any]) -> Tree:
    """The ``cls`` (a Tree) that :func:`to_dict` wrote. A description without ``missing_right``
    (written before trees routed missing values) sends every missing value left."""
    if not isinstance(data, dict) or data.get("format") != "treeviz.Tree":
        raise TreevizError("This is not a treeviz tree description (missing 'format').")
    check_version(data, what="This tree description", kind="tree descriptions", oldest=MIN_FORMAT_VERSION,
                  newest=FORMAT_VERSION, again=f"write the tree again with a treeviz that writes version "
                                              f"{FORMAT_VERSION} (Tree.to_json)")
    names = {f.name for f in fields(cls)}
    kwargs = {k: data[k] for k in names if k in data}
    for key in ("weight", "bias", "leaf_value", "active", "leaf_weight"):
        kwargs[key] = _decode(data.get(key))
    kwargs["feature_names"] = tuple(data.get("feature_names", ()))
    kwargs["output_names"] = tuple(data.get("output_names", ()))
    missing_right = data.get("missing_right")
    if missing_right is not None and (
        not isinstance(missing_right, list) or not all(isinstance(v, bool) for v in missing_right)
    ):
        raise TreevizError("The tree description is inconsistent: missing_right must be a list of booleans.")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as err:
        raise TreevizError(f"The tree description is inconsistent: {err}") from err


def to_json(tree: Tree, **dumps_kwargs: Any) -> str:
    return json.dumps(to_dict(tree), allow_nan=False, **dumps_kwargs)


def from_json(cls: type[Tree], text: str) -> Tree:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise TreevizError(f"The tree file is not valid JSON ({err.msg}, line {err.lineno}).") from err
    return from_dict(cls, data)
