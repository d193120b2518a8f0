"""``report``: a run's report as one self-contained HTML page."""

from __future__ import annotations

import argparse

from treeviz.cli.common import OK, open_store, write_output
from treeviz.ui.report import run_report

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Write a run's report as one self-contained HTML page."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The run and where to write, beside the shared ``--home``."""
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("-o", "--out", metavar="FILE", help="where to write ('-': stdout; default: RUN_ID.html)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")


def cmd_report(args: argparse.Namespace) -> int:
    """``report``: a run's self-contained HTML page."""
    store = open_store(args)
    store.get(args.run_id)
    write_output(args.out or f"{args.run_id}.html", run_report(store, args.run_id), args, "report")
    return OK
