"""Every torch family on a GPU against the CPU: at 100 000 rows, and where the GPU starts to win.

``python -m benchmarks.report.run --device cuda device_scale`` (what ``bash benchmarks/gpu_check.sh`` runs
first) times, in one process, each family's training through its estimator, as a user gets it with
``device="cuda"`` against ``device="cpu"`` (see :mod:`benchmarks.device_timing` for the protocol;
the CPU uses torch's default threads, every core of the machine):

* **scale**: latent trees, Skinny Trees, DGT, the DGT forest and TAO's torch solver on 100 000 rows
  of ``make_classification`` (20 features, 3 classes), each family's app defaults cut to one epoch
  (one TAO iteration);
* **crossover**: latent trees, DGT and Skinny Trees on 20 000 rows with their step grown (batch
  size, depth), so that each row's ``step_size`` (:func:`models.devices.step_size`: rows per step ×
  leaves × trees) can be read against its ratio.

Every row carries the card that gave it (``device_name``). :func:`crossovers` reads the rows: per
family, the smallest measured step from which the GPU won at every larger measured step, which is
what ``models/devices.py``'s ``CROSSOVERS`` should hold (``python -m benchmarks.speed.device_scale``
prints them from the stored results).

With ``device="cpu"`` (``python -m benchmarks.report.run device_scale``, or ``GPU_CHECK_DRY_RUN=1 bash
benchmarks/gpu_check.sh``) it is a smoke run on tiny data: the same code, the CPU timed against
itself. ``budget_s`` bounds the run (:data:`BUDGET_S` by default; ``python -m
benchmarks.speed.device_scale --device cuda --budget-s N`` sets it, as ``gpu_check.sh`` does): a
workload that would start past it becomes a row marked skipped, so a GPU loan's time limit never
loses what was measured. ``python -m benchmarks.speed.device_scale --crossovers`` prints the
crossovers stored.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from benchmarks import device_timing
from benchmarks.common import format_table, write_results
from models.devices import step_size
from models.latent.estimators import AUTO_DEPTH
from models.registry import get_family

NAME = "device_scale"
#: Seconds a run may take before it stops starting workloads (``budget_s``).
BUDGET_S = 200.0
SCALE_N, LADDER_N = 100_000, 20_000
QUICK_SCALE_N, QUICK_LADDER_N = 400, 300


@functools.cache
def data_table(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic table of ``n`` rows (the scale benchmark's: 20 features, 3 classes), standardised."""
    from sklearn.datasets import make_classification  # deferred: scikit-learn is heavy and only this function needs it

    X, y = make_classification(n_samples=int(n), n_features=20, n_informative=10, n_redundant=5, n_classes=3,
                               random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


def _step(family: str, params: dict[str, Any], n: int) -> float | None:
    """The step size :mod:`models.devices` gives this fit (the training rows the estimator sees)."""

    rows = n  # what a fit passes (before it holds out its validation rows)
    depth = params.get("depth")
    if depth is None and family == "latent":
        depth = AUTO_DEPTH
    if family == "tao":
        return step_size(rows=n)
    return step_size(rows=rows, batch=params.get("batch_size"), depth=depth,
                     trees=params.get("n_trees", 1) if family == "skinny" else 1)


def fit_workload(family: str, params: dict[str, Any], n: int, kind: str, quick: bool) -> device_timing.Workload:
    """One fit of ``family`` with its defaults plus ``params`` on the ``n``-row table, as a workload."""

    def build(device: str) -> Callable[[], Any]:
        X, y = data_table(n)
        fam = get_family(family)

        def call() -> None:
            fam.make("classification", {**params, "device": device, "random_state": 0}).fit(X, y)

        return call

    shown = ", ".join(f"{k} {v}" for k, v in params.items() if k not in ("n_jobs",))
    name = f"{family} {kind}, {n} rows{', ' + shown if shown else ''}"
    unit = "fit of 1 iteration" if family == "tao" else "fit of 1 epoch"
    defaults = get_family(family).make("classification", {}).get_params()
    full = {**{k: defaults.get(k) for k in ("batch_size", "depth", "n_trees")}, **params}
    options = {"data": f"make_classification, {n} x 20, 3 classes", "unit": unit, "repeat": 1, "warmup": 1,
               "cpu_warmup": 0, "family": family, "kind": kind, "n": n, "params": params,
               "step_size": _step(family, full, n)}
    if quick:  # a smoke run: every path once, one thread
        options.update(warmup=0, cpu_threads=1)
    return name, build, options


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """The scale rows, then the crossover ladders (the order they run in)."""
    big = QUICK_SCALE_N if quick else SCALE_N
    ladder_n = QUICK_LADDER_N if quick else LADDER_N
    one = {"max_epochs": 1}
    dgt_one = {"max_epochs": 1, "min_steps": 0}
    scale = [("latent", one), ("skinny", one), ("dgt", dgt_one),
             ("dgt_forest", {**dgt_one, "n_trees": 2, "n_jobs": 1} if quick else dgt_one),
             ("tao", {"solver": "torch", "max_iter": 1, **({"depth": 2} if quick else {})})]
    ladders = {
        "latent": [{"depth": 3, "batch_size": 64}, {"depth": 3, "batch_size": 512}, {"depth": 6, "batch_size": 512},
                   {"depth": 6, "batch_size": 4096}, {"depth": 8, "batch_size": 4096}],
        "dgt": [{"batch_size": 32}, {"batch_size": 128}, {"batch_size": 512}, {"batch_size": 2048}],
        "skinny": [{"batch_size": 16}, {"batch_size": 64}, {"batch_size": 256}, {"batch_size": 1024}],
    }
    if quick:  # the same code on tiny data: two rungs of each ladder, shallow trees
        ladders = {f: [{**p, "depth": min(p.get("depth", 3), 3), "batch_size": min(p["batch_size"], 128)}
                       for p in rungs[:2]] for f, rungs in ladders.items()}
    out = [fit_workload(f, p, big, "scale", quick) for f, p in scale]
    for family, rungs in ladders.items():
        base = dgt_one if family == "dgt" else one
        out += [fit_workload(family, {**base, **p}, ladder_n, "crossover", quick) for p in rungs]
    return out


def warm_up(device: str) -> None:
    """One tiny fit of each family on the CPU and on ``device``, untimed: the imports, the first
    compilations and CUDA's context are paid here, not by the first timed row."""

    X, y = data_table(200)
    for family, params in (("latent", {"max_epochs": 1}), ("skinny", {"max_epochs": 1}),
                           ("dgt", {"max_epochs": 1, "min_steps": 0}),
                           ("tao", {"solver": "torch", "max_iter": 1, "depth": 2})):
        for dev in dict.fromkeys(("cpu", device)):
            get_family(family).make("classification", {**params, "device": dev}).fit(X, y)


def within_budget(workloads: Sequence[device_timing.Workload], budget_s: float,
                  start: float | None = None) -> list[device_timing.Workload]:
    """The workloads, each turned into a 'skipped' one when it would start past ``budget_s`` seconds
    (counted from ``start``, a ``time.perf_counter()``; default now)."""
    start = time.perf_counter() if start is None else start

    def guarded(name: str, build: Callable[[str], Callable[[], Any]]) -> Callable[[str], Callable[[], Any]]:
        def checked(device: str) -> Callable[[], Any]:
            if time.perf_counter() - start > budget_s:
                raise TimeoutError(f"skipped: the run's budget of {budget_s:.0f} s was spent")
            return build(device)
        return checked

    return [(name, guarded(name, build), options) for name, build, options in workloads]


def crossovers(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per family: the smallest measured ``step_size`` from which the GPU won (ratio above 1) at every
    larger measured step (``min_size``; None where the largest step measured still lost), with the
    points it rests on and the card that gave them."""
    out: dict[str, dict[str, Any]] = {}
    families = sorted({r.get("family") for r in rows if r.get("family")})
    for family in families:
        points = sorted((float(r["step_size"]), float(r["ratio_cpu_over_device"]), r.get("device_name"))
                        for r in rows if r.get("family") == family and r.get("error") is None
                        and r.get("step_size") is not None and r.get("ratio_cpu_over_device") is not None)
        if not points:
            continue
        min_size = None
        for size, ratio, _ in reversed(points):
            if ratio <= 1.0:
                break
            min_size = size
        out[family] = {"min_size": min_size, "cards": sorted({str(c) for _, _, c in points}),
                       "points": [{"step_size": s, "ratio_cpu_over_device": r} for s, r, _ in points]}
    return out


def run(quick: bool = False, device: str = "cpu", budget_s: float = BUDGET_S) -> dict[str, Any]:
    device = device_timing.resolve_device(device)
    budget = float(budget_s)
    smoke = device == "cpu"
    start = time.perf_counter()

    def workloads(q: bool, dev: str) -> list[device_timing.Workload]:
        warm_up(dev)
        return within_budget(device_workloads(q or smoke, dev), budget, start)

    notes = ("each family's training through its estimator (device='cuda' against device='cpu'), defaults cut "
             "to one epoch; crossover rows grow the step (rows per step x leaves x trees, models.devices)")
    if smoke:
        notes = "smoke run on the CPU (tiny data, the CPU timed against itself): not a measurement. " + notes
    out = device_timing.device_run(NAME, workloads, device, quick=quick, notes=notes)
    section = out["results"][device_timing.SECTION]
    section["crossovers"] = crossovers(section["rows"])
    for r in section["rows"]:  # the device tables, with each row's step size
        r.setdefault("step_size", None)
    shown = [{**t, "step": "" if r.get("step_size") is None else f"{r['step_size']:,.0f}"}
             for t, r in zip(out["rows"], section["rows"])]
    print(crossover_text(section["crossovers"]), flush=True)
    results = out["results"]
    if smoke:  # a smoke run never replaces a GPU's measurements: they stay, the smoke goes beside them
        kept = dict(((device_timing.previous_payload(NAME) or {}).get("results")) or {})
        if str((kept.get(device_timing.SECTION) or {}).get("device", "")).startswith("cuda"):
            results = {**kept, "last_smoke_run": section}
    return {"rows": shown, "results": results}


def crossover_text(found: dict[str, dict[str, Any]]) -> str:
    lines = ["crossovers (smallest step, rows per step x leaves x trees, from which the GPU won at every "
             "larger measured step; for models/devices.py CROSSOVERS):"]
    for family, c in found.items():
        at = "never (the largest step measured still lost)" if c["min_size"] is None else f"{c['min_size']:,.0f}"
        pts = ", ".join(f"{p['step_size']:,.0f}: {p['ratio_cpu_over_device']:.2f}x" for p in c["points"])
        lines.append(f"  {family}: {at}   [{', '.join(c['cards'])}; {pts}]")
    return "\n".join(lines)


def print_stored(as_json: bool = False) -> int:
    """Print the crossovers stored in ``benchmarks/results/device_scale.json``."""
    payload = device_timing.previous_payload(NAME)
    section = ((payload or {}).get("results") or {}).get(device_timing.SECTION)
    if not section:
        print("(no device_scale results stored)")
        return 1
    print(format_table(device_timing.table(section["rows"])))
    print(crossover_text(section.get("crossovers") or crossovers(section["rows"])))
    if as_json:
        print(json.dumps(section.get("crossovers"), indent=1))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu",
                        help="cuda: the GPU against the CPU; cpu: the smoke run (the CPU against itself)")
    parser.add_argument("--quick", action="store_true", help="tiny workloads")
    parser.add_argument("--budget-s", type=float, default=BUDGET_S,
                        help=f"seconds before it stops starting workloads (default {BUDGET_S:g})")
    parser.add_argument("--crossovers", action="store_true", help="print the stored crossovers; run nothing")
    parser.add_argument("--json", action="store_true", help="with --crossovers: also as JSON")
    args = parser.parse_args(argv)
    if args.crossovers:
        return print_stored(args.json)
    out = run(quick=args.quick, device=args.device, budget_s=args.budget_s)
    print(format_table(out["rows"]))
    print(f"results: {write_results(NAME, out['results'], quick=args.quick)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
