"""One export service: how a run's tree leaves treeviz as a file, decided once for every caller.

The Tree explorer, the command line (``python -m treeviz export``) and the HTML report all export
through this module, so they make the same decisions:

* **Units.** Rules and code read rows in the data's own units when the run's preprocessing is
  affine (no scaling or standard scaling) and the caller does not ask for model units: each
  hyperplane is rewritten exactly (:meth:`models.ground.tree.Tree.in_input_units`). Otherwise they read
  the model's prepared features, and :attr:`TreeExport.units_note` says why.
* **Missing values.** Code in the data's units fills a missing value with the training median, as
  the app does when it prepares rows.
* **Output.** Code returns the leaf's prediction for families that predict from their leaves, and
  the leaf id for the others (a head on top of the tree decides the prediction there).
* **Every term.** Files hold every term of an oblique split (only a screen may fold them).
* **Where a head decides** (latent trees), rules name the leaf and what its training rows hold,
  and each ends with how often the model's own predictions agree with it on the run's test rows
  (validation or training rows when the test split is empty): :attr:`TreeExport.agreement`.

:data:`TREE_FORMATS` is the table of the tree's file formats: adding one means one function and
one row. A run as a zip is :func:`treeviz.services.store.archive.export_zip`; figures are exported by
:mod:`treeviz.plots.export` (``FORMATS``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.codegen import python_source, sql_columns, sql_query, sql_rename_note
from treeviz.readers.rules import Agreement, leaf_agreement, rules
from treeviz.services.data import PreparedData

#: ``max_terms`` that keeps every term of any split (files never fold a rule).
ALL_TERMS = 1 << 30


@dataclass(frozen=True)
class TreeExport:
    """One tree of a run, ready to write: the tree in the export's units and what the file says.

    ``units`` is ``"input"`` (the data's own units) or ``"model"`` (the prepared features; then
    ``units_reason`` says why); ``fill_values`` are the training medians that code fills missing
    values with (input units only); ``output`` is ``"prediction"`` or ``"leaf"``; ``notes`` are
    the lines a code file starts with; ``agreement`` is, where a head decides, each leaf's
    agreement with the model (:func:`treeviz.readers.rules.leaf_agreement`), else empty.
    """

    tree: Tree
    units: str
    units_reason: str = ""
    fill_values: np.ndarray | None = None
    output: str = "prediction"
    notes: tuple[str, ...] = ()
    index: int = 0
    n_trees: int = 1
    title: str = ""
    agreement: Mapping[int, Agreement] = field(default_factory=dict)

    @property
    def units_note(self) -> str:
        """One sentence: the units of every threshold in the file."""
        if self.units == "input":
            return "Thresholds are in the data's own units."
        return f"Thresholds are in the model's units (after preprocessing; {self.units_reason})."

    @property
    def has_code(self) -> bool:
        """Hard trees route each row to one leaf, so they can be written as code; soft trees cannot."""
        return self.tree.routing != "soft"

    @property
    def output_note(self) -> str:
        """What the code returns when it is not the prediction (empty otherwise)."""
        if self.tree.head_decides:
            return ("A head on the inputs and the path through the tree predicts, not the leaves: the code gives "
                    "each row's leaf, and each rule says how often the model agrees with its leaf's rows.")
        if self.output == "leaf":
            return "The code gives each row's leaf, as asked."
        return ""


def tree_exports(model: Any, prepared: PreparedData | None, *, indices: Sequence[int] | None = None,
                 original_units: bool = True, leaf: bool = False, run_name: str = "", run_id: str = "",
                 dataset_name: str = "", title: str = "Rules") -> list[TreeExport]:
    """The exports of a fitted model's trees (``indices`` picks some of an ensemble's; default all).

    ``prepared`` is the run's prepared data (None when it is not available: then model units);
    ``original_units`` False asks for model units; ``leaf`` True makes code return leaf ids; the
    run's name, id and data set name go into the code's first lines, ``title`` heads a rules file."""
    trees = model.to_trees()
    n_trees = len(trees)
    chosen = list(range(n_trees)) if indices is None else [int(i) for i in indices]
    for i in chosen:
        if not 0 <= i < n_trees:
            raise TreevizError(f"The model has {n_trees} tree(s); choose a tree from 0 to {n_trees - 1}.")
    affine = prepared.affine_scaling() if prepared is not None else None
    input_units = prepared is not None and original_units and affine is not None
    if input_units:
        reason = ""
    elif prepared is None:
        reason = "the run's data is not available"
    elif not original_units:
        reason = "as asked"
    else:
        reason = "the scaling is not affine, so it cannot be folded into the splits"
    fill = prepared.imputer.statistics_ if input_units and prepared.imputer is not None else None
    run = f"Run '{run_name}' ({run_id})" if run_id else (f"Run '{run_name}'" if run_name else "")
    out = []
    for i in chosen:
        tree = model.to_tree() if i == 0 else trees[i]  # as RunView picks it
        agreement = _agreement(model, tree, prepared)
        if input_units:
            tree = tree.in_input_units(*affine)  # each hyperplane rewritten exactly in the data's units
        output = "leaf" if leaf or tree.meta.get("prediction", "leaf_value") != "leaf_value" else "prediction"
        notes = [f"{run}, trained on {dataset_name}." if run and dataset_name else f"{run}." if run else ""]
        if n_trees > 1:
            notes.append(f"Tree {i} of the {n_trees} of the ensemble.")
        out.append(TreeExport(tree=tree, units="input" if input_units else "model", units_reason=reason,
                              fill_values=fill, output=output, notes=tuple(n for n in notes if n), index=i,
                              n_trees=n_trees, title=title, agreement=agreement))
    return out


def _agreement(model: Any, tree: Tree, prepared: PreparedData | None) -> dict[int, Agreement]:
    """Where a head decides: each leaf's agreement with the model on the first split with rows
    (test, validation, training), routed in the model's units; else nothing."""
    if not tree.head_decides or prepared is None or not hasattr(model, "predict"):
        return {}
    for split in ("test", "val", "train"):
        X = prepared.X(split)
        if X.shape[0]:
            return leaf_agreement(tree, X, model.predict(X), split={"val": "validation"}.get(split, split))
    return {}


def rules_lines(export: TreeExport, *, max_terms: int = ALL_TERMS) -> list[str]:
    """Every root-to-leaf rule of the export's tree, every term of every split by default (where a
    head decides, each with its agreement with the model)."""
    return rules(export.tree, max_terms=max_terms, agreement=export.agreement)


def rules_file(exports: Sequence[TreeExport], *, max_terms: int = ALL_TERMS, **_: Any) -> str:
    """The rules of one or more trees as a text file: a header, then one IF ... THEN ... per leaf."""
    if not exports:
        raise TreevizError("There is no tree to write rules for.")
    first = exports[0]
    lines = [f"# {first.title}", f"# {first.units_note}"]
    if first.tree.head_decides:
        lines.append("# A head on the inputs and the path through the tree predicts, not the leaves: each rule "
                     "names its leaf and what the leaf's training rows hold, and says how often the model's "
                     "predictions agree.")
    for export in exports:
        if export.n_trees > 1:
            lines.append(f"# tree {export.index} of {export.n_trees}")
        lines += rules_lines(export, max_terms=max_terms)
    return "\n".join(lines) + "\n"


def _code(export: TreeExport, write: Callable[..., str], **kwargs: Any) -> str:
    if not export.has_code:
        raise TreevizError("A soft tree sends every row down every branch with some probability, so it has no "
                           "if-then code; export its rules or the model file instead.")
    return write(export.tree, output=export.output, fill_values=export.fill_values, units=export.units,
                 notes=list(export.notes), **kwargs)


def python_file(exports: Sequence[TreeExport], **_: Any) -> str:
    """The first export's tree as a dependency-free Python ``predict(row)`` (:mod:`treeviz.readers.codegen`)."""
    return _code(exports[0], python_source)


def sql_file(exports: Sequence[TreeExport], *, table: str = "data", row_key: str | None = None, **_: Any) -> str:
    """The first export's tree as one SQL ``CASE`` expression over ``table``, after the row key
    column ``row_key`` when one is given (see :func:`treeviz.readers.codegen.sql_query`; the option
    is not called ``key`` because :func:`render`'s first argument is the format's key)."""
    return _code(exports[0], lambda tree, **kw: sql_query(tree, table, key=row_key, **kw))


def sql_notes(exports: Sequence[TreeExport], *, row_key: str | None = None, **_: Any) -> list[str]:
    """What a reader of the SQL must know before running it: the features it reads from renamed
    columns, because a database would take their names for one column (the SQL's header says it too)."""
    names = exports[0].tree.feature_names
    note = sql_rename_note(names, sql_columns(names, key=row_key))
    return [note] if note else []


@dataclass(frozen=True)
class Format:
    """One file format of a tree: its key (also the command line's flag, ``--<key>``), button
    label, file suffix, MIME type, help text and builder (``build(exports, **options) -> text``;
    options a builder does not use are ignored); ``code`` formats need a hard tree and export one
    tree of an ensemble; ``noun`` names the file in messages ("wrote the <noun> to ..."); ``notes``,
    when given, returns the sentences a caller shows beside the file (``notes(exports, **options)``)."""

    key: str
    label: str
    suffix: str
    mime: str
    help: str
    build: Callable[..., str] = field(repr=False)
    code: bool = False
    noun: str = ""
    notes: Callable[..., list[str]] | None = field(default=None, repr=False)


TREE_FORMATS: dict[str, Format] = {f.key: f for f in (
    Format("rules", "Rules (.txt)", "_rules.txt", "text/plain",
           "Every root-to-leaf rule, every term of every split.", rules_file, noun="rules"),
    Format("python", "Python function (.py)", ".py", "text/x-python",
           "A dependency-free predict(row) that routes rows like this tree.", python_file, code=True,
           noun="Python code"),
    Format("sql", "SQL CASE (.sql)", ".sql", "application/sql",
           "SELECT CASE ... END AS prediction FROM data: the tree as one SQL expression.", sql_file, code=True,
           noun="SQL", notes=sql_notes),
)}


def format_notes(key: str, exports: Sequence[TreeExport], **options: Any) -> list[str]:
    """The sentences to show beside format ``key``'s file for these exports (none for most formats)."""
    fmt = TREE_FORMATS.get(key)
    if fmt is None:
        raise TreevizError(f"Unknown export format {key!r}; use one of {', '.join(TREE_FORMATS)}.")
    return [] if fmt.notes is None or not exports else fmt.notes(list(exports), **options)


def render(key: str, exports: Sequence[TreeExport], **options: Any) -> str:
    """The text of format ``key`` (see :data:`TREE_FORMATS`) for these exports."""
    try:
        fmt = TREE_FORMATS[key]
    except KeyError:
        raise TreevizError(f"Unknown export format {key!r}; use one of {', '.join(TREE_FORMATS)}.") from None
    return fmt.build(list(exports), **options)
