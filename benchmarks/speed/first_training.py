"""The first training after a fresh install against the second, as the app runs them: the wait
that numba's compilation, the imports and a forest's worker pool add, with and without the
README's warm-up (``python -m treeviz warmup``).

A fresh clone has an empty numba cache. Each scenario here starts from one (``NUMBA_CACHE_DIR``
pointed at an empty temporary folder, so the repository's own cache is not touched), and each
family runs in a fresh Python process that stands for a freshly started app:

* ``warmup``: the README's set-up step first (``python -m treeviz warmup``, its time and the compile
  time it reports), then per family one process that trains the family's defaults twice;
* ``no_warmup``: per family an empty cache of its own and one process that trains twice, so each
  row shows the wait a first training of that family has without the set-up step (its job
  process's warm-up, which compiles into the empty cache, is the ``ready_s`` wait; it warms that
  family only, where the app would warm them all).

The process does what the app does (:func:`treeviz.ui.state.warm_jobs`): a job manager with its
jobs in child processes, primed with the in-worker warm-up
(:func:`treeviz.services.experiments.warmup.warm_in_worker`); it waits until that process is ready
(``ready_s``: the seconds after the app's start before which a first training would still wait for
it; a user choosing data and settings on the pages meanwhile), then submits the Train page's job
(:func:`treeviz.services.experiments.training.job_fn`) twice, one after the other. A row gives the
stored fit time (``RunRecord.duration_s``, which leaves compilation out) and the job's wall time
from its submission to "finished" of the first and the second training, their ratios, and the
compile seconds of the warm-up. The acceptance: the first training's stored fit time within 1.5× of
the second's and its wall time at most 2× the second's, with the warm-up.

``python -m benchmarks.speed.first_training [--quick] [--data KEY] [--family KEY ...]``;
``--quick`` runs DGT-Bandit on iris only (and warms up that family only); ``--scenario warmup``
leaves the cold-cache rows out.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import REPO_ROOT, format_table, write_results
from models.registry import get_family
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import job_fn
from treeviz.services.experiments.warmup import warm_in_worker
from treeviz.services.jobs.manager import COMPILING, JobManager
from treeviz.services.store.runs import RunStore

NAME = "first_training"
#: The families that compile numba kernels or train with torch.
FAMILIES = ("latent", "tao", "tao_forest", "laptao", "dgt", "dgt_forest", "dgt_bandit", "skinny", "tree_embedding")
QUICK_FAMILIES = ("dgt_bandit",)
DATA, QUICK_DATA = "wine", "iris"
#: The acceptance bounds: first over second training, stored fit time and wall time.
FIT_RATIO_MAX, WALL_RATIO_MAX = 1.5, 2.0
#: Seconds one subprocess may take before the benchmark gives up on it.
TIMEOUT_S = 1800
SCENARIOS = ("warmup", "no_warmup")
#: Seconds between two looks at a running job's phase.
POLL_S = 0.02


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = str(cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _subprocess(args: list[str], cache: Path) -> tuple[str, float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=REPO_ROOT, env=_env(cache), capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout, seconds


def warm_up(cache: Path, families: tuple[str, ...] = ()) -> dict[str, Any]:
    """The README's set-up step into ``cache`` (for ``families`` only when given): its wall time and
    the compile time it reports."""
    out, seconds = _subprocess(["-m", "treeviz", "warmup", "--json", *families], cache)
    fits = json.loads(out)
    return {"warmup_wall_s": round(seconds, 2), "warmup_compile_s": round(sum(f["compile_s"] for f in fits), 2),
            "warmup_kernels": sum(f["kernels"] for f in fits),
            "warmup_compile_by_family": {f["family"]: round(sum(g["compile_s"] for g in fits
                                                                if g["family"] == f["family"]), 2) for f in fits}}


def train_twice(family: str, data: str, cache: Path, warm_families: tuple[str, ...] = ()) -> dict[str, Any]:
    """One fresh process that trains ``family``'s defaults twice on ``data`` (:func:`_child`), its job
    process warmed for ``warm_families`` (every family when empty, as in the app)."""
    warm = ["--warm", ",".join(warm_families)] if warm_families else []
    out, _ = _subprocess(["-m", "benchmarks.speed.first_training", "--child", family, "--data", data, *warm], cache)
    return json.loads(out.strip().splitlines()[-1])


def _child(family_key: str, data: str, warm_families: tuple[str, ...] = ()) -> dict[str, Any]:
    """In the fresh process, as in a freshly started app: prime the job manager and wait until its
    process is warm, then train and store the family's defaults twice as Train page jobs; the timings."""
    start = time.perf_counter()
    manager = JobManager(processes=True, idle_s=60.0)
    manager.prime(functools.partial(warm_in_worker, families=warm_families) if warm_families else warm_in_worker)
    family = get_family(family_key)
    dataset = load_dataset(data)
    task = dataset.task if dataset.task in family.tasks else family.tasks[0]
    prepared = prepare(dataset, PrepConfig(seed=0))
    manager.wait_primed()
    out: dict[str, Any] = {"family": family_key, "task": task, "ready_s": time.perf_counter() - start}
    try:
        with tempfile.TemporaryDirectory() as home:
            store = RunStore(Path(home))
            for i, which in enumerate(("first", "second")):
                job = manager.submit(job_fn(family_key, task, {}, prepared, store=store, name=f"{which} #{i}"),
                                     label=which)
                compiled = False
                while not job.wait(POLL_S):
                    compiled = compiled or job.snapshot().phase == COMPILING
                out[f"{which}_compiled"] = compiled
                if job.status != "finished":
                    raise RuntimeError(f"{family_key}: the {which} training {job.status}: {job.message}")
                out.update({f"{which}_fit_s": job.result.duration_s, f"{which}_wall_s": job.finished - job.submitted})
    finally:
        manager.shutdown()
    return out


def _row(scenario: str, data: str, timing: dict[str, Any]) -> dict[str, Any]:
    fit_ratio = timing["first_fit_s"] / max(timing["second_fit_s"], 1e-9)
    wall_ratio = timing["first_wall_s"] / max(timing["second_wall_s"], 1e-9)
    return {"name": f"{scenario}/{timing['family']}", "scenario": scenario, "family": timing["family"],
            "data": data, "task": timing["task"], "ready_s": round(timing["ready_s"], 2),
            "first_fit_s": round(timing["first_fit_s"], 3), "second_fit_s": round(timing["second_fit_s"], 3),
            "fit_ratio": round(fit_ratio, 2),
            "first_wall_s": round(timing["first_wall_s"], 3), "second_wall_s": round(timing["second_wall_s"], 3),
            "wall_ratio": round(wall_ratio, 2), "first_compiled": timing["first_compiled"],
            "meets": bool(fit_ratio <= FIT_RATIO_MAX and wall_ratio <= WALL_RATIO_MAX)}


def run(quick: bool = False, *, data: str | None = None, families: tuple[str, ...] | None = None,
        scenarios: tuple[str, ...] = SCENARIOS) -> dict[str, Any]:
    data = data or (QUICK_DATA if quick else DATA)
    families = families or (QUICK_FAMILIES if quick else FAMILIES)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as root:
        cache = Path(root) / "warm"
        setup = warm_up(cache, families if quick else ()) if "warmup" in scenarios else {}
        for family in families if "warmup" in scenarios else ():
            rows.append(_row("warmup", data, train_twice(family, data, cache, families if quick else ())))
        for family in families if "no_warmup" in scenarios else ():
            # the app would compile every family's kernels here before the first job; this one's suffice
            rows.append(_row("no_warmup", data, train_twice(family, data, Path(root) / f"cold-{family}", (family,))))
    warm_rows = [r for r in rows if r["scenario"] == "warmup"]
    results = {"rows": rows, "setup": setup, "data": data, "fit_ratio_max": FIT_RATIO_MAX,
               "wall_ratio_max": WALL_RATIO_MAX, "meets_all": all(r["meets"] for r in warm_rows),
               "load_average": os.getloadavg()[0]}
    return {"rows": rows, "results": results}


COLUMNS = ("scenario", "family", "ready_s", "first_fit_s", "second_fit_s", "fit_ratio", "first_wall_s",
           "second_wall_s", "wall_ratio", "first_compiled", "meets")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="DGT-Bandit on iris only")
    parser.add_argument("--data", help=f"a built-in data set (default {DATA}; quick: {QUICK_DATA})")
    parser.add_argument("--family", action="append", help="only this family (repeat for several)")
    parser.add_argument("--child", metavar="FAMILY", help=argparse.SUPPRESS)
    parser.add_argument("--warm", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", choices=SCENARIOS, help="only this scenario (default: both)")
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.data or DATA, tuple(filter(None, (args.warm or "").split(","))))))
        return
    out = run(args.quick, data=args.data, families=tuple(args.family) if args.family else None,
              scenarios=(args.scenario,) if args.scenario else SCENARIOS)
    print(format_table(out["rows"], COLUMNS))
    print(json.dumps(out["results"]["setup"]))
    print(f"wrote {write_results(NAME, out['results'], quick=args.quick)}")


if __name__ == "__main__":
    main()
