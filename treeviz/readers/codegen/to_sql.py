"""Rules as code in SQL: one ``CASE`` expression (:func:`sql_expression`) or a whole ``SELECT``
(:func:`sql_query`), reading each feature from the column :func:`sql_columns` names."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.codegen.common import affine_text, check_units, header, linear_left
from treeviz.readers.codegen.plan import Affine, Leaf, Plan, Split


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

    def __init__(self, plan: Plan, output_index: int | None, key: str | None = None) -> None:
        self.plan = plan
        self.output_index = output_index
        names = sql_columns(plan.tree.feature_names, key=key)
        self.columns = {j: _sql_ident(names[j]) for j in plan.used}

    def ref(self, j: int) -> str:
        if self.plan.fill is None:
            return self.columns[j]
        return f"COALESCE({self.columns[j]}, {_sql_number(self.plan.fill[j])})"

    def affine(self, a: Affine) -> str:
        return affine_text(a, _sql_number, self.ref)

    def left(self, split: Split) -> str:
        if split.kind == "linear":
            core = linear_left(split, _sql_number, self.ref, "0")
        else:
            op = "<=" if split.kind == "le" else ">="
            core = f"{self.ref(split.features[0])} {op} {_sql_number(split.threshold)}"
        if not self.plan.missing:
            return core
        if split.missing_right:
            return " AND ".join([*(f"{self.columns[j]} IS NOT NULL" for j in split.features), core])
        return " OR ".join([*(f"{self.columns[j]} IS NULL" for j in split.features), core])

    def leaf(self, leaf: Leaf, pad: str) -> str:
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
    plan = Plan(tree, output, fill_values)
    index = _output_index(plan, output_index)
    return _Sql(plan, index, key).node(0, "")


def _output_index(plan: Plan, output_index: int | None) -> int | None:
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
    check_units(units)
    plan = Plan(tree, output, fill_values)
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
    lines = header(plan, "sql", units, [*notes, *([renamed] if renamed else [])], "The query")
    return "\n".join([*lines, "SELECT", selected, f"FROM {_sql_ident(table)};"]) + "\n"
