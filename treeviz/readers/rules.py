"""A tree's splits and root-to-leaf paths as readable text.

Every function takes a :class:`~models.ground.tree.Tree` first and only reads it, so rules can be shown
for any family. A split ``weight @ x + bias > 0`` on one feature reads as a threshold
("petal width > 0.8"); an oblique split lists its largest terms ("0.5·a − 1.5·b + 0.25 > 0").
Along a root-to-leaf path (:func:`rules`, :func:`rule_text`, :func:`path_conditions`), the
threshold conditions on one feature merge into one interval ("0.2 < a ≤ 1.5"), written where the
feature is first tested; oblique conditions stay as they are. :func:`node_rule` reads one split.
To read rules in the data's own units, pass ``tree.in_input_units(mean, scale)``.

What a rule concludes depends on how the model predicts. Where it predicts from its leaves, the
rule ends in the leaf's class or value. Where a head on top of the tree decides
(``Tree.head_decides``: latent trees), the rule says so and names the leaf and what its training
rows hold, not a prediction; :func:`leaf_agreement` measures how often the model's own
predictions match that description. A pruned leaf (``active == 0``) or one no training row
reached (``meta["empty_leaves"]``) has no class or value at all (:func:`leaf_state`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from models.ground.tree import Tree

__all__ = ["Agreement", "leaf_agreement", "leaf_label", "leaf_state", "leaf_summary", "node_rule", "path_conditions",
           "rule_text", "rules"]


def _number(value: float, precision: int) -> str:
    return f"{value:.{precision}g}"


def _threshold_rule(name: str, coef: float, bias: float, goes_right: bool, precision: int) -> str:
    """``coef * x + bias > 0`` (right) or ``<= 0`` (left) on one feature, as a threshold on x."""
    threshold = -bias / coef
    # coef * x + bias > 0  <=>  x > -bias/coef (coef > 0)  or  x < -bias/coef (coef < 0)
    right_is_greater = coef > 0
    if goes_right:
        op = ">" if right_is_greater else "<"
    else:
        op = "≤" if right_is_greater else "≥"
    return f"{name} {op} {_number(threshold, precision)}"


def _bound(tree: Tree, node: int, goes_right: bool) -> tuple[int, float, bool, bool] | None:
    """A one-feature split as a bound on that feature: ``(feature, threshold, is_lower, strict)``.

    ``coef * x + bias > 0`` is ``x > t`` when ``coef > 0`` and ``x < t`` when ``coef < 0`` (``t =
    -bias/coef``); the left branch (``<= 0``) is the non-strict opposite. None for other splits.
    """
    w = tree.weight[node]
    nonzero = np.flatnonzero(w)
    if nonzero.size != 1:
        return None
    j = int(nonzero[0])
    coef = float(w[j])
    threshold = -float(tree.bias[node]) / coef
    is_lower = (coef > 0) == goes_right
    return j, threshold, is_lower, goes_right


def _tighter(new: tuple[float, bool], old: tuple[float, bool] | None, lower: bool) -> tuple[float, bool]:
    """The tighter of two bounds (value, strict) on one side; at equal values the strict one."""
    if old is None:
        return new
    if new[0] == old[0]:
        return new[0], new[1] or old[1]
    return new if (new[0] > old[0]) == lower else old


def _interval_text(name: str, lower: tuple[float, bool] | None, upper: tuple[float, bool] | None,
                   precision: int) -> str:
    lo_op = {True: "<", False: "≤"}
    if lower is not None and upper is not None:
        return (f"{_number(lower[0], precision)} {lo_op[lower[1]]} {name} {lo_op[upper[1]]} "
                f"{_number(upper[0], precision)}")
    if lower is not None:
        return f"{name} {'>' if lower[1] else '≥'} {_number(lower[0], precision)}"
    assert upper is not None
    return f"{name} {lo_op[upper[1]]} {_number(upper[0], precision)}"


def _merged(tree: Tree, steps: list[tuple[int, bool, str | None]], max_terms: int, precision: int) -> list[str]:
    """The conditions of a path of ``(node, goes_right, fixed text or None)`` steps, with each
    feature's threshold conditions merged into one interval at the place of its first test."""
    out: list[str | int] = []  # condition text, or a feature index standing for its interval
    bounds: dict[int, list[tuple[float, bool] | None]] = {}
    for node, goes_right, fixed in steps:
        bound = None if fixed is not None else _bound(tree, node, goes_right)
        if bound is None:
            out.append(fixed if fixed is not None else
                       node_rule(tree, node, goes_right, max_terms=max_terms, precision=precision))
            continue
        j, threshold, is_lower, strict = bound
        if j not in bounds:
            bounds[j] = [None, None]
            out.append(j)
        side = 0 if is_lower else 1
        bounds[j][side] = _tighter((threshold, strict), bounds[j][side], is_lower)
    return [c if isinstance(c, str) else _interval_text(tree.feature_names[c], *bounds[c], precision)
            for c in out]


def path_conditions(tree: Tree, node: int, *, max_terms: int = 4, precision: int = 4) -> list[str]:
    """The conditions that send a sample from the root to ``node`` (each feature's thresholds
    merged into one interval; oblique splits as :func:`node_rule` writes them)."""
    path = tree.ancestors(int(node))
    steps = [(int(a), bool(child == tree.children_right[a]), None) for a, child in pairwise(path)]
    return _merged(tree, steps, max_terms, precision)


def _hyperplane_rule(
    names: tuple[str, ...], w: np.ndarray, nonzero: np.ndarray, bias: float, goes_right: bool,
    max_terms: int, precision: int,
) -> str:
    """An oblique split as its ``max_terms`` largest terms (by |weight|), the bias, and ``> 0``."""
    order = nonzero[np.argsort(-np.abs(w[nonzero]), kind="stable")]
    terms = []
    for i, j in enumerate(order[:max_terms]):
        c = float(w[j])
        sign = ("−" if c < 0 else "+") + " " if i else ("−" if c < 0 else "")
        terms.append(f"{sign}{_number(abs(c), precision)}·{names[j]}")
    if order.size > max_terms:
        terms.append(f"+ … ({order.size - max_terms} more)")
    if bias != 0:
        terms.append(("− " if bias < 0 else "+ ") + _number(abs(bias), precision))
    op = ">" if goes_right else "≤"
    return f"{' '.join(terms)} {op} 0"


def node_rule(tree: Tree, node: int, goes_right: bool = True, *, max_terms: int = 4,
              precision: int = 4) -> str:
    """Human-readable condition for taking the right (or left) branch at decision node ``node``.

    Numbers keep ``precision`` significant digits; an oblique split shows its ``max_terms``
    largest terms and says how many it leaves out.
    """
    if tree.is_leaf[node]:
        raise ValueError(f"Node {node} is a leaf and has no rule.")
    w, b = tree.weight[node], float(tree.bias[node])
    nonzero = np.flatnonzero(w)
    if nonzero.size == 0:
        # A constant split: every sample goes the same way.
        return "always" if (b > 0) == goes_right else "never"
    if nonzero.size == 1:
        j = int(nonzero[0])
        return _threshold_rule(tree.feature_names[j], float(w[j]), b, goes_right, precision)
    return _hyperplane_rule(tree.feature_names, w, nonzero, b, goes_right, max_terms, precision)


def leaf_state(tree: Tree, leaf: int) -> str:
    """``"pruned"`` (activity 0), ``"empty"`` (no training row reached it: its value is a
    placeholder), ``"head"`` (a head decides; the value describes the leaf's training rows) or
    ``"value"`` (the leaf's value is the prediction)."""
    if tree.active[leaf] == 0:
        return "pruned"
    if int(leaf) in set(tree.meta.get("empty_leaves", ())):
        return "empty"
    return "head" if tree.head_decides else "value"


def leaf_label(tree: Tree, leaf: int) -> str:
    """A leaf's short label in a diagram: its class or value, or "pruned" / "no train rows" when it
    has none (a head's tree: the class or value its training rows hold)."""
    state = leaf_state(tree, leaf)
    if state in ("pruned", "empty"):
        return {"empty": "no train rows"}.get(state, state)
    value = tree.leaf_value[leaf]
    if tree.task == "classification":
        return str(tree.output_names[int(np.argmax(value))])
    return f"{value[0]:.3g}"


def _head_rows(tree: Tree, leaf: int) -> str:
    """What a head's tree says of a leaf: the class share or mean of its training rows."""
    value = tree.leaf_value[leaf]
    if tree.task == "classification":
        k = int(np.argmax(value))
        return f"{value[k]:.0%} of its training rows are class {tree.output_names[k]}"
    if tree.task == "clustering":
        return f"{value[0]:.1%} of the training rows"
    if tree.n_outputs == 1:
        return f"its training rows' mean {tree.output_names[0]} is {value[0]:.4g}"
    return "its training rows' means: " + ", ".join(f"{n} = {v:.3g}" for n, v in zip(tree.output_names, value,
                                                                                        strict=True))


def leaf_summary(tree: Tree, leaf: int) -> str:
    """What a leaf predicts, in words (class and score, or value); where a head decides, that the
    head decides and what the leaf's training rows hold; for a pruned or empty leaf, that it has
    no class or value."""
    state = leaf_state(tree, leaf)
    head = " (the head decides from the inputs and the active nodes above)" if tree.head_decides else ""
    what = "class" if tree.task == "classification" else "value"
    if state == "pruned":
        return f"no {what}: leaf {leaf} is pruned (activity 0){head}"
    if state == "empty":
        return f"no {what}: no training row reaches leaf {leaf}{head}"
    if state == "head":
        return f"the head decides (leaf {leaf}: {_head_rows(tree, leaf)})"
    value = tree.leaf_value[leaf]
    if tree.leaf_weight is not None and np.any(tree.leaf_weight[leaf]):
        return f"leaf {leaf}: linear model"
    if tree.task == "classification":
        k = int(np.argmax(value))
        return f"class = {tree.output_names[k]} (score {value[k]:.3g}, leaf {leaf})"
    if tree.n_outputs == 1:
        return f"{tree.output_names[0]} = {value[0]:.4g} (leaf {leaf})"
    return f"leaf {leaf}: " + ", ".join(
        f"{n} = {v:.3g}" for n, v in zip(tree.output_names, value, strict=True)
    )


def _if_then(conditions: list[str], conclusion: str) -> str:
    return f"IF {' AND '.join(conditions) or 'TRUE'} THEN {conclusion}"


def _missing_condition(tree: Tree, node: int, x: np.ndarray) -> str:
    """The features of ``node``'s split that are missing (NaN) in sample ``x``."""
    used = np.flatnonzero((tree.weight[node] != 0) & np.isnan(x))
    return " and ".join(tree.feature_names[j] for j in used) + " missing"


def rule_text(tree: Tree, x: Any, *, max_terms: int = 4, precision: int = 4) -> str:
    """The decision path of one sample as an IF ... THEN ... rule.

    A step decided by a missing value reads "<feature> missing" rather than a threshold; the
    other threshold steps on one feature merge into one interval.
    """
    steps = tree.sample_path(x)
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    leaf = int(tree.apply(x)[0])
    path = [(s.node, s.goes_right, _missing_condition(tree, s.node, x) if np.isnan(s.value) else None)
            for s in steps]
    return _if_then(_merged(tree, path, max_terms, precision), leaf_summary(tree, leaf))


@dataclass(frozen=True)
class Agreement:
    """How a head's model agrees with one leaf's description on the rows of a split that reach it:
    ``n_rows``; for classification ``share``, the fraction the model predicts the leaf's class
    for; for regression ``mean_gap``, the mean absolute difference between the model's prediction
    and the leaf's value. ``split`` names the rows ("test")."""

    n_rows: int
    split: str
    share: float | None = None
    mean_gap: float | None = None

    def text(self) -> str:
        if self.n_rows == 0:
            return f"no {self.split} row reaches it"
        if self.share is not None:
            return (f"the model predicts this class for {self.share:.0%} of the {self.n_rows} "
                    f"{self.split} row{'s' if self.n_rows != 1 else ''} here")
        return (f"the model's predictions differ from this mean by {self.mean_gap:.3g} on average over the "
                f"{self.n_rows} {self.split} row{'s' if self.n_rows != 1 else ''} here")


def leaf_agreement(tree: Tree, X: Any, predictions: Any, *, split: str = "test") -> dict[int, Agreement]:
    """Per leaf with a class or value, how often the model's own ``predictions`` for the rows
    ``X`` (model units, as the tree routes them) match the leaf's class, or how far they are from
    its value. Classification predictions are compared to ``tree.output_names`` as text."""
    if tree.task not in ("classification", "regression"):
        return {}
    leaf_of = tree.apply(X)
    pred = np.asarray(predictions)
    out: dict[int, Agreement] = {}
    for leaf in tree.leaves:
        leaf = int(leaf)
        if leaf_state(tree, leaf) in ("pruned", "empty"):
            continue
        here = leaf_of == leaf
        n = int(here.sum())
        if tree.task == "classification":
            shown = tree.output_names[int(np.argmax(tree.leaf_value[leaf]))]
            share = float(np.mean(pred[here].astype(str) == str(shown))) if n else None
            out[leaf] = Agreement(n, split, share=share)
        else:
            p = pred.reshape(pred.shape[0], -1)[here].astype(np.float64)
            gap = float(np.mean(np.abs(p - tree.leaf_value[leaf][None, :]))) if n else None
            out[leaf] = Agreement(n, split, mean_gap=gap)
    return out


def rules(tree: Tree, *, max_terms: int = 4, precision: int = 4,
          agreement: Mapping[int, Agreement] | None = None) -> list[str]:
    """Every root-to-leaf path as an IF ... THEN ... rule (leaves in id order), each feature's
    threshold conditions merged into one interval; with ``agreement`` (:func:`leaf_agreement`),
    each rule ends with how the model agrees with it."""
    out = []
    for leaf in tree.leaves:
        text = _if_then(path_conditions(tree, int(leaf), max_terms=max_terms, precision=precision),
                        leaf_summary(tree, int(leaf)))
        if agreement and int(leaf) in agreement:
            text += f" [{agreement[int(leaf)].text()}]"
        out.append(text)
    return out
