"""One side-by-side run: its id, its folder, its record, and running its commands.

Every ``--run`` gets a run id (``20261128T150102Z-3fa9c1``: the UTC start and six random hex
digits) and a folder of its own, ``$REF_HOME/results/<run id>/``, where the drivers write their
result files and the runner its record, ``run.json``: the stamp (the treeviz commit measured, the
machine, the date, the command), the treeviz source, the plan (epochs and rounds of each setting,
and whether that is the full protocol) and every command that failed. The table of a run is built
from that folder alone, so it holds exactly what that run measured; another run's files are never
read (no "newest file" rule).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import stamp
from benchmarks.external.settings import BY_KEY, Command, protocol

RECORD = "run.json"
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$")
#: The thread counts of the native pools the drivers load (drivers/shared.py sets them too).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TREEVIZ_THREADS")
#: A driver still running after this long is stopped (its round counts as failed).
COMMAND_TIMEOUT_S = 3600


def new_run_id(now: float | None = None) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + "-" + secrets.token_hex(3)


def results_root(home: Path) -> Path:
    return home / "results"


def run_ids(home: Path) -> list[str]:
    """The ids of the runs recorded under ``home`` (oldest first: ids start with their UTC start)."""
    root = results_root(home)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if RUN_ID.match(p.name) and (p / RECORD).is_file())


def read_record(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / RECORD).read_text(encoding="utf-8"))


def write_record(run_dir: Path, record: dict[str, Any]) -> None:
    tmp = run_dir / (RECORD + ".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, run_dir / RECORD)


def new_record(run_id: str, keys: Sequence[str], epochs: dict[str, int], rounds: dict[str, int], *, commit: str,
               source: Path) -> dict[str, Any]:
    """The record of a run about to start: this invocation's stamp with the commit measured."""
    plan = {}
    for key in keys:
        label, note = protocol(BY_KEY[key], epochs[key], rounds[key])
        plan[key] = {"epochs": epochs[key], "rounds": rounds[key], "protocol": label, "protocol_note": note}
    return {"run_id": run_id, **stamp(), "commit": commit, "source": str(source), "settings": plan,
            "failures": [], "finished": None}


def snapshot(home: Path, repo: Path) -> tuple[Path, str]:
    """treeviz's committed HEAD as a plain folder in ``home`` (``git archive``), and its commit."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dest = home / f"treeviz_{commit[:12]}"
    if not dest.is_dir():
        partial = home / f"treeviz_{commit[:12]}.partial"
        partial.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(repo), "archive", commit], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(partial)], input=archive.stdout, check=True)
        partial.rename(dest)
    return dest, commit


def runner_env(home: Path) -> dict[str, str]:
    """The drivers' base environment: one thread for every pool, no PYTHONPATH (each side sets its
    own), REF_HOME."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(dict.fromkeys(THREAD_VARIABLES, "1"), PYTHONWARNINGS="ignore", REF_HOME=str(home))
    return env


#: What treeviz's drivers import from the source measured, per reference.
OURS_IMPORTS = {"dgt": "models.dgt.estimators", "skinny": "models.skinny.estimators",
                "latent": "models.latent.estimators"}


def preflight(keys: Sequence[str], source: Path, python: str) -> str | None:
    """Why treeviz's side cannot run from ``source`` (its estimators do not import), or None: checked
    before a run starts, so that a broken source costs seconds, not a run."""
    modules = sorted({OURS_IMPORTS[BY_KEY[k].reference] for k in keys})
    done = subprocess.run([python, "-c", "; ".join(f"import {m}" for m in modules)], cwd=source,
                          env={**os.environ, "PYTHONPATH": str(source)}, capture_output=True, text=True)
    if done.returncode:
        return (done.stderr.strip().splitlines() or [f"status {done.returncode}"])[-1]
    return None


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def execute(cmds: Sequence[Command], run_dir: Path, record: dict[str, Any], home: Path,
            timeout_s: float = COMMAND_TIMEOUT_S) -> int:
    """Run ``cmds`` in order, keeping the record up to date (a stopped run keeps what it did);
    the number of commands that failed."""
    env = runner_env(home)
    write_record(run_dir, record)
    for c in cmds:
        print(f"== {c.setting} round {c.round}: {c.side} ({time.strftime('%H:%M:%S')}, load {_load()})", flush=True)
        try:
            done = subprocess.run(c.argv, cwd=c.cwd, env={**env, **dict(c.env)}, capture_output=True, text=True,
                                  timeout=timeout_s)
            status, tail = done.returncode, (done.stderr or done.stdout)[-2000:]
            summary = [line for line in done.stdout.splitlines() if line.startswith("{")]
        except subprocess.TimeoutExpired:
            status, tail, summary = -1, f"stopped after {timeout_s:.0f} s", []
        except OSError as e:  # no such interpreter or folder: REF_HOME half set up
            status, tail, summary = -1, str(e), []
        if status == 0 and summary and Path(c.out).is_file():
            print(summary[-1], flush=True)
            continue
        print(f"failed (status {status}): {tail}", file=sys.stderr, flush=True)
        record["failures"].append({"setting": c.setting, "round": c.round, "side": c.side, "status": status,
                                   "tail": tail[-500:]})
        Path(c.out).unlink(missing_ok=True)  # a failed run's file never counts
        write_record(run_dir, record)
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime())
    write_record(run_dir, record)
    return len(record["failures"])
