"""How good the training progress bar's "time left" is: every family's defaults, run as the Train page runs them.

For every registered family and three tables of its task, a job is submitted to the app's job
manager (:class:`treeviz.services.jobs.manager.JobManager` with worker processes, the app's setting;
the job function is :func:`treeviz.services.experiments.training.job_fn`, which the Train page's
"Train" button submits), with the family's default parameters for that task (the Train page's
"defaults" preset). While the job runs its snapshot is read every :data:`SAMPLE_S` seconds: the
progress fraction and ``eta_s``, the estimated seconds left. Once the job has finished, the true time
left at each sample is its finish time minus the sample's time.

A sample's ratio is ``max(eta / true, true / eta)``, each side at least :data:`FLOOR_S` (the bar
shows whole seconds, "about 1 s left" at the least, so a guess of 0.3 s against 0.8 s is not wrong).
A row gives the worst ratio over the samples from a quarter of the way on: the samples whose
progress is at least 0.25 *or* whose time is at least a quarter of the run's wall time (the union,
so a bar that stalls below 25 % cannot hide its guesses), with the number of such samples and of
those without an estimate ("estimating the time left"). The target is a worst ratio of at most
:data:`TARGET` for every family and table.

The job manager is primed as the app primes it (:meth:`JobManager.prime` with
:func:`treeviz.services.experiments.warmup.warm_in_worker`), and the benchmark waits until its
process is warm, as a user choosing data and settings would: every job runs in that process, as in
the app. Kernels not yet in numba's cache are compiled by that warm-up; the time left is measured
as it is, anything left to compile included.

``python -m benchmarks.speed.time_left [--family KEY ...] [--quick]`` runs it (``--quick``: one
table a family) and prints the table; ``python -m benchmarks.report.run time_left`` runs it through
the runner. The results go to ``benchmarks/results/time_left.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.common import format_table, write_results
from models.registry import families, get_family
from treeviz.services.data import Dataset, PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import job_fn
from treeviz.services.experiments.warmup import warm_in_worker
from treeviz.services.jobs.manager import JobManager
from treeviz.services.store.runs import RunStore

NAME = "time_left"
#: Seconds between two reads of the job's snapshot.
SAMPLE_S = 0.1
#: Both the estimate and the true time left count as at least this many seconds in a ratio.
FLOOR_S = 1.0
#: From this fraction of the way on (progress or wall time) the samples count.
FROM = 0.25
#: The acceptance bound on the worst ratio.
TARGET = 2.0
#: The tables of each task (the embedding also runs on classification tables).
TABLES = {"classification": ("breast_cancer", "digits", "wine"),
          "regression": ("diabetes", "cars"),
          "clustering": ("blobs",),
          "embedding": ("digits_500", "digits_1000", "breast_cancer")}
#: The tables a family runs on: three, from its first task and then its others.
PER_FAMILY = 3


@dataclass(frozen=True)
class Case:
    family: str
    task: str
    table: str


def _table(key: str) -> Dataset:
    """A built-in data set, or its first rows: ``digits_500`` is digits' first 500 rows."""
    base, _, size = key.rpartition("_")
    if not size.isdigit():
        return load_dataset(key)
    dataset = load_dataset(base)
    n = int(size)
    return Dataset(name=key, X=dataset.X[:n], y=None if dataset.y is None else dataset.y[:n],
                   feature_names=dataset.feature_names, task=dataset.task, target_name=dataset.target_name,
                   class_names=dataset.class_names, image_shape=dataset.image_shape,
                   description=dataset.description, source=dataset.source)


def cases(family_keys: list[str] | None = None, quick: bool = False) -> list[Case]:
    """Every (family, task, table) the benchmark runs."""
    out = []
    for key in family_keys or list(families()):
        family = get_family(key)
        tables: list[tuple[str, str]] = []
        for task in family.tasks:
            tables += [(task, t) for t in TABLES[task]]
        if len(family.tasks) > 1:  # one table of each further task, the rest from the first
            first = [t for t in tables if t[0] == family.tasks[0]][: PER_FAMILY - len(family.tasks) + 1]
            rest = [next(t for t in tables if t[0] == task) for task in family.tasks[1:]]
            tables = first + rest
        out += [Case(key, task, table) for task, table in tables[: 1 if quick else PER_FAMILY]]
    return out


def ratio(eta: float, true: float) -> float:
    """``max(eta / true, true / eta)``, each at least :data:`FLOOR_S`."""
    a, b = max(eta, FLOOR_S), max(true, FLOOR_S)
    return max(a / b, b / a)


def measure(manager: JobManager, case: Case, store: RunStore, keep_states: bool = False) -> dict[str, Any]:
    """Train one case as the Train page does and score its time-left estimates."""
    family = get_family(case.family)
    params = family.validate_params(family.defaults(case.task, None), case.task)
    prepared = prepare(_table(case.table), PrepConfig(seed=0))
    job = manager.submit(job_fn(case.family, case.task, params, prepared, store=store),
                         label=f"{family.label} on {case.table}")
    samples: list[tuple[float, float, float | None]] = []
    states: list[dict[str, Any]] = []  # what the estimate read at each sample (--states)
    while not job.done:
        snap = job.snapshot()
        if snap.status == "running":
            samples.append((time.time(), snap.progress, snap.eta_s))
            if keep_states:
                with job._lock:
                    states.append({"t": samples[-1][0], "marks": list(job._marks), "total": job._total,
                                   "stage": job._stage_index, "stages": job._n_stages,
                                   "stage_seconds": list(job._stage_seconds)})
        time.sleep(SAMPLE_S)
    snap = job.snapshot()
    if snap.status != "finished":
        raise RuntimeError(f"{case}: the job ended {snap.status}: {snap.message}")
    start, end = snap.started, snap.finished
    wall = end - start
    late = [(t, p, eta) for t, p, eta in samples if p >= FROM or t - start >= FROM * wall]
    ratios = [ratio(eta, end - t) for t, _, eta in late if eta is not None]
    worst = max(ratios) if ratios else None
    at = None
    if ratios:
        t, p, eta = [s for s in late if s[2] is not None][int(np.argmax(ratios))]
        at = {"elapsed_s": round(t - start, 2), "progress": round(p, 3), "eta_s": round(eta, 2),
              "true_left_s": round(end - t, 2)}
    return {"name": f"{case.family} · {case.table}", "family": case.family, "task": case.task,
            "table": case.table, "rows": prepared.X_train.shape[0], "wall_s": round(wall, 2),
            "samples": len(samples), "samples_from_quarter": len(late),
            "no_estimate": sum(1 for s in late if s[2] is None), "worst_ratio": worst, "worst_at": at,
            "ok": worst is None or worst <= TARGET,
            "trace": [(round(t - start, 2), round(p, 4), None if eta is None else round(eta, 2))
                      for t, p, eta in samples],
            **({"states": states, "started": start, "finished": end} if keep_states else {})}


def run(quick: bool = False, family_keys: list[str] | None = None, trace: bool = False,
        states_to: str | None = None) -> dict[str, Any]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="treeviz-time-left-") as folder:
        manager = JobManager(max_workers=1, processes=True, idle_s=600.0)
        manager.prime(warm_in_worker)
        store = RunStore(folder)
        try:
            manager.wait_primed()
            for case in cases(family_keys, quick):
                row = measure(manager, case, store, keep_states=states_to is not None)
                if states_to is not None:  # appended as each case ends (one JSON line a case)
                    with open(states_to, "a", encoding="utf-8") as out:
                        out.write(json.dumps({"name": row["name"], **{k: row.pop(k) for k in
                                                                      ("states", "started", "finished")}}) + "\n")
                print(f"{row['name']}: {row['wall_s']} s, worst ratio {row['worst_ratio']} at {row['worst_at']}",
                      flush=True)
                if trace:
                    print("  trace:", row["trace"][::max(1, len(row["trace"]) // 40)], flush=True)
                rows.append(row)
        finally:
            manager.shutdown()
    for row in rows:
        row["protocol"] = "reduced" if quick or family_keys else "full"
        row["protocol_note"] = ("quick: one table a family" if quick else "") + \
            (f"; families {', '.join(family_keys)} only" if family_keys else "")
    table = [{"family": r["family"], "table": r["table"], "wall s": r["wall_s"],
              "samples ≥ ¼": r["samples_from_quarter"], "no estimate": r["no_estimate"],
              "worst ratio": "—" if r["worst_ratio"] is None else f"{r['worst_ratio']:.2f}",
              "ok": "yes" if r["ok"] else "NO"} for r in rows]
    return {"rows": table, "results": {"rows": rows, "target": TARGET, "floor_s": FLOOR_S, "from": FROM,
                                       "all_ok": all(r["ok"] for r in rows)}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", action="append", help="only these families (repeat the flag)")
    parser.add_argument("--quick", action="store_true", help="one table a family")
    parser.add_argument("--trace", action="store_true", help="print each run's (seconds, progress, eta) samples")
    parser.add_argument("--states", metavar="FILE", help="append what each estimate read (JSON lines), to study "
                        "other estimators offline")
    args = parser.parse_args(argv)
    out = run(args.quick, args.family, args.trace, args.states)
    print(format_table(out["rows"]))
    path = write_results(NAME, out["results"], quick=bool(args.quick or args.family))
    print(f"written to {path}")
    return 0 if out["results"]["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
