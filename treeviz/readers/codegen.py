"""Rules as code: a hard :class:`~models.ground.tree.Tree` as a plain Python function or a SQL expression.

Every function takes a Tree first and only reads it, so any family whose tree routes hard can be
exported: CART, TAO (and each tree of a TAO forest), LapTAO, the tree embedding, and the leaves
that latent trees' hard routing reaches.

* :func:`python_source` writes a module of plain Python (no imports beyond :mod:`math`) with
  ``predict(row)`` (``row`` maps feature names to numbers) and ``predict_by_position(values)``, or
  ``leaf(row)`` / ``leaf_by_position(values)`` for the leaf id.
* :func:`sql_expression` writes one SQL ``CASE`` expression over the features as columns
  (``SELECT <expression> AS prediction FROM t``); :func:`sql_query` a whole ``SELECT`` with a
  header comment, one column per output, after the row key column when one is named (``key="id"``)
  so that the predictions join back onto the table. Each feature is read from the column of its
  name, except where a database would take two names for one column (``A`` and ``a``, ``Ä`` and
  ``ä``, ``x`` and ``X ``): :func:`sql_columns` renames the later ones (``a_2``) and the query's
  header says so (:func:`sql_rename_note`).

What the code returns: the class name (as text) for classification, the arg max of the leaf's
scores with ties to the first class as :func:`numpy.argmax`; the value for one output; a tuple of
values (one SQL column each) for several outputs, such as an embedding's two coordinates; the leaf
id with ``output="leaf"``.

Conventions, as in :class:`~models.ground.tree.Tree`:

* A split goes right iff ``weight @ x + bias > 0`` (0 goes left). A split on one feature is
  written as the threshold with exactly the same effect in float64 (``x <= t`` for the left
  branch), found by stepping through the neighbouring floats; an oblique split as its linear
  expression, the terms summed in feature order and the bias last.
* A missing value (None or NaN in Python, NULL in SQL) in a feature that a split uses sends the row
  the way ``missing_right`` says, whichever other features of the split are present (as
  :meth:`Tree.paths` does). A linear leaf adds ``leaf_weight @ x``: its output is NaN (NULL) when a
  feature with a nonzero leaf weight is missing, and a classification leaf then names no class
  (None / NULL). With ``fill_values`` (the app's preprocessing imputes the training-split medians)
  a missing value is replaced first and nothing is routed as missing.
* Numbers are written exactly: Python literals by :func:`repr`, SQL literals with 17 significant
  digits; both read back as the same float64. The generated code thus repeats the Tree's float64
  arithmetic, and agrees with treeviz's own routing and outputs except for rows within rounding
  error of a split (numpy may sum the terms of an oblique split in another order or with fused
  multiply-adds) and the last bits of linear outputs.

Units: the code reads the features in the units of the Tree it is given. For raw rows in the data's
own units pass ``tree.in_input_units(*prepared.affine_scaling())``
(``RunView.rules_tree(original_units=True)``), and ``fill_values`` in the same units.

Refused with a :class:`~models.ground.errors.TreevizError` sentence: soft trees (Skinny Trees: every
leaf contributes to a prediction) and, for ``output="prediction"``, trees whose model does not
predict from its leaves (``meta["prediction"] != "leaf_value"``: latent trees predict from a
learned head on the inputs and the path); their leaf ids can still be exported.
"""

from __future__ import annotations

import keyword
import math
import textwrap
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.ground.tree import Tree

__all__ = ["OUTPUTS", "UNITS", "python_source", "sql_expression", "sql_query"]

#: What the exported code returns: the model's prediction, or the id of the leaf a row reaches.
OUTPUTS = ("prediction", "leaf")
#: The units a caller may declare for the header comment (``None``: say nothing about them).
UNITS = ("input", "model")

# Levels of ``if`` nesting in one generated Python function before the subtree moves into a helper
# function (Python refuses more than 100 levels of indentation).
_MAX_NESTED = 32
# Deepest tree exported (the generators recurse once per level).
_MAX_DEPTH = 400
# Steps through neighbouring floats when turning a one-feature split into an exact threshold.
_THRESHOLD_STEPS = 64
# Names the generated Python module uses for itself.
_RESERVED = frozenset({"math", "FEATURES", "USED", "CLASSES", "OUTPUTS", "FILL"})
_HEADER_WIDTH = 96
# Longest line of generated Python before a long condition or output is wrapped.
_LINE_WIDTH = 100

_PREDICTION_SOURCES = {"head": "a learned predictor on the inputs and the path through the tree"}


# ---------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class _Affine:
    """``const + Σ weight·x[feature]`` over ``terms`` (feature order): a leaf output or score."""

    const: float
    terms: tuple[tuple[int, float], ...]

    @property
    def features(self) -> tuple[int, ...]:
        return tuple(j for j, _ in self.terms)


@dataclass(frozen=True)
class _Split:
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
class _Leaf:
    """What a leaf returns: its id (``"leaf"``), a class index (``"class"``), class scores to take
    the arg max of (``"scores"``) or output values (``"values"``)."""

    kind: str
    index: int = 0
    outputs: tuple[_Affine, ...] = ()

    @property
    def features(self) -> tuple[int, ...]:
        return tuple(sorted({j for a in self.outputs for j in a.features}))


class _Plan:
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
        said = _PREDICTION_SOURCES.get(source, str(source))
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


def _split(tree: Tree, node: int) -> _Split:
    terms = _terms(tree.weight[node])
    bias = float(tree.bias[node])
    features = tuple(j for j, _ in terms)
    missing_right = bool(tree.missing_right[node])
    if not terms:  # a constant split: s = bias for every row
        return _Split("right" if bias > 0 else "left")
    if len(terms) == 1:
        w = terms[0][1]
        threshold = _left_threshold(abs(w), bias)
        if threshold is not None:
            # w·x = -(|w|·(-x)) exactly, so for w < 0 the row goes left iff -x <= t, i.e. x >= -t
            kind, threshold = ("le", threshold) if w > 0 else ("ge", -threshold)
            return _Split(kind, features, threshold=threshold, missing_right=missing_right)
    return _Split("linear", features, terms=terms, bias=bias, missing_right=missing_right)


def _left_threshold(w: float, b: float) -> float | None:
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


def _leaf(tree: Tree, node: int, output: str) -> _Leaf:
    if output == "leaf":
        return _Leaf("leaf", index=node)
    value = tree.leaf_value[node]
    linear = tree.leaf_weight is not None and bool(np.any(tree.leaf_weight[node]))
    if tree.task == "classification" and not linear:
        return _Leaf("class", index=int(np.argmax(value)))
    outputs = tuple(
        _Affine(float(value[k]), _terms(tree.leaf_weight[node, k]) if linear else ())
        for k in range(tree.n_outputs)
    )
    return _Leaf("scores" if tree.task == "classification" else "values", outputs=outputs)


def _reachable(tree: Tree, splits: dict[int, _Split]) -> list[int]:
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


# -------------------------------------------------------------------------------------- the header
def _clean(text: str) -> str:
    """One line of comment text: control characters and line breaks become spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))


def _header(plan: _Plan, language: str, units: str | None, notes: Sequence[str], entry: str) -> list[str]:
    tree = plan.tree
    family = tree.family or "treeviz"
    what = f"a {family} tree ({tree.task}, {tree.n_leaves} leaves, depth {tree.max_depth})"
    paragraphs = [f"Rules as code, generated by treeviz from {what}."]
    if "forest_index" in tree.meta and "forest_size" in tree.meta:
        combine = tree.meta.get("ensemble", "")
        paragraphs.append(f"This is tree {int(tree.meta['forest_index']) + 1} of a forest of "
                          f"{int(tree.meta['forest_size'])}, on its own. {combine}".strip())
    sql = language == "sql"
    kind = plan.kind
    if kind == "leaf":
        paragraphs.append(f"{entry} gives the id of the tree leaf a row reaches (the node ids treeviz shows).")
        source = tree.meta.get("prediction", "leaf_value")
        if source != "leaf_value":
            said = _PREDICTION_SOURCES.get(source, str(source))
            paragraphs.append(f"The model itself predicts from {said}, which is not exported: only the leaf "
                              "assignment of the tree's hard routing is.")
        if np.any(tree.active < 1):
            paragraphs.append("Nodes the model prunes still route rows here, as in treeviz's explorer.")
    elif kind == "class":
        lacking = ""
        if plan.has_scores and plan.missing:
            lacking = f" ({'NULL' if sql else 'None'} when a linear leaf lacks an input)"
        paragraphs.append(f"{entry} gives the class the tree predicts (its name as text): the highest of its "
                          f"leaf's scores, the first class on ties{lacking}.")
    elif tree.n_outputs == 1:
        paragraphs.append(f"{entry} gives the value the tree predicts.")
    else:
        names = ", ".join(_clean(n) for n in tree.output_names)
        shape = "one column per output" if sql else "a tuple"
        paragraphs.append(f"{entry} gives the tree's {tree.n_outputs} outputs ({names}) as {shape}.")
    if units == "input":
        paragraphs.append("Inputs are raw values in the data's own units: the run's scaling is folded into "
                          "the thresholds and coefficients.")
    elif units == "model":
        paragraphs.append("Inputs are the model's prepared features (after the run's imputation and scaling).")
    else:
        paragraphs.append("Inputs are in the units of the tree this code was generated from.")
    missing = "NULL" if sql else "None or NaN"
    if plan.missing:
        linear = ""
        if tree.leaf_weight is not None and np.any(tree.leaf_weight[tree.leaves]):
            linear = f", and a linear leaf with a missing input gives {'NULL' if sql else 'NaN'}"
        paragraphs.append(
            f"Missing values ({missing}) are routed by the tree: a split that uses a missing feature sends the "
            "row to the side the tree keeps for missing values (the side CART learned; left for families that "
            f"learn none){linear}. The app's runs impute the training-split median instead, so rows with missing "
            "values may be predicted differently from the app; export with fill values to match it."
        )
    else:
        fill = "the fill values written in COALESCE" if sql else "FILL"
        paragraphs.append(f"Missing values ({missing}) are first replaced by {fill} (as the app imputes the "
                          "training-split medians), so no split sees a missing value.")
    paragraphs.append(
        "Numbers are written exactly and sums are taken in a fixed order (feature order, the bias last), so "
        "the results repeat treeviz's float64 arithmetic: they agree with the model except for rows within "
        "rounding error of a split and the last bits of linear outputs."
        + (" Columns should be floating point (REAL, DOUBLE PRECISION)." if sql else "")
    )
    if not sql:
        paragraphs.append("Plain Python 3 with no dependencies beyond the standard library's math module.")
    paragraphs.extend(str(n) for n in notes)
    prefix = "-- " if sql else "# "
    lines: list[str] = []
    for text in paragraphs:
        lines.extend(textwrap.wrap(_clean(text), _HEADER_WIDTH, initial_indent=prefix, subsequent_indent=prefix,
                                   break_long_words=False, break_on_hyphens=False) or [prefix.rstrip()])
    return lines


def _check_units(units: str | None) -> None:
    if units is not None and units not in UNITS:
        raise TreevizError(f"The units of the code are one of {', '.join(UNITS)} (or not said), not {units!r}.")


# ------------------------------------------------------------------------ arithmetic, in any language
# Python and SQL write sums alike; only how a number and a feature read differ (``number``, ``ref``).
def _sum_text(terms: Sequence[tuple[int, float]], number: Callable[[float], str], ref: Callable[[int], str]) -> str:
    """``w1 * x1 + w2 * x2 - ...`` in feature order (a - w*x equals a + (-w)*x exactly)."""
    parts = []
    for i, (j, w) in enumerate(terms):
        if i == 0:
            parts.append(f"{number(w)} * {ref(j)}")
        else:
            parts.append(f"{'-' if w < 0 else '+'} {number(abs(w))} * {ref(j)}")
    return " ".join(parts)


def _affine_text(a: _Affine, number: Callable[[float], str], ref: Callable[[int], str]) -> str:
    """``const + (Σ w·x)``: the Tree adds the leaf's linear term to its constant."""
    if not a.terms:
        return number(a.const)
    total = _sum_text(a.terms, number, ref)
    if a.const == 0:
        return total
    return f"{number(a.const)} + {total if len(a.terms) == 1 else f'({total})'}"


def _linear_left(split: _Split, number: Callable[[float], str], ref: Callable[[int], str], zero: str) -> str:
    """``Σ w·x ± b <= zero``: a linear split's condition for going left."""
    core = _sum_text(split.terms, number, ref)
    if split.bias != 0:
        core += f" {'-' if split.bias < 0 else '+'} {number(abs(split.bias))}"
    return f"{core} <= {zero}"


# -------------------------------------------------------------------------------------------- Python
def _py_number(value: float) -> str:
    return repr(float(value))


def _py_ref(j: int) -> str:
    return f"x{j}"


def _py_affine(a: _Affine) -> str:
    return _affine_text(a, _py_number, _py_ref)


def _py_left(plan: _Plan, split: _Split) -> str:
    """The condition under which a row goes left at ``split``."""
    if split.kind == "linear":
        core = _linear_left(split, _py_number, _py_ref, "0.0")
    else:
        op = "<=" if split.kind == "le" else ">="
        core = f"x{split.features[0]} {op} {_py_number(split.threshold)}"
    if not plan.missing:
        return core
    if split.missing_right:
        return " and ".join([*(f"not math.isnan(x{j})" for j in split.features), core])
    return " or ".join([*(f"math.isnan(x{j})" for j in split.features), core])


def _py_leaf(plan: _Plan, leaf: _Leaf) -> str:
    if leaf.kind == "leaf":
        return str(leaf.index)
    if leaf.kind == "class":
        return repr(plan.tree.output_names[leaf.index])
    values = [_py_affine(a) for a in leaf.outputs]
    if leaf.kind == "scores":
        return f"_best_class(({', '.join(values)}))"
    return values[0] if len(values) == 1 else f"({', '.join(values)})"


def _py_function(plan: _Plan, root: int, name: str, doc: str, pending: list[int]) -> list[str]:
    """``def name(x):`` for the subtree at ``root``; deeper subtrees go to ``pending`` helpers."""
    tree = plan.tree
    body: list[str] = []
    used: set[int] = set()

    def emit(node: int, level: int) -> None:
        pad = "    " * level
        while True:
            if tree.is_leaf[node]:
                leaf = plan.leaves[node]
                used.update(leaf.features)
                body.extend(_py_wrapped(pad, "return ", _py_leaf(plan, leaf), f"  # leaf {node}",
                                        leaf.kind in ("values", "scores")))
                return
            split = plan.splits[node]
            left, right = int(tree.children_left[node]), int(tree.children_right[node])
            if split.kind in ("left", "right"):
                body.append(f"{pad}# node {node}: every row goes {split.kind}")
                node = left if split.kind == "left" else right
                continue
            used.update(split.features)
            body.extend(_py_wrapped(pad, "if ", _py_left(plan, split), f":  # node {node}", True))
            if level + 1 > _MAX_NESTED and not tree.is_leaf[left]:
                body.append(f"{pad}    return _node_{left}(x)")
                pending.append(left)
            else:
                emit(left, level + 1)
            node = right

    emit(root, 1)
    names = plan.tree.feature_names
    unpack = [f"    x{j} = x[{j}]  # {_clean(repr(names[j]))}" for j in sorted(used)]
    return [f"def {name}(x):", f'    """{doc}"""', *unpack, *body]


def _py_wrapped(pad: str, start: str, text: str, end: str, numeric: bool) -> list[str]:
    """``start + text + end`` on one line, or with ``text`` in parentheses over several lines when it
    is long. Only numeric text is wrapped: it holds no string literal, so breaking it at spaces (inside
    the parentheses) changes nothing."""
    line = f"{pad}{start}{text}{end}"
    if not numeric or len(line) <= _LINE_WIDTH:
        return [line]
    inner = pad + " " * 8
    parts = textwrap.wrap(text, _LINE_WIDTH - len(inner), break_long_words=False, break_on_hyphens=False)
    return [f"{pad}{start}(", *(inner + part for part in parts), f"{pad}){end}"]


def _py_doc(plan: _Plan) -> str:
    kind = plan.kind
    if kind == "leaf":
        return "The id of the leaf the row reaches (an int)."
    if kind == "class":
        extra = "; None when a linear leaf lacks an input" if plan.has_scores and plan.missing else ""
        return f"The class the tree predicts: its name, one of CLASSES{extra}."
    if plan.tree.n_outputs == 1:
        return "The value the tree predicts (a float)."
    return "The tree's outputs, a tuple of floats in OUTPUTS order."


def python_source(tree: Tree, *, output: str = "prediction", name: str | None = None,
                  fill_values: Any = None, units: str | None = None, notes: Sequence[str] = ()) -> str:
    """A dependency-free Python module that computes the tree's prediction (or leaf) for a row.

    Parameters
    ----------
    tree : Tree
        A hard tree. For raw rows in the data's own units pass ``tree.in_input_units(mean, scale)``
        (``RunView.rules_tree(original_units=True)``).
    output : {"prediction", "leaf"}
        What the code returns: the model's prediction (the class name, the value, or a tuple of
        values for several outputs) or the id of the leaf a row reaches.
    name : str, optional
        Name of the main function (default ``"predict"``, or ``"leaf"`` for leaf ids); the module
        also defines ``<name>_by_position(values)``.
    fill_values : array of shape (n_features,), optional
        Values that replace missing inputs (None or NaN) before routing, in the tree's units, e.g.
        the training-split medians the run imputed (``prepared.imputer.statistics_``). Without
        them a missing value follows the tree's ``missing_right``.
    units : {"input", "model"}, optional
        What the header comment says the inputs are: raw values in the data's own units, or the
        model's prepared features. Not checked: it should match the tree passed.
    notes : sequence of str
        Further lines for the header comment (e.g. the run and data set).

    Returns
    -------
    str
        Source text defining ``FEATURES`` (the feature names, which are the row's keys), ``USED``
        (positions of the features the tree reads), ``CLASSES`` or ``OUTPUTS`` (names), ``FILL``
        (with fill values), ``<name>(row)`` for a mapping from feature name to number (only the
        features in ``USED`` are read) and ``<name>_by_position(values)`` for a sequence in
        ``FEATURES`` order. Values are converted with ``float``; None and NaN are missing.

    Raises
    ------
    TreevizError
        For a soft tree, a prediction from a tree whose model does not predict from its leaves
        (latent trees: export ``output="leaf"``), duplicate feature names, a non-finite
        parameter, bad fill values or an unusable function name.
    """
    _check_units(units)
    plan = _Plan(tree, output, fill_values)
    name = name or ("leaf" if output == "leaf" else "predict")
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in _RESERVED:
        raise TreevizError(f"The function name {name!r} cannot be used: choose letters, digits and underscores, "
                           "starting with a letter, and not a Python keyword.")
    t = plan.tree
    lines = _header(plan, "python", units, notes, f"{name}(row)")
    lines += ["", "import math", "", f"FEATURES = {_py_tuple(t.feature_names)}",
              f"USED = {_py_tuple(plan.used)}  # positions in FEATURES of the features the tree reads"]
    if plan.kind == "class":
        lines.append(f"CLASSES = {_py_tuple(t.output_names)}")
    elif plan.kind == "values" and t.n_outputs > 1:
        lines.append(f"OUTPUTS = {_py_tuple(t.output_names)}")
    if plan.fill is not None:
        lines.append(f"FILL = {_py_tuple(tuple(_PyNumber(v) for v in plan.fill))}  # replaces a missing value")
    lines += ["", "", *_py_number_function(plan)]
    if plan.has_scores:
        lines += ["", "", *_PY_BEST_CLASS]
    doc = _py_doc(plan)
    lines += ["", "", f"def {name}(row):",
              f'    """{doc}',
              "",
              "    ``row`` maps feature names (FEATURES) to numbers; only those at the positions USED are read.",
              '    """',
              "    x = [math.nan] * len(FEATURES)",
              "    for j in USED:",
              "        x[j] = _number(row[FEATURES[j]], j)",
              "    return _tree(x)",
              "", "",
              f"def {name}_by_position(values):",
              f'    """{doc}',
              "",
              "    ``values`` holds one number per feature, in FEATURES order.",
              '    """',
              "    if len(values) != len(FEATURES):",
              '        raise ValueError(f"expected {len(FEATURES)} values (FEATURES order), got {len(values)}")',
              "    x = [math.nan] * len(FEATURES)",
              "    for j in USED:",
              "        x[j] = _number(values[j], j)",
              "    return _tree(x)"]
    pending: list[int] = []
    functions = [_py_function(plan, 0, "_tree", "The tree on x, the inputs in FEATURES order (NaN = missing).",
                              pending)]
    while pending:
        node = pending.pop(0)
        functions.append(_py_function(plan, node, f"_node_{node}", f"The subtree below node {node}.", pending))
    for function in functions:
        lines += ["", "", *function]
    return "\n".join(lines) + "\n"


class _PyNumber(float):
    """A float whose repr is its exact Python literal (for tuples of numbers in the source)."""

    def __repr__(self) -> str:
        return _py_number(float(self))


def _py_tuple(items: Sequence[Any]) -> str:
    return "(" + ", ".join(repr(item) for item in items) + ("," if len(items) == 1 else "") + ")"


def _py_number_function(plan: _Plan) -> list[str]:
    if plan.fill is None:
        return ["def _number(value, j):",
                '    """One input as a float; NaN when it is missing (None or NaN)."""',
                "    return math.nan if value is None else float(value)"]
    return ["def _number(value, j):",
            '    """One input as a float; FILL[j] when it is missing (None or NaN)."""',
            "    value = math.nan if value is None else float(value)",
            "    return FILL[j] if math.isnan(value) else value"]


_PY_BEST_CLASS = [
    "def _best_class(scores):",
    '    """The class with the highest score (the first on ties); None when a score is NaN."""',
    "    best = 0",
    "    for k, score in enumerate(scores):",
    "        if math.isnan(score):",
    "            return None",
    "        if score > scores[best]:",
    "            best = k",
    "    return CLASSES[best]",
]


# ----------------------------------------------------------------------------------------------- SQL
def _sql_number(value: float) -> str:
    """17 significant digits, which read back as the same float64 (SQLite does not always read the
    shortest repr exactly); with a decimal point, so that it is not an integer."""
    text = f"{float(value):.17g}"
    return text if any(c in text for c in ".en") else text + ".0"


def _sql_ident(name: str) -> str:
    if "\x00" in name:
        raise TreevizError(f"The name {name!r} contains a NUL character, which SQL cannot quote; rename it.")
    return '"' + name.replace('"', '""') + '"'


def _sql_fold(name: str) -> str:
    """The form in which databases may compare two column names: SQLite, MySQL and SQL Server ignore
    case (MySQL and SQL Server beyond ASCII), SQL Server trailing spaces; Unicode's caseless
    identifier match (NFKC, case folded) covers compatibility forms such as ``ﬁ`` for ``fi`` too."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()).rstrip(" ")


def sql_columns(feature_names: Sequence[str], *, key: str | None = None) -> tuple[str, ...]:
    """The column the SQL export reads each feature from: the feature's own name, unless a database
    could take it for an earlier feature's column or for the row key column ``key`` (the names differ
    only in case, in compatibility forms or in trailing spaces, :func:`_sql_fold`); then the name
    (stripped) with the first suffix ``_2``, ``_3``, ... that is no other feature's or column's name.

    Examples
    --------
    >>> sql_columns(["A", "a", "Ä", "ä", "x", "X "])
    ('A', 'a_2', 'Ä', 'ä_2', 'x', 'X_2')
    >>> sql_columns(["id", "x"], key="ID")
    ('id_2', 'x')
    """
    names = [str(n) for n in feature_names]
    reserved = {_sql_fold(n) for n in names}  # a new name never takes another feature's own name
    used: set[str] = set()
    if key is not None:
        reserved.add(_sql_fold(key))
        used.add(_sql_fold(key))
    out = []
    for name in names:
        if key is not None and name == key:  # the key column is itself a feature: one column, read twice
            out.append(name)
            continue
        column = name
        if _sql_fold(name) in used:
            base, k = name.strip() or "column", 2
            while _sql_fold(f"{base}_{k}") in used | reserved:
                k += 1
            column = f"{base}_{k}"
        used.add(_sql_fold(column))
        out.append(column)
    return tuple(out)


def sql_rename_note(feature_names: Sequence[str], columns: Sequence[str]) -> str:
    """The sentence saying which features the SQL reads from renamed columns (empty when none)."""
    renamed = [(f, c) for f, c in zip(feature_names, columns, strict=True) if f != c]
    if not renamed:
        return ""
    pairs = ", ".join(f"feature '{f}' from column \"{c}\"" for f, c in renamed)
    return ("Column names: databases such as SQLite, MySQL and SQL Server take names that differ only in case (or "
            f"in trailing spaces) for one column, so this query reads {pairs}; give the table those columns "
            "(every other feature keeps its own name).")


def _sql_string(text: str) -> str:
    if "\x00" in text:
        raise TreevizError(f"The name {text!r} contains a NUL character, which SQL cannot quote; rename it.")
    return "'" + text.replace("'", "''") + "'"


class _Sql:
    """SQL text for one plan: column references, conditions, leaves and the nested CASE."""

    def __init__(self, plan: _Plan, output_index: int | None, key: str | None = None) -> None:
        self.plan = plan
        self.output_index = output_index
        names = sql_columns(plan.tree.feature_names, key=key)
        self.columns = {j: _sql_ident(names[j]) for j in plan.used}

    def ref(self, j: int) -> str:
        if self.plan.fill is None:
            return self.columns[j]
        return f"COALESCE({self.columns[j]}, {_sql_number(self.plan.fill[j])})"

    def affine(self, a: _Affine) -> str:
        return _affine_text(a, _sql_number, self.ref)

    def left(self, split: _Split) -> str:
        if split.kind == "linear":
            core = _linear_left(split, _sql_number, self.ref, "0")
        else:
            op = "<=" if split.kind == "le" else ">="
            core = f"{self.ref(split.features[0])} {op} {_sql_number(split.threshold)}"
        if not self.plan.missing:
            return core
        if split.missing_right:
            return " AND ".join([*(f"{self.columns[j]} IS NOT NULL" for j in split.features), core])
        return " OR ".join([*(f"{self.columns[j]} IS NULL" for j in split.features), core])

    def leaf(self, leaf: _Leaf, pad: str) -> str:
        if leaf.kind == "leaf":
            return str(leaf.index)
        if leaf.kind == "class":
            return _sql_string(self.plan.tree.output_names[leaf.index])
        if leaf.kind == "values":
            return self.affine(leaf.outputs[self.output_index or 0])
        # the arg max of the class scores, ties to the first class: class k wins when no earlier
        # class does and its score is at least every later class's score
        scores = [self.affine(a) for a in leaf.outputs]
        names = [_sql_string(n) for n in self.plan.tree.output_names]
        whens = []
        if self.plan.missing and leaf.features:
            whens.append((" OR ".join(f"{self.columns[j]} IS NULL" for j in leaf.features), "NULL"))
        for k in range(len(scores) - 1):
            whens.append((" AND ".join(f"{scores[k]} >= {scores[m]}" for m in range(k + 1, len(scores))), names[k]))
        return _sql_case(whens, names[-1], pad)

    def node(self, node: int, pad: str) -> str:
        """The expression for the subtree at ``node``; a chain of right children becomes one CASE."""
        tree = self.plan.tree
        whens: list[tuple[str, str]] = []
        inner = pad + "    "
        while not tree.is_leaf[node]:
            split = self.plan.splits[node]
            left, right = int(tree.children_left[node]), int(tree.children_right[node])
            if split.kind in ("left", "right"):
                node = left if split.kind == "left" else right
                continue
            whens.append((self.left(split), self.node(left, inner)))
            node = right
        tail = self.leaf(self.plan.leaves[node], inner if whens else pad)
        return _sql_case(whens, tail, pad) if whens else tail


def _sql_case(whens: Sequence[tuple[str, str]], tail: str, pad: str) -> str:
    lines = ["CASE"]
    lines += [f"{pad}  WHEN {cond} THEN {value}" for cond, value in whens]
    lines += [f"{pad}  ELSE {tail}", f"{pad}END"]
    return "\n".join(lines)


def sql_expression(tree: Tree, *, output: str = "prediction", output_index: int | None = None,
                   fill_values: Any = None, key: str | None = None) -> str:
    """One SQL ``CASE`` expression that computes the tree's prediction (or leaf) from a row's columns.

    Use it as ``SELECT <expression> AS prediction FROM t``, where ``t`` has one column per feature
    named as ``sql_columns(tree.feature_names, key=key)`` says: the feature names, except those a
    database would take for an earlier one's (identifiers are double-quoted, embedded quotes doubled).

    Parameters
    ----------
    tree : Tree
        A hard tree; see :func:`python_source` for the units.
    output : {"prediction", "leaf"}
        The prediction (the class name as a string literal, or a value) or the leaf id (an integer).
    output_index : int, optional
        Which output of a tree with several outputs (an embedding has two); each is its own
        expression. Not needed for one output, classes or leaf ids.
    fill_values : array of shape (n_features,), optional
        Values for NULL inputs (``COALESCE``), as in :func:`python_source`. Without them a NULL in a
        feature a split uses sends the row the way ``missing_right`` says (``IS NULL`` checks).
    key : str, optional
        The table's row key column, when the query selects one: a feature whose name a database
        would take for it is read from a renamed column (:func:`sql_columns`).

    Returns
    -------
    str
        The expression (several lines, no comment, no trailing semicolon). Numbers have 17
        significant digits; with floating-point columns a database computes in float64 as
        treeviz does. Nesting follows the tree's depth (SQLite allows expressions 1000 deep).

    Raises
    ------
    TreevizError
        As :func:`python_source`, and for a missing or out-of-range ``output_index`` or a name
        with a NUL character.
    """
    plan = _Plan(tree, output, fill_values)
    index = _output_index(plan, output_index)
    return _Sql(plan, index, key).node(0, "")


def _output_index(plan: _Plan, output_index: int | None) -> int | None:
    n = plan.tree.n_outputs
    if plan.kind != "values":
        return None
    if output_index is None:
        if n == 1:
            return 0
        raise TreevizError(f"The tree has {n} outputs ({', '.join(plan.tree.output_names)}); a SQL expression "
                           "gives one of them, so choose which by its index.")
    if not 0 <= int(output_index) < n:
        raise TreevizError(f"The tree has {n} output(s); choose an index from 0 to {n - 1}.")
    return int(output_index)


def sql_query(tree: Tree, table: str = "data", *, output: str = "prediction", fill_values: Any = None,
              units: str | None = None, notes: Sequence[str] = (), key: str | None = None) -> str:
    """A whole ``SELECT`` statement over ``table``, with a header comment saying what it assumes.

    One column per output: ``"prediction"`` (classes or one value), ``"leaf"`` (leaf ids), or the
    output names (``"z1"``, ``"z2"`` for an embedding). Parameters as :func:`python_source` and
    :func:`sql_expression`; ``table`` is quoted as one identifier. ``key``, a column of ``table``
    (the row id), comes first, so each prediction joins back onto its row; by default none. Features
    whose names a database would take for one column are read from renamed columns
    (:func:`sql_columns`), and the header says which (:func:`sql_rename_note`).
    """
    _check_units(units)
    plan = _Plan(tree, output, fill_values)
    if key is not None and not str(key).strip():
        raise TreevizError("The SQL key column needs a name; leave it out for no key.")
    if plan.kind == "values" and plan.tree.n_outputs > 1:
        columns = [(_Sql(plan, k, key).node(0, "  "), plan.tree.output_names[k])
                   for k in range(plan.tree.n_outputs)]
    else:
        columns = [(_Sql(plan, _output_index(plan, None), key).node(0, "  "),
                    "leaf" if output == "leaf" else "prediction")]
    selected = ",\n".join(f"  {expr} AS {_sql_ident(name)}" for expr, name in columns)
    if key is not None:
        if _sql_fold(key) in {_sql_fold(name) for _, name in columns}:
            raise TreevizError(f"The key column {key!r} has the name of an output column (to a database, which "
                               "ignores case); the query would return two columns of that name. Choose another "
                               "key column, or rename it in the table.")
        selected = f"  {_sql_ident(key)},\n{selected}"
    renamed = sql_rename_note(tree.feature_names, sql_columns(tree.feature_names, key=key))
    lines = _header(plan, "sql", units, [*notes, *([renamed] if renamed else [])], "The query")
    return "\n".join([*lines, "SELECT", selected, f"FROM {_sql_ident(table)};"]) + "\n"
