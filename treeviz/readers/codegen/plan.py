"""The plan of an export: a checked hard Tree and, per node, the form both languages write (a split
as an exact threshold or a linear condition, a leaf as a class, scores, values or its id)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.ground.tree import Tree

#: What the exported code returns: the model's prediction, or the id of the leaf a row reaches.
OUTPUTS = ("prediction", "leaf")
#: The units a caller may declare for the header comment (``None``: say nothing about them).
UNITS = ("input", "model")

# Deepest tree exported (the generators recurse once per level).
_MAX_DEPTH = 400
# Steps through neighbouring floats when turning a one-feature split into an exact threshold.
_THRESHOLD_STEPS = 64

# What a model predicts from when not from its leaves, as the refusal and the header say it.
PREDICTION_SOURCES = {"head": "a learned predictor on the inputs and the path through the tree"}


# ---------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Affine:
    """``const + Σ weight·x[feature]`` over ``terms`` (feature order): a leaf output or score."""

    const: float
    terms: tuple[tuple[int, float], ...]

    @property
    def features(self) -> tuple[int, ...]:
        return tuple(j for j, _ in self.terms)


@dataclass(frozen=True)
class Split:
    """A decision node, in the form the code writes it.

    ``kind`` is ``"left"`` / ``"right"`` (no feature: every row goes that way), ``"le"`` / ``"ge"``
    (one feature: the row goes left iff ``x <= threshold`` / ``x >= threshold``) or ``"linear"``
    (left iff ``Σ w·x + bias <= 0``).
    """

    kind: str
    features: tuple[int, ...] = ()
    threshold: float = 0.0
    terms: tuple[tuple[int, float], ...] = ()
    bias: float = 0.0
    missing_right: bool = False


@dataclass(frozen=True)
class Leaf:
    """What a leaf returns: its id (``"leaf"``), a class index (``"class"``), class scores to take
    the arg max of (``"scores"``) or output values (``"values"``)."""

    kind: str
    index: int = 0
    outputs: tuple[Affine, ...] = ()

    @property
    def features(self) -> tuple[int, ...]:
        return tuple(sorted({j for a in self.outputs for j in a.features}))


class Plan:
    """A checked tree and the per-node forms both languages write."""

    def __init__(self, tree: Tree, output: str, fill_values: Any) -> None:
        _check_exportable(tree, output)
        self.tree = tree
        self.output = output
        self.fill = _fill_values(tree, fill_values)
        self.splits = {int(i): _split(tree, int(i)) for i in tree.decision_nodes}
        self.leaves = {int(i): _leaf(tree, int(i), output) for i in tree.leaves}
        used: set[int] = set()
        for node in _reachable(tree, self.splits):
            part = self.splits.get(node) or self.leaves[node]
            used.update(part.features)
        self.used = tuple(sorted(used))

    @property
    def missing(self) -> bool:
        """Whether inputs may be missing when they reach the tree (no fill values)."""
        return self.fill is None

    @property
    def kind(self) -> str:
        """``"leaf"``, ``"class"`` or ``"values"``: what the code returns."""
        if self.output == "leaf":
            return "leaf"
        return "class" if self.tree.task == "classification" else "values"

    @property
    def has_scores(self) -> bool:
        return any(leaf.kind == "scores" for leaf in self.leaves.values())


def _check_exportable(tree: Tree, output: str) -> None:
    if not isinstance(tree, Tree):
        raise TreevizError("Rules as code are written from a treeviz Tree; pass model.to_tree().")
    if output not in OUTPUTS:
        raise TreevizError(f"The code can return one of {', '.join(OUTPUTS)}, not {output!r}.")
    if tree.routing != "hard":
        raise TreevizError(
            "This tree routes softly: every row goes down both branches of each split with some "
            "probability, so every leaf contributes to a prediction and there are no rules to write as code. "
            "Only hard trees (CART, TAO, LapTAO, the tree embedding, latent trees' leaves) can be exported."
        )
    source = tree.meta.get("prediction", "leaf_value")
    if output == "prediction" and source != "leaf_value":
        said = PREDICTION_SOURCES.get(source, str(source))
        raise TreevizError(
            f"This model does not predict from its tree's leaves but from {said}, which cannot be "
            "written as code; export the leaf each row reaches instead."
        )
    if tree.max_depth > _MAX_DEPTH:
        raise TreevizError(f"The tree is {tree.max_depth} levels deep, too deep to write as code "
                           f"(at most {_MAX_DEPTH}); limit its depth and train it again.")
    names = tree.feature_names
    if len(set(names)) != len(names):
        twice = next(n for i, n in enumerate(names) if n in names[:i])
        raise TreevizError(f"Two features share the name {twice!r}, so rows given by name would be ambiguous; "
                           "rename one of them before exporting the tree as code.")
    internal = tree.decision_nodes
    numbers = [tree.weight[internal], tree.bias[internal], tree.leaf_value[tree.leaves]]
    if tree.leaf_weight is not None:
        numbers.append(tree.leaf_weight[tree.leaves])
    if not all(np.all(np.isfinite(a)) for a in numbers):
        raise TreevizError("The tree has an infinite or missing number in its splits or leaves, which code "
                           "cannot reproduce; train the model again (or with other scaling).")


def _fill_values(tree: Tree, fill_values: Any) -> tuple[float, ...] | None:
    if fill_values is None:
        return None
    try:
        fill = np.asarray(fill_values, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        fill = np.array([np.nan])
    if fill.shape != (tree.n_features,) or not np.all(np.isfinite(fill)):
        raise TreevizError(f"The fill values need one finite number per feature ({tree.n_features}), in the "
                           "tree's units; pass the training-split medians the run imputes.")
    return tuple(float(v) for v in fill)


def _terms(row: np.ndarray) -> tuple[tuple[int, float], ...]:
    return tuple((int(j), float(row[j])) for j in np.flatnonzero(row))


def _split(tree: Tree, node: int) -> Split:
    terms = _terms(tree.weight[node])
    bias = float(tree.bias[node])
    features = tuple(j for j, _ in terms)
    missing_right = bool(tree.missing_right[node])
    if not terms:  # a constant split: s = bias for every row
        return Split("right" if bias > 0 else "left")
    if len(terms) == 1:
        w = terms[0][1]
        threshold = left_threshold(abs(w), bias)
        if threshold is not None:
            # w·x = -(|w|·(-x)) exactly, so for w < 0 the row goes left iff -x <= t, i.e. x >= -t
            kind, threshold = ("le", threshold) if w > 0 else ("ge", -threshold)
            return Split(kind, features, threshold=threshold, missing_right=missing_right)
    return Split("linear", features, terms=terms, bias=bias, missing_right=missing_right)


def left_threshold(w: float, b: float) -> float | None:
    """The largest float64 ``t`` with ``w * t + b <= 0`` (evaluated in float64) for ``w > 0``.

    Float64 rounding is monotone, so ``w * x + b <= 0`` holds exactly for ``x <= t``; ``t`` is found
    next to ``-b / w`` within a few steps. None when there is no such finite boundary (or it is not
    found quickly), and the split is then written as its linear expression.
    """
    t = -b / w
    if not math.isfinite(t):
        return None
    for _ in range(_THRESHOLD_STEPS):
        if w * t + b > 0:
            t = math.nextafter(t, -math.inf)
        else:
            up = math.nextafter(t, math.inf)
            if not math.isfinite(up) or w * up + b > 0:
                return t if math.isfinite(t) else None
            t = up
        if not math.isfinite(t):
            return None
    return None


def _leaf(tree: Tree, node: int, output: str) -> Leaf:
    if output == "leaf":
        return Leaf("leaf", index=node)
    value = tree.leaf_value[node]
    linear = tree.leaf_weight is not None and bool(np.any(tree.leaf_weight[node]))
    if tree.task == "classification" and not linear:
        return Leaf("class", index=int(np.argmax(value)))
    outputs = tuple(
        Affine(float(value[k]), _terms(tree.leaf_weight[node, k]) if linear else ())
        for k in range(tree.n_outputs)
    )
    return Leaf("scores" if tree.task == "classification" else "values", outputs=outputs)


def _reachable(tree: Tree, splits: dict[int, Split]) -> list[int]:
    """Nodes a row can reach (a constant split cuts off its other branch)."""
    out, stack = [], [0]
    while stack:
        node = stack.pop()
        out.append(node)
        split = splits.get(node)
        if split is None:
            continue
        if split.kind != "right":
            stack.append(int(tree.children_left[node]))
        if split.kind != "left":
            stack.append(int(tree.children_right[node]))
    return out
