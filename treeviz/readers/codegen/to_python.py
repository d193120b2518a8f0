"""Rules as code in Python: :func:`python_source`, a dependency-free module with ``predict(row)``."""

from __future__ import annotations

import keyword
import textwrap
from collections.abc import Sequence
from typing import Any

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.codegen.common import affine_text, check_units, clean, header, linear_left
from treeviz.readers.codegen.plan import Affine, Leaf, Plan, Split

# Levels of ``if`` nesting in one generated Python function before the subtree moves into a helper
# function (Python refuses more than 100 levels of indentation).
_MAX_NESTED = 32
# Names the generated Python module uses for itself.
_RESERVED = frozenset({"math", "FEATURES", "USED", "CLASSES", "OUTPUTS", "FILL"})
# Longest line of generated Python before a long condition or output is wrapped.
_LINE_WIDTH = 100


def _py_number(value: float) -> str:
    return repr(float(value))


def _py_ref(j: int) -> str:
    return f"x{j}"


def _py_affine(a: Affine) -> str:
    return affine_text(a, _py_number, _py_ref)


def _py_left(plan: Plan, split: Split) -> str:
    """The condition under which a row goes left at ``split``."""
    if split.kind == "linear":
        core = linear_left(split, _py_number, _py_ref, "0.0")
    else:
        op = "<=" if split.kind == "le" else ">="
        core = f"x{split.features[0]} {op} {_py_number(split.threshold)}"
    if not plan.missing:
        return core
    if split.missing_right:
        return " and ".join([*(f"not math.isnan(x{j})" for j in split.features), core])
    return " or ".join([*(f"math.isnan(x{j})" for j in split.features), core])


def _py_leaf(plan: Plan, leaf: Leaf) -> str:
    if leaf.kind == "leaf":
        return str(leaf.index)
    if leaf.kind == "class":
        return repr(plan.tree.output_names[leaf.index])
    values = [_py_affine(a) for a in leaf.outputs]
    if leaf.kind == "scores":
        return f"_best_class(({', '.join(values)}))"
    return values[0] if len(values) == 1 else f"({', '.join(values)})"


def _py_function(plan: Plan, root: int, name: str, doc: str, pending: list[int]) -> list[str]:
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
    unpack = [f"    x{j} = x[{j}]  # {clean(repr(names[j]))}" for j in sorted(used)]
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


def _py_doc(plan: Plan) -> str:
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
    check_units(units)
    plan = Plan(tree, output, fill_values)
    name = name or ("leaf" if output == "leaf" else "predict")
    if not name.isidentifier() or keyword.iskeyword(name) or name.startswith("_") or name in _RESERVED:
        raise TreevizError(f"The function name {name!r} cannot be used: choose letters, digits and underscores, "
                           "starting with a letter, and not a Python keyword.")
    t = plan.tree
    lines = header(plan, "python", units, notes, f"{name}(row)")
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


def _py_number_function(plan: Plan) -> list[str]:
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
