"""DGT (dense gradient trees, Karthikeyan et al., TMLR 2022) against the published numbers.

One module per table (``dgt_table1``: regression with CART; ``dgt_table2``: classification;
``dgt_table4``: DGT-Forest; ``dgt_table6``: bandit regression) and the ``speed`` part
(``dgt_speed``), each row beside the paper's number: mean ± population std (ddof = 0) over every
split × seed run, RMSE in the target's units.

Settings: ``dgt.toml`` beside this module holds the paper's protocol, with a comment on each
setting; ``--config FILE`` changes the settings that file holds, and flags change single ones::

    python -m benchmarks.paper.dgt                                     # every part, the paper's protocol
    python -m benchmarks.paper.dgt --parts table1,speed --jobs 2       # some parts
    python -m benchmarks.paper.dgt --parts table2 --datasets letter --epochs 30 --train-device cpu
    python -m benchmarks.paper.dgt --quick --parts table1              # a smoke test (about a minute)

``python -m benchmarks.report.run dgt [--quick]`` runs it with ``dgt.toml`` as it stands. ``--quick``: one
split, one seed, 2 epochs, classification on 1200-row subsamples at h ≤ 4, 2-tree forests at h =
4, a 500-row bandit stream, everything on the CPU; its numbers are not comparable with the paper.

A row's ``protocol`` is ``full``, or ``reduced`` where it ran smaller than the paper (fewer seeds,
splits, epochs or trees, no grid, a short λ1 grid, ``--quick``), or ``skipped`` (the bandit
learners missing); ``protocol_note`` says what differs and ``protocol_settings`` holds every
setting. A run writes ``benchmarks/results/dgt.json`` (or under ``TREEVIZ_BENCH_RESULTS``) with
its own rows, stamped with this run's commit, machine, date and command. The rows of parts and
data sets it did not rerun stay, from the previous file of the same mode, only with their own
stamp and marked ``"carried_over": true`` (:mod:`benchmarks.paper.carried`). So on a machine with
a time limit per command the parts can run one at a time (``--parts table2 --datasets letter``).
``results["run"]`` holds this run's settings and the seconds each part took.

Data (the papers' reference folder, ``../shared/data`` or ``TREEVIZ_SHARED_DATA``): the five
Abalone / cpu_act shuffles shipped with the authors' code and the UCI PenDigits, SatImage and
Letter tables. Models z-score the features and min-max the regression target on their training
rows themselves.

Device mode: ``run(device="cuda")`` (``--device cuda``) is timing only (:mod:`dgt_speed`'s
``device_workloads``): seconds per epoch on the CPU and on the GPU in this process, written under
``results["device_timing"]``; the settings above are not used there.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import torch

from benchmarks import device_timing
from benchmarks.common import format_table, write_results
from benchmarks.paper import dgt_table1, dgt_table2, dgt_table4, dgt_table6
from benchmarks.paper.carried import carry_rows, carry_sections, report
from benchmarks.paper.dgt_common import machine, previous, row_date
from benchmarks.paper.dgt_config import (
    CLASSIFICATION,
    PARTS,
    REGRESSION,
    add_arguments,
    config_from_args,
    read_config,
    settings,
)
from benchmarks.paper.dgt_speed import device_workloads, speed_rows

NAME = "dgt"


def _fmt(mean: float | None, std: float | None, metric: str) -> str:
    if mean is None:
        return "—"
    digits = 3 if metric in ("rmse", "s_per_epoch") else 2
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _table_row(r: dict[str, Any]) -> dict[str, Any]:
    if r["part"] == "speed":
        verdict = f"test RMSE {r['test_rmse']:.3f}" if r.get("test_rmse") is not None else "—"
    elif r.get("within_one_std_or_better") is None:
        verdict = r.get("status", "—")
    else:
        verdict = "yes" if r["within_one_std_or_better"] else "no"
    return {"part": r["part"], "row": r["name"], "metric": r["metric"],
            "ours": _fmt(r["ours_mean"], r["ours_std"], r["metric"]),
            "paper": _fmt(r["paper_mean"], r["paper_std"], r["metric"]),
            "within 1 std / speed-up": verdict,
            "s/epoch": f"{r['epoch_s_mean']:.3f}" if r.get("epoch_s_mean") is not None else "",
            "runs": r["n_runs"], "protocol": r["protocol"],
            "from": f"earlier ({row_date(r)})" if r.get("carried_over") else "this run"}


def _part_rows(part: str, datasets: tuple[str, ...], s: dict[str, Any]) -> list[dict[str, Any]]:
    if part == "table1":
        return dgt_table1.rows(datasets, s)
    if part == "table2":
        return dgt_table2.rows(datasets, s)
    if part == "table4":
        return dgt_table4.rows(datasets, s)
    if part == "table6":
        return dgt_table6.rows(s)
    return speed_rows(s)


def run(quick: bool = False, device: str = "cpu", config: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parts ``config`` asks for (default ``dgt.toml``; where they train is its
    ``train_device``), or with another ``device`` the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="per epoch = a whole fit of a few epochs over its epochs")
    start_all = time.perf_counter()
    warnings.filterwarnings("ignore", category=FutureWarning)
    config = read_config() if config is None else config
    s = settings(config, quick=quick)
    plan = {"table1": [d for d in REGRESSION if d in s["datasets"]],
            "table2": [d for d in CLASSIFICATION if d in s["datasets"]],
            "table4": [d for d in REGRESSION if d in s["datasets"]],
            "table6": ["abalone"] if "abalone" in s["datasets"] else [],
            "speed": ["abalone"] if "abalone" in s["datasets"] else []}
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    # the speed part first, before any worker process exists to compete for the cores
    for part in sorted(s["parts"], key=lambda p: p != "speed"):
        if not plan[part]:
            continue
        t0 = time.perf_counter()
        new = _part_rows(part, tuple(plan[part]), s)
        timings[part] = time.perf_counter() - t0
        for r in new:
            r["part_seconds"] = timings[part]
            print(f"  [{part}] {r['name']}: {_fmt(r['ours_mean'], r['ours_std'], r['metric'])} "
                  f"(paper {_fmt(r['paper_mean'], r['paper_std'], r['metric'])}) [{timings[part]:.0f} s]",
                  flush=True)
        rows.extend(new)
    done = {(r["part"], r["dataset"]) for r in rows} | {(p, d) for p in s["parts"] for d in plan[p]}
    earlier = previous(quick)
    kept, dropped = carry_rows(r for r in earlier.get("rows", []) if (r.get("part"), r.get("dataset")) not in done)
    order = {p: i for i, p in enumerate(PARTS)}
    all_rows = sorted(rows + kept, key=lambda r: order.get(r.get("part"), len(order)))
    results = {"rows": all_rows,
               "run": {"parts": list(s["parts"]), "datasets": sorted({d for p in s["parts"] for d in plan[p]}),
                       "config": config, "settings": {k: v for k, v in s.items() if k not in ("parts", "datasets")},
                       "part_seconds": timings, "total_seconds": time.perf_counter() - start_all,
                       "machine": machine("cuda" if torch.cuda.is_available() else "cpu")},
               "notes": ("mean ± population std (ddof=0) over splits x seeds; RMSE in the target's units; a row's "
                         "protocol is full, reduced (what differs in protocol_note) or skipped; rows marked "
                         "carried_over were measured by an earlier run (their own commit, date and command)")}
    report(dropped, carry_sections(earlier, [device_timing.SECTION], results))
    return {"rows": [_table_row(r) for r in all_rows], "results": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="Settings: benchmarks/paper/dgt.toml (comments there).")
    add_arguments(parser)
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                        help="cuda: the timing-only device mode (CPU against GPU epochs); cpu: the parts")
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
        settings(config, quick=args.quick)  # refuse bad settings before anything runs
    except (OSError, ValueError) as err:
        parser.error(str(err))
    start = time.perf_counter()
    out = run(quick=args.quick, device=args.device, config=config)
    print(f"\n== {NAME}{' (quick)' if args.quick else ''}: {time.perf_counter() - start:.1f} s")
    print(format_table(out["rows"]))
    print(f"results: {write_results(NAME, out['results'], quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
