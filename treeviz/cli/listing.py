"""``list``: the stored runs, newest first (the module is not named ``list``, the builtin)."""

from __future__ import annotations

import argparse
from datetime import datetime

from models.registry import families
from treeviz.cli.common import OK, format_table, note, open_store, record_json, to_json, whole_number
from treeviz.services.store.record import RunRecord
from treeviz.ui.labels import run_headline

#: The command's one-line help, also the first line of its ``--help``.
HELP = "List the stored runs, newest first."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The filters and the output, beside the shared ``--home``."""
    parser.add_argument("--family", choices=list(families()), metavar="FAMILY", help="only runs of this family")
    parser.add_argument("--dataset", metavar="NAME", help="only runs on this data set (name or fingerprint)")
    parser.add_argument("--status", choices=("finished", "cancelled"), help="only runs with this status")
    parser.add_argument("-n", "--limit", type=whole_number(0), help="at most this many runs")
    parser.add_argument("--json", action="store_true", help="the full run records (and headlines) as JSON")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")


def _created(record: RunRecord) -> str:
    return datetime.fromisoformat(record.created).strftime("%Y-%m-%d %H:%M:%S")


def cmd_list(args: argparse.Namespace) -> int:
    """``list``: the stored runs, newest first."""
    store = open_store(args)
    records = store.list()
    for problem in store.problems:
        note(args, f"note: {problem}")
    if args.family:
        records = [r for r in records if r.family == args.family]
    if args.dataset:
        records = [r for r in records if args.dataset in (r.dataset_name, r.dataset_fingerprint)]
    if args.status:
        records = [r for r in records if r.status == args.status]
    if args.limit is not None:
        records = records[: max(0, args.limit)]
    if args.json:
        print(to_json([record_json(r) for r in records]))
        return OK
    if not records:
        note(args, f"no runs in {store.root}" + (" match" if args.family or args.dataset or args.status else ""))
        return OK
    rows = []
    for r in records:
        found = run_headline(r)
        rows.append({"id": r.run_id, "name": r.name, "family": r.family, "task": r.task, "data": r.dataset_name,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     "status": r.status, "created": _created(r)})
    print(format_table(rows, [("id", "id"), ("name", "name"), ("family", "family"), ("task", "task"),
                              ("data", "data set"), ("headline", "headline"), ("status", "status"),
                              ("created", "created (UTC)")]))
    return OK
