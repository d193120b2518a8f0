"""``delete``: runs by id, and the leftovers of saves and deletes that did not finish."""

from __future__ import annotations

import argparse

from treeviz.cli.common import OK, PROG, open_store

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Delete runs (their data sets stay), or the leftovers of crashed saves."


def epilog() -> str:
    """Examples, and that damaged runs are deleted too."""
    return (f"examples:\n  {PROG} delete RUN_ID [RUN_ID ...]\n  {PROG} delete --leftovers\n\n"
    "A run is deleted even when its files are damaged (the Runs page cannot open those).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The runs to delete and ``--leftovers``, beside the shared ``--home``."""
    parser.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="the runs to delete")
    parser.add_argument("--leftovers", action="store_true",
                        help="also remove the hidden folders that saves or deletes which did not finish left behind")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the deleted run ids")


def cmd_delete(args: argparse.Namespace) -> int:
    """``delete``: runs by id (every id is checked before any is deleted), and with ``--leftovers``
    the folders that crashed saves and deletes left behind."""
    if not args.run_ids and not args.leftovers:
        args.parser.error("give the run id(s) to delete, or --leftovers")
    store = open_store(args)
    for run_id in args.run_ids:
        store.run_path(run_id)  # a sentence for an unknown id, before anything is deleted
    for run_id in dict.fromkeys(args.run_ids):
        store.delete(run_id)
        print(run_id if args.quiet else f"deleted run {run_id}")
    if args.leftovers:
        count = store.remove_leftovers()
        if not args.quiet:
            print(f"removed {count} folder(s) left in {store.root} by saves or deletes that did not finish")
    return OK
