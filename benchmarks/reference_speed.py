"""Side by side with the authors' public code: CPU seconds per training epoch, both sides run here.

Five settings, each timed on the authors' code and on treeviz, on the same rows, one CPU thread
each, the two sides interleaved round by round (the reference first in odd rounds, treeviz first in
even rounds; round 1 of every setting, then round 2, ...):

========================  ===================================  ====================================
row                       reference (public, MIT)              setting
========================  ===================================  ====================================
``dgt_abalone``           microsoft/DGT f5e91b2                abalone, h 6, L 3, batch 128, splits
``dgt_big``               microsoft/DGT f5e91b2                20 000 x 50 synthetic, h 8, L 3, batch 512
``skinny_toy``            mazumder-lab/SkinnyTrees b2c48f9     the authors' toy: breast_cancer, m 20, d 4, batch 16
``skinny_big``            mazumder-lab/SkinnyTrees b2c48f9     20 000 x 100 synthetic, m 50, d 5, batch 256
``latent``                vzantedeschi/LatentTrees 82aa4bf     breast_cancer, depth 4, batch 64, λ 1
========================  ===================================  ====================================

The figure is process CPU time per epoch (wall time swings with the load of a shared machine):
per run the median over epochs 2 and after (epoch 1 carries warm-up, tracing and compilation), then
the median over rounds; ``ratio`` = reference_s / ours_s (above 1: treeviz is faster). The quality
of both sides (test RMSE, AUC or accuracy) is the mean ± standard deviation over rounds.

The authors' code never enters the project and the app never needs it. Set it up once in a
scratch folder, ``REF_HOME`` (default ``/work/scratch/ref``)::

    python -m benchmarks.external.prepare            # clones from GitHub; --from-mirror DIR: local git repositories

Then, from the repository root:

* ``python -m benchmarks.reference_speed --run`` runs every setting's full protocol (17 minutes on
  the 2-core machine at a load of 1-6, longer when it is busier) and writes
  ``benchmarks/results/reference_speed.json``. ``--epochs
  [KEY=]N`` and ``--rounds [KEY=]N`` scale it down (those rows say ``protocol: "reduced"`` and
  what was cut in ``protocol_note``; the defaults are ``"full"``), ``--only KEY ...`` picks
  settings, ``--dry-run`` prints the command lines instead of running them, ``--snapshot``
  measures treeviz's committed HEAD (a ``git archive`` in ``$REF_HOME``) instead of the working
  tree.
* ``python -m benchmarks.reference_speed --run-id ID`` tabulates a run made before (say, one
  whose table was not written); without an id it lists the runs it finds and exits with status 1.

A run has an id and its own folder, ``$REF_HOME/results/<run id>/``, holding the drivers' result
files and its record (:mod:`benchmarks.external.runs`); its table is built from that folder alone
(:mod:`benchmarks.external.table`). The results file holds the rows of that one run, each stamped
with the run's ``run_id``, ``commit`` (the treeviz commit measured, ``+dirty`` for a working tree
with changes), ``machine``, ``date`` and ``command``, and the table printed at the end is read back
from the file written. A setting with no round finished on both sides is a ``"skipped"`` row that
says why. The drivers (``benchmarks/external/drivers/``) run each side's training with the
reference's setting and write per-epoch wall and CPU times and the test quality.

This module is not one of ``python -m benchmarks.report.run``'s benchmarks (it needs ``REF_HOME``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common import git_commit, write_results
from benchmarks.external import runs
from benchmarks.external.prepare import DEFAULT_REF_HOME
from benchmarks.external.settings import BY_KEY, SETTINGS, plan
from benchmarks.external.table import collect, table

REPO = Path(__file__).resolve().parents[1]
OUTPUT_NAME = "reference_speed"


def ref_home(explicit: Path | None = None) -> Path:
    return (explicit or Path(os.environ.get("REF_HOME", DEFAULT_REF_HOME))).resolve()


def per_key(values: Sequence[str] | None, default: dict[str, int]) -> dict[str, int]:
    """``--epochs 3`` (every setting) and ``--epochs dgt_big=2`` (one) over ``default``."""
    out = dict(default)
    for v in values or ():
        key, _, n = v.rpartition("=")
        if key and key not in BY_KEY:
            raise SystemExit(f"Unknown setting {key!r}; use one of {', '.join(BY_KEY)}.")
        if not n.isdigit():
            raise SystemExit(f"{v!r}: give a whole number, or KEY=N.")
        out.update({key: int(n)} if key else dict.fromkeys(out, int(n)))
    return out


def tabulate(run_dir: Path) -> int:
    """Write the table of the run in ``run_dir`` (``benchmarks/results/reference_speed.json``, or in
    ``TREEVIZ_BENCH_RESULTS``), then print it as read back from the file written."""
    path = write_results(OUTPUT_NAME, collect(run_dir), quick=False)
    rows = json.loads(path.read_text(encoding="utf-8"))["results"]["rows"]
    print(table(rows))
    print(f"\nrun {run_dir.name}: written to {path}")
    return 0


def run(a: argparse.Namespace, home: Path) -> int:
    keys = a.only or list(BY_KEY)
    epochs = per_key(a.epochs, {s.key: s.epochs for s in SETTINGS})
    rounds = per_key(a.rounds, {s.key: s.rounds for s in SETTINGS})
    if any(epochs[k] < 2 or rounds[k] < 1 for k in keys):
        raise SystemExit("Give at least 2 epochs (the first is left out of the timing) and 1 round.")
    run_id = runs.new_run_id()
    run_dir = runs.results_root(home) / run_id
    if a.dry_run:
        for c in plan(keys, epochs, rounds, run_dir, home, REPO, sys.executable):
            env = " ".join(f"{k}={shlex.quote(v)}" for k, v in c.env)
            print(f"(cd {shlex.quote(c.cwd)} && {env} {' '.join(shlex.quote(x) for x in c.argv)})")
        return 0
    missing = [p for p in [home / "data", *(home / f"venv_{BY_KEY[k].reference}" for k in keys)] if not p.is_dir()]
    if missing:
        print(f"REF_HOME={home} is not set up ({missing[0]} is absent): run `python -m benchmarks.external.prepare` "
              "first.", file=sys.stderr)
        return 1
    source, commit = runs.snapshot(home, REPO) if a.snapshot else (REPO, git_commit())
    broken = runs.preflight(keys, source, sys.executable)
    if broken:
        print(f"treeviz at {commit} ({source}) cannot run its side: {broken}", file=sys.stderr)
        return 1
    run_dir.mkdir(parents=True)
    record = runs.new_record(run_id, keys, epochs, rounds, commit=commit, source=source)
    print(f"run {run_id}: treeviz {commit} from {source}", flush=True)
    failures = runs.execute(plan(keys, epochs, rounds, run_dir, home, source, sys.executable), run_dir, record, home)
    status = tabulate(run_dir)
    return 1 if failures else status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.reference_speed",
                                 description="Side by side with the authors' code: run both sides, tabulate.")
    ap.add_argument("--run", action="store_true", help="run the interleaved side by side and write its table")
    ap.add_argument("--run-id", help="write the table of this earlier run instead")
    ap.add_argument("--ref-home", type=Path, help=f"default $REF_HOME, else {DEFAULT_REF_HOME}")
    ap.add_argument("--only", nargs="+", choices=list(BY_KEY), help="with --run: these settings only")
    ap.add_argument("--epochs", action="append", metavar="[KEY=]N", help="with --run: epochs per run")
    ap.add_argument("--rounds", action="append", metavar="[KEY=]N", help="with --run: rounds")
    ap.add_argument("--dry-run", action="store_true", help="with --run: print the commands only")
    ap.add_argument("--snapshot", action="store_true", help="with --run: time treeviz's committed HEAD")
    a = ap.parse_args(argv)
    home = ref_home(a.ref_home)
    if a.run:
        return run(a, home)
    if a.run_id:
        run_dir = runs.results_root(home) / a.run_id
        if not runs.RUN_ID.match(a.run_id) or not (run_dir / runs.RECORD).is_file():
            print(f"No run {a.run_id!r} in {runs.results_root(home)}.", file=sys.stderr)
            return 1
        return tabulate(run_dir)
    found = runs.run_ids(home)
    print("Give --run to measure, or --run-id ID to tabulate an earlier run"
          + (f"; runs in {runs.results_root(home)}: {', '.join(found)}." if found else
             f"; {runs.results_root(home)} holds no run."), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
