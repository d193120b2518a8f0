"""A tree's splits and root-to-leaf paths as readable text.

Every function takes a :class:`~models.ground.tree.Tree` first and only reads it, so rules can be shown
for any family. A split ``weight @ x + bias > 0`` on one feature reads as a threshold
("petal width > 0.8"); an oblique split lists its largest terms ("0.5·a − 1.5·b + 0.25 > 0").
To read rules in the data's own units, pass ``tree.in_input_units(mean, scale)``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import numpy as np

from models.ground.tree import Tree

__all__ = ["leaf_summary", "node_rule", "rule_text", "rules"]


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


def leaf_summary(tree: Tree, leaf: int) -> str:
    """What a leaf predicts, in words (class and score, or value)."""
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


def rule_text(tree: Tree, x: Any) -> str:
    """The decision path of one sample as an IF ... THEN ... rule.

    A step decided by a missing value reads "<feature> missing" rather than a threshold.
    """
    steps = tree.sample_path(x)
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    leaf = int(tree.apply(x)[0])
    conditions = [
        _missing_condition(tree, s.node, x) if np.isnan(s.value) else node_rule(tree, s.node, s.goes_right)
        for s in steps
    ]
    return _if_then(conditions, leaf_summary(tree, leaf))


def rules(tree: Tree, *, max_terms: int = 4) -> list[str]:
    """Every root-to-leaf path as an IF ... THEN ... rule (leaves in id order)."""
    out = []
    for leaf in tree.leaves:
        path = tree.ancestors(int(leaf))
        conditions = [
            node_rule(tree, a, bool(child == tree.children_right[a]), max_terms=max_terms)
            for a, child in pairwise(path)
        ]
        out.append(_if_then(conditions, leaf_summary(tree, int(leaf))))
    return out
