"""``train``: fit one model on a data set and store it as a run."""

from __future__ import annotations

import argparse
import sys

from models.ground.errors import TrainingCancelled
from treeviz.cli.common import (
    INTERRUPTED,
    OK,
    PROG,
    families_help,
    note,
    params_help_requested,
    record_json,
    require,
    say,
    shown,
    to_json,
    training_setup,
)
from treeviz.cli.progress import ProgressBar, StopRequest, show_bars
from treeviz.services.data import PreparedData
from treeviz.services.experiments.training import run_warnings, train_run
from treeviz.services.store.record import RunRecord
from treeviz.ui.labels import run_headline

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Train one model and store it as a run."


def epilog() -> str:
    """Examples, then every family with its parameters (as ``--help-params`` shows one)."""
    return (f"examples:\n  {PROG} train --data iris --family cart --param max_depth=3\n"
            f"  {PROG} train --data rows.csv --target label --family tao --preset quick -q\n\n"
            f"families and their parameters:\n\n{families_help()}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Nothing: ``train`` takes only the shared data, model and home options."""


def _run_lines(record: RunRecord, prepared: PreparedData | None = None) -> list[str]:
    ds = record.dataset
    lines = [f"run       {record.run_id}", f"name      {record.name}",
             f"family    {record.family} ({record.task})"]
    data = f"{record.dataset_name}, {ds.get('n_samples', '?')} rows × {ds.get('n_features', '?')} features"
    if prepared is not None:
        data += (f"; split {prepared.train_idx.size}/{prepared.val_idx.size}/{prepared.test_idx.size} "
                 f"(train/val/test), {prepared.config.scaling} scaling, seed {prepared.config.seed}")
    lines.append(f"data      {data}")
    lines.append(f"status    {record.status} in {record.duration_s:.2f} s")
    found = run_headline(record)
    if found is not None:
        lines.append(f"headline  {found.title} {found.value:.4f}")
    lines.append(f"size      {record.n_nodes} nodes, {record.n_leaves} leaves, depth {record.depth}")
    lines.append("metrics")
    numbers = {k: v for k, v in record.metrics.items() if isinstance(v, (int, float))}
    width = max((len(k) for k in numbers), default=0)
    lines += [f"  {k.ljust(width)}  {v:.4g}" for k, v in numbers.items()]
    return lines


def cmd_train(args: argparse.Namespace) -> int:
    """``train``: fit one model on a data set and store it as a run."""
    if params_help_requested(args):
        return OK
    require(args, "data", "family")
    store, family, prepared, task, params = training_setup(args)
    stop = StopRequest()
    bar = ProgressBar(family, enabled=show_bars(args), stop=stop)
    try:
        with stop.catching():
            record = train_run(family.key, task, params, prepared, store=store, callbacks=[bar],
                               device=args.device, name=args.name)
    except TrainingCancelled:
        print("treeviz: training was cancelled before a usable model existed; nothing was stored.",
              file=sys.stderr)
        return INTERRUPTED
    finally:
        bar._close()
    if args.json:
        print(to_json(record_json(record)))
    elif args.quiet:
        print(record.run_id)
    else:
        say("\n".join(_run_lines(record, prepared)))
    for warning in run_warnings(record):  # a fit that diverged or learned nothing says so, even with --quiet
        print(f"treeviz: {shown(warning)}", file=sys.stderr)
    if record.status == "cancelled":
        note(args, f"training was stopped at your request; the model as it stood is stored as run {record.run_id}.")
        return INTERRUPTED
    return OK
