"""Skinny Trees against the paper (Ibrahim, Behdin & Mazumder, AISTATS 2024), and its speed.

Rows (``python -m benchmarks.report.run skinny`` or ``python -m benchmarks.paper.skinny``), each beside the
paper's number, errors standard errors over seeds or simulations as the paper reports them:

* the authors' toy example on breast_cancer (:mod:`skinny_toy`);
* time per epoch at the side-by-side settings and the compact model (:mod:`skinny_speed`);
* Table 1, synthetic (:mod:`skinny_table1`; ``--table1``, resumable);
* satimage: Table 4 at a 25 % budget (Skinny Trees by a logged search, :mod:`skinny_satimage`,
  ``--table4``; the toolkit baselines, :mod:`skinny_toolkits`, ``--toolkits``) and Table 2's single
  tree (``--single-tree``); their studies (``--selection-study``, ``--split-study``) are stored
  beside the rows.

A row's ``protocol`` is ``full``, ``reduced`` (what differs in ``protocol_note``) or ``skipped``.
``--quick`` runs every row with a handful of epochs and trials (the numbers then mean nothing).

A whole run writes what it measured. The searched satimage rows (hours of trials, run apart with
``--table4`` and ``--single-tree``) and the studies are taken from the stored file only with the
stamp (commit, date, command) of the run that measured them, marked ``"carried_over": true``, as is
the device section; without a stamp of their own they are left out (a searched row is then
searched again, small: 64 trials). A part run apart (``--table1``, ``--toolkits``, ``--sections``,
...) replaces its own rows in the stored file and leaves the others as they are.

``run(device="cuda")`` (``--device cuda``) is timing only (:mod:`skinny_speed`'s ``device_workloads``),
written under ``results["device_timing"]`` beside the CPU results.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from benchmarks import device_timing
from benchmarks.common import (
    format_table,
    mean_text,
    merge_rows,
    results_dir,
    shared_data_dir,
    stamp,
    store_section,
    stored_rows,
    write_results,
    yes_no,
)
from benchmarks.paper.carried import carry_rows, carry_sections, previous_results, report
from benchmarks.paper.skinny_common import RESULTS
from benchmarks.paper.skinny_satimage import SEARCHED, logged_search, satimage, satimage_split_study, selection_study
from benchmarks.paper.skinny_speed import compact_rows, device_workloads, speed_rows
from benchmarks.paper.skinny_table1 import TABLE1_PAPER, synthetic_rows
from benchmarks.paper.skinny_toolkits import toolkit_rows
from benchmarks.paper.skinny_toy import toy_rows

NAME = "skinny"
#: Studies of the satimage rows, run apart and kept in ``results`` beside the rows.
STUDIES = ("satimage_split_study", "satimage_selection_study")
#: The parts ``--sections`` reruns alone.
SECTIONS = {"toy": toy_rows, "speed": speed_rows, "compact": compact_rows}


def satimage_rows(quick: bool) -> list[dict[str, Any]]:
    """Table 4's and Table 2's satimage rows: the searched ones from the stored file where an earlier
    run measured them (carried over with their stamp), else a small search; the toolkit baselines."""
    data = shared_data_dir()
    if data is None or not (data / "uci" / "satimage.csv.gz").is_file():
        return [{"name": "satimage rows", "metric": "AUC", "ours_mean": None, "ours_std": None, "paper_mean": None,
                 "paper_std": None, "protocol": "skipped",
                 "protocol_note": "../shared/data/uci/satimage.csv.gz is absent"}]
    prepared = satimage()
    seeds = [0] if quick else [0, 1, 2, 3, 4]
    # The searched rows on the paper's protocol come from logged_search (--table4, --single-tree),
    # run apart: a full run keeps them, with the stamp of the run that measured them.
    kept, dropped = ([], []) if quick else carry_rows(stored_rows(RESULTS, lambda name: name in SEARCHED))
    report(dropped, [])
    by_name = {r["name"]: r for r in kept}
    rows = [by_name.get(name) or logged_search(name, total=3 if quick else 64, reruns=len(seeds), quick=quick)
            for name in SEARCHED]
    return rows + toolkit_rows(prepared, quick)


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """The CPU benchmark (``device="cpu"``), or with another device the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="per epoch = a whole fit of a few epochs over its epochs")
    start = time.perf_counter()
    sections = [("toy", toy_rows), ("speed", speed_rows), ("compact", compact_rows), ("synthetic", synthetic_rows),
                ("satimage", satimage_rows)]
    rows: list[dict[str, Any]] = []
    for label, fn in sections:
        t0 = time.perf_counter()
        got = fn(quick)
        rows += got
        print(f"  {label}: {len(got)} row(s) in {time.perf_counter() - t0:.0f} s", flush=True)
    table = [{"row": r["name"], "metric": r["metric"], "ours (± SE)": mean_text(r["ours_mean"], r.get("ours_se")),
              "paper": mean_text(r["paper_mean"], r.get("paper_std")),
              "meets paper": yes_no(r.get("within_paper_se_or_better")), "protocol": r["protocol"],
              "from": "earlier" if r.get("carried_over") else "this run"} for r in rows]
    results = {"rows": rows, "total_seconds": time.perf_counter() - start}
    # the studies run apart (see main) and the device section: kept only with their own stamp
    report([], carry_sections(previous_results(RESULTS, quick), (*STUDIES, device_timing.SECTION), results))
    return {"rows": table, "results": results}


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description="Skinny Trees against the paper: the whole benchmark, or one part run "
                                             "apart and merged into benchmarks/results/skinny.json.")
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--toolkits", action="store_true",
                      help="Table 4's toolkit rows (the paper's 2 000-trial search and 100 re-runs each, about "
                           "30 minutes on 2 cores)")
    what.add_argument("--table4", action="store_true",
                      help="Table 4's Skinny Trees row on the paper's protocol (2 000 random trials of its S5.3 "
                           "space, 100 re-runs; about 5 CPU hours, every trial logged: stop it at any time "
                           "and run it again to resume)")
    what.add_argument("--selection-study", action="store_true",
                      help="re-fit the Table 4 search's 10 best trials within the budget with 10 seeds each "
                           "(about 20 CPU minutes, resumable), stored as results.satimage_selection_study")
    what.add_argument("--split-study", action="store_true",
                      help="fit the Table 4 row's chosen setting and XGBoost importance selection on six splits, "
                           "stored as results.satimage_split_study")
    what.add_argument("--single-tree", action="store_true",
                      help="Table 2's single-tree row on the paper's protocol (500 random trials of its space, "
                           "100 re-runs; resumable)")
    what.add_argument("--table1", action="store_true",
                      help="Table 1's six synthetic rows on the paper's protocol (25 simulations x 500 trials per "
                           "N, about 6 CPU hours; every trial logged: stop it at any time and run it again to "
                           "resume)")
    what.add_argument("--sections", nargs="+", choices=sorted(SECTIONS),
                      help="rerun these rows alone (the breast_cancer toy, the per-epoch timings, the compact "
                           "model; under a minute on 2 cores) and merge them into the stored results")
    ap.add_argument("--sizes", type=int, nargs="+", choices=sorted(TABLE1_PAPER), default=[1000, 200],
                    help="with --table1: the N to run and write (default both)")
    ap.add_argument("--retime", type=int, default=0, metavar="K",
                    help="with --table1: re-run K trials per N of those logged without a time (drawn at random; "
                         "each must reproduce its logged result) to estimate the rows' time")
    ap.add_argument("--quick", action="store_true", help="the whole benchmark with a handful of epochs and trials")
    ap.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                    help="cuda: the timing-only device mode (CPU against GPU epochs)")
    return ap


def _store_study(key: str, study: dict[str, Any]) -> None:
    """Put a study beside the rows of the stored results, stamped as this run's."""
    store_section(results_dir() / f"{RESULTS}.json", key, {**study, **stamp()})


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = results_dir() / f"{RESULTS}.json"
    if args.sections or args.table1 or args.toolkits:
        found = ([r for s in args.sections for r in SECTIONS[s](False)] if args.sections else
                 synthetic_rows(False, tuple(args.sizes), args.retime) if args.table1 else
                 toolkit_rows(satimage(), False))
        merge_rows(found, path)
        for r in found:
            print(r["name"], r["ours_mean"], r.get("ours_se"), r.get("paper_mean"), r["protocol"])
    elif args.table4 or args.single_tree:
        r = logged_search([*SEARCHED][0 if args.table4 else 1])
        print(r["name"], r["ours_mean"], r["ours_se"], r.get("chosen"), r.get("n_trials"))
    elif args.selection_study:
        study = selection_study(next(iter(SEARCHED)))
        _store_study("satimage_selection_study", study)
        for c in study["candidates"]:
            print(c["trial"], f"search val {c['search_val_auc_pct']:.2f}", f"mean val {c['val_auc_pct']:.2f}",
                  f"test {c['test_auc_pct']:.2f} ± {c['test_auc_se']:.3f}", f"in budget {c['within_budget']:.0%}")
    elif args.split_study:
        table4 = {r["name"]: r for r in stored_rows(RESULTS, lambda name: name in SEARCHED)}.get(next(iter(SEARCHED)))
        if table4 is None or "chosen" not in table4:
            sys.exit("no stored Table 4 Skinny Trees row with its chosen setting: run --table4 first")
        study = satimage_split_study(table4["chosen"])
        _store_study("satimage_split_study", study)
        print(f"difference (Skinny - XGBoost): {study['difference_pct']}")
    else:
        start = time.perf_counter()
        out = run(quick=args.quick, device=args.device)
        print(f"\n== {NAME}{' (quick)' if args.quick else ''}: {time.perf_counter() - start:.1f} s")
        print(format_table(out["rows"]))
        print(f"results: {write_results(NAME, out['results'], quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
