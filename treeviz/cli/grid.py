"""``grid``: one stored run per combination of parameter values, here or on a Dask cluster."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from tqdm import tqdm

from models.ground.errors import TreevizError
from models.schema import Family
from treeviz.cli.common import (
    OK,
    PROG,
    USER_ERROR,
    format_table,
    name_value,
    note,
    number_text,
    params_help_requested,
    record_json,
    require,
    say,
    to_json,
    training_setup,
    whole_number,
)
from treeviz.cli.progress import show_bars
from treeviz.services.experiments.grid import (
    SCHEDULER_ENV,
    GridResult,
    GridTrial,
    check_grid,
    default_scheduler,
    grid_points,
    run_grid,
    scheduler_address,
    value_text,
)
from treeviz.ui.labels import headline

#: The command's one-line help, also the first line of its ``--help``.
HELP = ("Train a grid: one stored run per combination of parameter values (λ × depth × seed, ...), "
        "in parallel here or on a Dask cluster.")


def epilog() -> str:
    """Examples, and where the trials run."""
    return (f"examples:\n  {PROG} grid --data iris --family tao --grid l1_penalty=0.01,0.1,1 --grid depth=3,4 "
            "--grid random_state=0,1\n"
            f"  {PROG} grid --data iris --family cart --grid max_depth=2,3,4 --grid random_state=0,1 "
            "--scheduler tcp://127.0.0.1:8786\n\n"
            "Trials run at once in worker processes here, or on the Dask cluster whose scheduler --scheduler\n"
            f"(or ${SCHEDULER_ENV}) names; this process stores each run as it comes back, so workers need\n"
            "treeviz on their Python path but no access to the run store. Ctrl-C stops the grid; the trials\n"
            "stored before stay.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The grid's axes and where it runs, beside the shared data, model and home options."""
    axes = parser.add_argument_group("grid")
    axes.add_argument("-g", "--grid", action="append", type=name_value, default=[], metavar="NAME=V1,V2",
                      help="a parameter and its values, separated by commas (repeat for each parameter; 'none' or "
                           "the optional label where None is allowed)")
    axes.add_argument("--scheduler", metavar="ADDRESS",
                      help=f"a Dask scheduler, e.g. tcp://127.0.0.1:8786 (default: ${SCHEDULER_ENV}; unset or "
                           "empty: run here)")
    axes.add_argument("--local", action="store_true", help=f"run here even when ${SCHEDULER_ENV} is set")
    axes.add_argument("-j", "--jobs", type=job_count, metavar="N",
                      help="trials at once: -1 every core here (or every Dask thread), 1 one after another "
                           "(default: -1)")


def job_count(text: str) -> int:
    """``--jobs``: -1 (every core or Dask thread) or a whole number of at least 1."""
    try:
        value = whole_number(-1)(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected -1 (every core) or a whole number of at least 1, got {text!r}")
    return value


def grid_rows(result: GridResult, family: Family, task: str) -> list[dict[str, Any]]:
    """One table row per trial: its number, the point's values, run id, status, headline and size
    (or the error of a failed trial)."""
    rows = []
    for t in result.trials:
        found = headline(t.metrics, family.key, task)
        rows.append({"trial": t.index + 1, **{k: value_text(v) for k, v in t.params.items()}, "run": t.run_id,
                     "status": t.status or "failed", "seconds": f"{t.duration_s:.2f}" if t.error is None else None,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     "nodes": None if t.error else number_text(t.metrics.get("n_decision_nodes")),
                     "error": t.error})
    return rows


def cmd_grid(args: argparse.Namespace) -> int:
    """``grid``: one stored run per point of a grid of values, here or on a Dask cluster."""
    if params_help_requested(args):
        return OK
    require(args, "data", "family")
    if not args.grid:
        args.parser.error("give at least one --grid NAME=V1,V2,...")
    names = [name for name, _ in args.grid]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        args.parser.error(f"--grid {twice[0]}=... is given more than once; list all its values in one option")
    fixed = sorted({name for name, _ in args.param} & set(names))
    if fixed:
        raise TreevizError(f"--param {fixed[0]}=... conflicts with the grid over {fixed[0]}; leave it out.")
    if args.local and args.scheduler:
        args.parser.error("give either --scheduler or --local, not both")
    scheduler = None if args.local else (args.scheduler if args.scheduler is not None else default_scheduler())
    scheduler = scheduler_address(scheduler)  # a malformed address is refused before the data is read
    store, family, prepared, task, params = training_setup(args)
    grid = check_grid(family, task, dict(args.grid))
    size = len(grid_points(grid))
    bar = tqdm(total=size, desc="grid", unit="trial", dynamic_ncols=True,
               disable=None if show_bars(args) is None else not show_bars(args), file=sys.stderr)

    def advance(trial: GridTrial) -> None:
        bar.update(1)

    if scheduler:
        note(args, f"running the grid on the Dask cluster at {scheduler}")
    try:
        result = run_grid(family.key, task, params, prepared, grid, store=store, scheduler=scheduler,
                          n_jobs=args.jobs, on_trial=advance, device=args.device, name=args.name)
    finally:
        bar.close()
    stored = [t for t in result.trials if t.run_id is not None]
    if args.json:
        print(to_json([{"index": t.index, "params": t.params, "error": t.error,
                        **(record_json(store.get(t.run_id)) if t.run_id else {})} for t in result.trials]))
    elif args.quiet:
        print("\n".join(t.run_id for t in stored))
    else:
        say(f"Grid '{result.label}' ({len(stored)} of {result.size} trials stored, {result.where}; "
              f"grid id {result.grid_id})")
        columns = [("trial", "trial"), *[(n, n) for n in result.names], ("run", "run"), ("status", "status"),
                   ("seconds", "seconds"), ("headline", "headline"), ("nodes", "decision nodes")]
        if any(t.error for t in result.trials):
            columns.append(("error", "error"))
        print(format_table(grid_rows(result, family, task), columns))
    failed = len(result.trials) - len(stored)
    if failed:
        note(args, f"{failed} of {result.size} trials failed; their errors are in the table.")
    return USER_ERROR if result.trials and not stored else OK
