"""``sweep``: a λ path, one stored run per value of the family's λ (or of ``--sweep-param``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from models.ground.errors import TreevizError
from models.registry import families, get_family
from models.schema import Family
from treeviz.cli.common import (
    INTERRUPTED,
    OK,
    PROG,
    apply_thread_budget,
    device_note,
    format_table,
    load_prepared_data,
    model_params,
    note,
    number_text,
    open_store,
    params_help_requested,
    record_json,
    require,
    resolve_task,
    say,
    to_json,
    whole_number,
)
from treeviz.cli.progress import PointsBar, ProgressBar, StopRequest, show_bars
from treeviz.services.experiments.sweep import SweepResult, run_sweep, value_grid
from treeviz.ui.labels import format_size, run_headline, size_label

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Train a λ path: one stored run per value of the family's λ."


def epilog() -> str:
    """Examples, then each family's λ path."""
    return (f"examples:\n  {PROG} sweep --data breast_cancer --family tao\n"
            f"  {PROG} sweep --data iris --family tao --values 0.01,0.1,1 --param max_iter=5\n\n"
            "λ paths of the families:\n"
            + "\n".join(f"  {f.key}: {f.lambda_path.param} from {f.lambda_path.low:g} to {f.lambda_path.high:g}, "
                        f"{f.lambda_path.count} points" for f in families().values() if f.lambda_path))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The values to sweep, beside the shared data, model and home options."""
    values = parser.add_argument_group("values")
    values.add_argument("--sweep-param", metavar="NAME", help="the parameter to sweep (default: the family's λ)")
    values.add_argument("--values", nargs="+", metavar="V", help="the values, separated by spaces or commas")
    values.add_argument("--low", type=float, help="first value of a grid (default: the family's λ path)")
    values.add_argument("--high", type=float, help="last value of a grid (default: the family's λ path)")
    values.add_argument("--count", type=whole_number(1, MAX_SWEEP_POINTS),
                        help="points of the grid (default: the family's λ path)")
    values.add_argument("--linear", action="store_true", help="an evenly spaced grid instead of a geometric one")
    values.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=None,
                        help="start each fit from the previous one's result (default: the family's choice)")


#: The most points one λ path may have.
MAX_SWEEP_POINTS = 1000


def sweep_values(args: argparse.Namespace, family: Family) -> list[float]:
    """The values to sweep: ``--values``, else ``--low/--high/--count`` filled in from the family's
    λ path grid (geometric unless ``--linear``); at most :data:`MAX_SWEEP_POINTS`."""
    if args.values:
        if any(v is not None for v in (args.low, args.high, args.count)):
            args.parser.error("give either --values or --low/--high/--count, not both")
        out = []
        for chunk in args.values:
            for part in str(chunk).split(","):
                if part.strip():
                    try:
                        out.append(float(part))
                    except ValueError:
                        args.parser.error(f"argument --values: not a number: {part.strip()!r}")
        if len(set(out)) > MAX_SWEEP_POINTS:
            raise TreevizError(f"--values gives {len(set(out))} values; a λ path has at most {MAX_SWEEP_POINTS}.")
        return out
    path = family.lambda_path
    swept_default = path is not None and (args.sweep_param in (None, path.param))
    low = args.low if args.low is not None else (path.low if swept_default else None)
    high = args.high if args.high is not None else (path.high if swept_default else None)
    count = args.count if args.count is not None else (path.count if swept_default else 6)
    if low is None or high is None:
        raise TreevizError(f"There is no default grid for '{args.sweep_param}'; give --values or --low and --high.")
    return value_grid(float(low), float(high), int(count), log=not args.linear)


def sweep_rows(results: Sequence[SweepResult], family: Family, param: str) -> list[dict[str, Any]]:
    """One table row per stored point: value, run id, status, headline and the λ path's sizes."""
    sizes = family.lambda_path.sizes if family.lambda_path is not None else ("n_decision_nodes",)
    rows = []
    for r in results:
        record = r.record
        row = {**r.metrics, "n_active_nodes": r.n_active_nodes, "active_depth": r.active_depth,
               "n_nodes": record.n_nodes if record else None}
        found = run_headline(record) if record is not None else None
        rows.append({param: number_text(r.value), "run": record.run_id if record else None,
                     "status": record.status if record else None,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     **{k: format_size(k, row) for k in sizes}})
    return rows


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: a λ path, one stored run per value."""
    if params_help_requested(args):
        return OK
    require(args, "data", "family")
    store = open_store(args)
    family = get_family(args.family)
    param = args.sweep_param or (family.lambda_path.param if family.lambda_path is not None else None)
    if param is None:
        raise TreevizError(f"{family.label} has no λ path; name the parameter to sweep with --sweep-param.")
    values = sweep_values(args, family)
    prepared = load_prepared_data(args, store)
    task = resolve_task(family, prepared.dataset, args.task)
    if any(name == param for name, _ in args.param):
        raise TreevizError(f"--param {param}=... conflicts with the sweep over {param}; leave it out.")
    params = model_params(family, task, args.preset, args.param)
    device_note(args, family, task)
    apply_thread_budget(family, task)
    stop = StopRequest()
    enabled = show_bars(args)
    points = PointsBar(param, len(set(values)), enabled=enabled)
    bar = ProgressBar(family, enabled=enabled, stop=stop, leave=False, position=1)
    try:
        with stop.catching():
            results = run_sweep(family.key, task, params, prepared, values, param=param, warm_start=args.warm_start,
                                store=store, callbacks=[points, bar], device=args.device, name=args.name)
    finally:
        bar._close()
        points.close()
    if args.json:
        print(to_json([{"value": r.value, "n_active_nodes": r.n_active_nodes, "active_depth": r.active_depth,
                        **record_json(r.record)} for r in results]))
    elif args.quiet:
        print("\n".join(r.record.run_id for r in results))
    else:
        sizes = family.lambda_path.sizes if family.lambda_path is not None else ("n_decision_nodes",)
        columns = [(param, param), ("run", "run"), ("status", "status"), ("headline", "headline"),
                   *[(k, size_label(k)) for k in sizes]]
        if results:
            sweep = results[0].record.sweep or {}
            say(f"λ path '{sweep.get('label', '')}' over {param} ({len(results)} of {len(set(values))} points; "
                  f"sweep id {sweep.get('id', '?')})")
        print(format_table(sweep_rows(results, family, param), columns))
    if stop.requested:
        note(args, "the λ path was stopped at your request; the points finished before are stored.")
        return INTERRUPTED
    return OK
