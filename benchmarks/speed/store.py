"""The run store at 500 and 5 000 runs: how long a rerun of the Runs, Compare and λ path pages takes.

A store is built from a few real runs trained here on small data sets (CART and TAO trees on iris,
wine and diabetes, and a TAO λ path on iris), whose folders are then copied under new ids, names,
dates and, for the λ paths, new sweep ids, until the store holds 500 runs, then 5 000 (about a fifth
of them are points of λ paths). For each size a child process, pinned to one core with a thread
budget of one, opens the app with ``streamlit.testing.v1.AppTest`` over ``app.py`` (as the app tests
do), switches to each page once (the first run, which fills the caches) and times ``REPEATS`` more
reruns of it; a row gives their median wall time (``rerun_s``, the one the targets are for), the
fastest, and the median CPU time of the process (``rerun_cpu_s``: on a machine shared with other
work the wall time grows, the CPU time hardly). Targets at 5 000 runs: a rerun of Runs or Compare
within 0.5 s, of the λ path within 1 s.

Nothing here imports the app: the pages run in the child process, whose script is :data:`DRIVER`
(the same separation as ``cold_start``, which starts ``streamlit run``).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from benchmarks.common import measured_on
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.experiments.training import train_run
from treeviz.services.store.files import RUN_JSON
from treeviz.services.store.record import new_run_id
from treeviz.services.store.runs import CONFIG_JSON, HISTORY_JSON, WEIGHTS, RunStore

NAME = "store"
ROOT = Path(__file__).resolve().parents[2]
SIZES, QUICK_SIZES = (500, 5000), (100, 500)
REPEATS, QUICK_REPEATS = 7, 3
#: The pages timed (keys of the app's page table) and the seconds a rerun may take at 5 000 runs.
TARGETS_S = {"runs": 0.5, "compare": 0.5, "lambda_path": 1.0}
#: Share of the copied runs that are points of a λ path.
SWEEP_SHARE = 0.2

#: The child process: argv = core, app.py, comma-separated page keys, reruns per page. Prints one
#: JSON list: per page the first run's seconds, every rerun's wall and CPU seconds (the CPU time of the
#: process, which other work on the machine does not lengthen), what went wrong (if anything),
#: the rows of each table shown and the number of charts (so a row shows the page did its work).
DRIVER = r"""
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
from models.ground import threads
threads.apply_budget(1)
from streamlit.testing.v1 import AppTest
from treeviz.ui.pages import PAGES

app, pages, repeats = sys.argv[2], sys.argv[3].split(","), int(sys.argv[4])
paths = {p.key: p.path for p in PAGES}
at = AppTest.from_file(app, default_timeout=600).run()
out = []
for page in pages:
    start = time.perf_counter()
    at.switch_page(paths[page]).run()
    first = time.perf_counter() - start
    reruns, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        at.run()
        reruns.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    problems = [str(e.value)[:200] for e in [*at.exception, *at.error]]
    tables = [len(frame.value) for frame in at.dataframe]
    out.append({"page": page, "first_s": first, "rerun_s": reruns, "cpu_s": cpu, "problems": problems, "tables": tables,
                "charts": len(at.get("plotly_chart"))})
print(json.dumps(out))
"""


def templates(store: RunStore) -> tuple[list[Path], list[list[Path]]]:
    """Real runs trained into ``store``: single runs' folders, and the folders of one λ path."""
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    wine = prepare(load_dataset("wine"), PrepConfig(seed=0))
    diabetes = prepare(load_dataset("diabetes"), PrepConfig(seed=0))
    singles = [train_run("cart", "classification", {"max_depth": d}, iris, store=store) for d in (1, 2, 3, 4)]
    singles.append(train_run("tao", "classification", {"depth": 2, "max_iter": 3}, iris, store=store))
    singles += [train_run("cart", "classification", {"max_depth": d}, wine, store=store) for d in (2, 3)]
    singles.append(train_run("cart", "regression", {"max_depth": 3}, diabetes, store=store))
    path = run_sweep("tao", "classification", {"depth": 2, "max_iter": 3}, iris, [0.001, 0.01, 0.1, 1.0, 10.0],
                     store=store)
    return ([store.runs_dir / r.run_id for r in singles],
            [[store.runs_dir / p.record.run_id for p in path]])


def copy_run(source: Path, runs_dir: Path, when: datetime, name: str, sweep_id: str | None = None,
             label: str | None = None) -> None:
    """A copy of the run folder ``source`` under a new id made at ``when``, named ``name`` (and,
    for a λ path's point, tagged with the sweep id and label given)."""
    record = json.loads((source / RUN_JSON).read_text())
    run_id = new_run_id(when)
    record.update(run_id=run_id, name=name, created=when.isoformat(timespec="milliseconds"))
    if sweep_id is not None:
        record["sweep"] = {**record["sweep"], "id": sweep_id, "label": label}
    folder = runs_dir / run_id
    folder.mkdir()
    for file in (HISTORY_JSON, CONFIG_JSON, WEIGHTS):
        shutil.copyfile(source / file, folder / file)
    (folder / RUN_JSON).write_text(json.dumps(record))


def grow(store: RunStore, singles: list[Path], paths: list[list[Path]], count: int, start: datetime) -> None:
    """Copy runs into ``store`` until it holds ``count`` runs: λ paths for about :data:`SWEEP_SHARE`
    of them, single runs for the rest, each dated a minute before the last."""
    have = sum(1 for p in store.runs_dir.iterdir() if not p.name.startswith("."))
    when, index = start - timedelta(minutes=have), have
    while have < count:
        index += 1
        when -= timedelta(minutes=1)
        points = paths[index % len(paths)]
        if index % round(len(points) / SWEEP_SHARE) == 0 and have + len(points) <= count:
            sweep_id = f"{when:%Y%m%d-%H%M%S}-{index:06x}"
            label = f"TAO on iris, path {index}"
            for point in points:
                value = json.loads((point / RUN_JSON).read_text())["sweep"]["value"]
                copy_run(point, store.runs_dir, when, f"{label} · λ={value:g}", sweep_id, label)
            have += len(points)
        else:
            source = singles[index % len(singles)]
            base = json.loads((source / RUN_JSON).read_text())["name"]
            copy_run(source, store.runs_dir, when, f"{base} (copy {index})")
            have += 1


def time_pages(home: Path, core: int, repeats: int) -> list[dict[str, Any]]:
    """The driver's timings of every page in :data:`TARGETS_S` on the store at ``home``."""
    env = {**os.environ, "TREEVIZ_HOME": str(home), "TREEVIZ_THREADS": "1", "TREEVIZ_JOB_PROCESSES": "0",
           "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", DRIVER, str(core), str(ROOT / "app.py"), ",".join(TARGETS_S),
                           str(repeats)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"the page driver failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    sizes, repeats = (QUICK_SIZES, QUICK_REPEATS) if quick else (SIZES, REPEATS)
    core = sorted(os.sched_getaffinity(0))[-1]
    rows = []
    with tempfile.TemporaryDirectory(prefix="treeviz-store-bench-") as tmp:
        store = RunStore(Path(tmp) / "home")
        singles, paths = templates(store)
        start = datetime.now(UTC)
        for count in sizes:
            grow(store, singles, paths, count, start)
            for timing in time_pages(store.root, core, repeats):
                page, reruns = timing["page"], timing["rerun_s"]
                median = statistics.median(reruns)
                target = TARGETS_S[page] if count >= max(SIZES) else None
                rows.append({"runs": count, "page": page, "rerun_s": round(median, 3),
                             "rerun_min_s": round(min(reruns), 3),
                             "rerun_cpu_s": round(statistics.median(timing["cpu_s"]), 3),
                             "first_s": round(timing["first_s"], 3),
                             "target_s": target if target is not None else "",
                             "meets": "" if target is None else ("yes" if median <= target else "no"),
                             "tables": "/".join(map(str, timing["tables"])), "charts": timing["charts"],
                             "problems": "; ".join(timing["problems"])})
    return {"rows": rows, "results": {"rows": rows, "repeats": repeats, "core": core,
                                      "measured_on": measured_on(), "sweep_share": SWEEP_SHARE,
                                      "targets_s_at_5000": TARGETS_S}}
