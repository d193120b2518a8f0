"""``datasets``: the built-in data sets and those saved in the run store."""

from __future__ import annotations

import argparse

from treeviz.cli.common import OK, format_table, open_store, say, to_json
from treeviz.services.data import CATALOGUE

#: The command's one-line help, also the first line of its ``--help``.
HELP = "List the built-in data sets and the saved ones."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``datasets [--json]``, beside the shared ``--home``."""
    parser.add_argument("--json", action="store_true", help="as JSON")


def cmd_datasets(args: argparse.Namespace) -> int:
    """``datasets``: the built-in data sets and those saved in the run store."""
    builtin = [{"key": e.key, "task": e.task, "label": e.label, "group": e.group} for e in CATALOGUE.values()]
    saved = open_store(args).list_datasets()
    if args.json:
        print(to_json({"builtin": builtin, "saved": saved}))
        return OK
    print("Built-in data sets (--data KEY):")
    print(format_table(builtin, [("key", "key"), ("task", "task"), ("label", "data set"), ("group", "group")]))
    say(f"\nSaved data sets in {open_store(args).root} (--data FINGERPRINT):")
    if saved:
        rows = [{**s, "shape": f"{s['n_samples']} × {s['n_features']}"} for s in saved]
        print(format_table(rows, [("fingerprint", "fingerprint"), ("name", "name"), ("task", "task"),
                                  ("shape", "rows × features")]))
    else:
        print("(none yet)")
    return OK
