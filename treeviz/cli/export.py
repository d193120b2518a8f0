"""``export``: a run as a zip, its rules as text, or its tree as a Python function or a SQL query."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from models.ground.errors import TreevizError
from treeviz.cli.common import OK, PROG, note, open_store, whole_number, write_output
from treeviz.services.store.archive import export_zip, model_file, run_onnx
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.services.views.export import (
    ALL_TERMS,
    TREE_FORMATS,
    Format,
    TreeExport,
    format_notes,
    render,
    tree_exports,
)

#: The command's one-line help, also the first line of its ``--help``.
HELP = ("Export a run: a zip (a run the app can import), its model file (the model with its preprocessing), an "
        "ONNX model, "
        "its rules as text, or its tree as a Python function or a SQL CASE query.")


def epilog() -> str:
    """Examples, and the units of rules and code."""
    return (f"examples:\n  {PROG} export RUN_ID --out run.zip\n  {PROG} export RUN_ID --model --out model.zip\n"
            f"  {PROG} export RUN_ID --onnx --out model.onnx\n"
            f"  {PROG} export RUN_ID --rules\n"
            f"  {PROG} export RUN_ID --python --out tree.py\n  {PROG} export RUN_ID --sql --table rows\n\n"
            "Rules and code read raw rows in the data's own units when the run's scaling allows it (none or\n"
            "standard); the code then fills missing values with the training medians, as the app does.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """What to export and where, beside the shared ``--home``."""
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("-o", "--out", metavar="FILE",
                        help="where to write ('-': stdout; default: RUN_ID.zip for a zip, stdout for text)")
    what = parser.add_mutually_exclusive_group()
    for fmt in TREE_FORMATS.values():  # one flag per row of the export service's table
        what.add_argument(f"--{fmt.key}", dest="tree_format", action="store_const", const=fmt.key,
                          help=f"{fmt.help[0].lower()}{fmt.help[1:]}")
    what.add_argument("--model", dest="tree_format", action="store_const", const="model",
                      help="the model file: the model and its preprocessing (JSON + safetensors in a zip), which "
                           "treeviz.load_model opens to predict from the table's own columns "
                           "(default: RUN_ID.model.zip)")
    what.add_argument("--onnx", dest="tree_format", action="store_const", const="onnx",
                      help="an ONNX model with the preprocessing inside: one input per column of the table, numbers "
                           "as doubles and text as strings (needs pip install 'treeviz[onnx]'; default: RUN_ID.onnx)")
    parser.add_argument("--no-dataset", action="store_true", help="zip: leave the data set out")
    parser.add_argument("--model-units", action="store_true",
                        help="rules and code: the model's (preprocessed) units instead of the data's own")
    parser.add_argument("--max-terms", type=whole_number(1), default=None,
                        help="rules: fold each oblique split to its largest terms (default: every term)")
    parser.add_argument("--tree", type=whole_number(0), metavar="INDEX",
                        help="rules: only this tree of an ensemble; code: this tree (default 0)")
    parser.add_argument("--leaf", action="store_true", help="code: return the leaf id instead of the prediction")
    parser.add_argument("--table", type=sql_table, default="data", help="SQL: the table the query reads")
    parser.add_argument("--key", metavar="COLUMN", type=sql_key, default=None,
                        help="SQL: the table's row id column, selected first so predictions join back (default: none)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")


def sql_table(text: str) -> str:
    """``--table``: a table name that is not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the name of a table, got an empty one")
    return text


def sql_key(text: str) -> str:
    """``--key``: a column name that is not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the name of a column, got an empty one")
    return text


def _exports(store: RunStore, run_id: str, args: argparse.Namespace, indices: Sequence[int] | None
             ) -> tuple[RunRecord, list[TreeExport]]:
    """The run's trees to export (:func:`treeviz.services.views.export.tree_exports`: the same decisions as the
    Tree explorer), in the data's own units unless ``--model-units`` or the run's scaling says otherwise."""
    record = store.get(run_id)
    model = store.load_model(run_id)
    n_trees = len(model.to_trees())
    for i in indices if indices is not None else ():
        if not 0 <= i < n_trees:
            raise TreevizError(f"Run {run_id} has {n_trees} tree(s); choose --tree from 0 to {n_trees - 1}.")
    try:
        prepared = store.load_prepared(run_id)
    except TreevizError as err:
        prepared = None
        note(args, f"note: {err} The export is in the model's units.")
    exports = tree_exports(model, prepared, indices=indices, original_units=not args.model_units, leaf=args.leaf,
                           run_name=record.name, run_id=record.run_id, dataset_name=record.dataset_name,
                           title=f"Rules of run {run_id} '{record.name}' ({record.family}, {record.task}, "
                                 f"{record.dataset_name})")
    return record, exports


def _tree_text(store: RunStore, run_id: str, args: argparse.Namespace, fmt: Format) -> str:
    """The run's tree(s) in one of the export service's formats, as the Tree explorer offers them:
    rules cover every tree of an ensemble (``--tree`` picks one) with every term of every split
    unless ``--max-terms`` folds them; code is one tree (``--tree``, default 0)."""
    if not fmt.code:
        _, exports = _exports(store, run_id, args, None if args.tree is None else [args.tree])
        return render(fmt.key, exports, max_terms=args.max_terms or ALL_TERMS, table=args.table, row_key=args.key)
    index = 0 if args.tree is None else args.tree
    record, [export] = _exports(store, run_id, args, [index])
    text = render(fmt.key, [export], max_terms=args.max_terms or ALL_TERMS, table=args.table, row_key=args.key)
    for sentence in format_notes(fmt.key, [export], table=args.table, row_key=args.key):
        note(args, f"note: {sentence}")
    if export.n_trees > 1:
        note(args, f"note: the code is tree {index} of the {export.n_trees} of this ensemble, not the ensemble's "
                   "prediction; --tree picks another.")
    if export.output == "leaf" and not args.leaf:
        note(args, f"note: {record.family} predicts from more than its leaves, so the code gives each row's leaf.")
    return text


def cmd_export(args: argparse.Namespace) -> int:
    """``export``: a run as a zip (default), its rules as text, or its tree as Python or SQL."""
    store = open_store(args)
    store.get(args.run_id)  # a sentence for an unknown run before anything else
    if args.tree_format == "model":
        write_output(args.out or f"{args.run_id}.model.zip", model_file(store, args.run_id), args, "model file")
        return OK
    if args.tree_format == "onnx":
        write_output(args.out or f"{args.run_id}.onnx", run_onnx(store, args.run_id), args, "ONNX model")
        return OK
    if args.tree_format:
        fmt = TREE_FORMATS[args.tree_format]
        write_output(args.out, _tree_text(store, args.run_id, args, fmt), args, fmt.noun or fmt.key)
        return OK
    data = export_zip(store, args.run_id, include_dataset=not args.no_dataset)
    write_output(args.out or f"{args.run_id}.zip", data, args, "run zip")
    return OK
