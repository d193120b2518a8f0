"""``import``: run zips (exported by the app or the export command) into the run store (the
module is not named ``import``, a keyword)."""

from __future__ import annotations

import argparse
from pathlib import Path

from treeviz.cli.common import OK, open_store, read_model_bytes, say
from treeviz.services.store.archive import import_zip

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Import run zips (exported by the app or the export command)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The zips, beside the shared ``--home``."""
    parser.add_argument("zips", nargs="+", metavar="ZIP")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the new run ids")


def cmd_import(args: argparse.Namespace) -> int:
    """``import``: run zips into the store."""
    store = open_store(args)
    for name in args.zips:
        path = Path(name).expanduser()
        record = import_zip(store, read_model_bytes(path, "run zip"))
        if args.quiet:
            print(record.run_id)
        else:
            say(f"imported {path.name} as run {record.run_id} '{record.name}' ({record.family}, "
                  f"{record.dataset_name})")
    return OK
