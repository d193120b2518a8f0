"""The scale benchmark: every classification family's app defaults on 20 000 and 200 000 rows.

``python -m benchmarks.report.run scale`` trains each family of :data:`FAMILIES` (CART first, the anchor)
with its app defaults on :mod:`benchmarks.speed.scale_table`'s synthetic table (``make_classification``,
20 features, 3 classes, the Data page's default preparation), one thread, at each size of
:data:`SIZES`. Each fit runs in a process of its own (``python -m benchmarks.speed.scale_table``), so its
peak memory is its own and a runaway fit can be stopped: past its CPU-time limit (the target times
:data:`LIMIT_FACTOR`, at least :data:`MIN_LIMIT_S`) the process is stopped and the row records
"stopped after N s"; a wall-clock backstop (:data:`WALL_FACTOR` times the limit) covers a fit that
waits instead of computing.

Each row of ``results.rows``: ``family``, ``n``, ``fit_s`` (process CPU time of the fit, one thread:
the compute, steady under the machine's load), ``wall_s``, ``peak_mb`` (the fit's peak resident
memory above the process before it), ``rss_mb`` (the process's peak), ``accuracy`` (test), the
``targets`` it is held to and ``meets`` (true / false; null when it could not be judged) with
``misses`` naming each target missed. Targets on one thread: 20 000 rows ≤ 20 s, 200 000 rows
≤ 180 s (forests ≤ 300 s), ``peak_mb`` ≤ 4 096, accuracy at least CART's at the same size.

``--quick`` (tests): 2 000 rows, CART and TAO only. ``python -m benchmarks.speed.scale --family cart
--n 20000`` runs chosen fits and prints them without writing the results file.

DGT-Bandit is included because its defaults train on the table through the same ``train_run``, but
it learns from bandit feedback (the reward of the one class it plays per row, not the label), so
its accuracy against CART's says how much that feedback costs rather than how good its tree is.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import format_table

NAME = "scale"
ROOT = Path(__file__).resolve().parents[2]

#: The classification families timed, CART first (the anchor of every comparison).
FAMILIES = ("cart", "latent", "tao", "tao_forest", "laptao", "skinny", "dgt", "dgt_forest", "dgt_bandit")
FORESTS = frozenset({"tao_forest", "dgt_forest"})
SIZES = (20_000, 200_000)
QUICK_FAMILIES = ("cart", "tao")
QUICK_SIZES = (2_000,)

MAX_PEAK_MB = 4096.0
LIMIT_FACTOR = 2.0  # a fit is stopped at twice its target: enough to say by how much it misses
MIN_LIMIT_S = 60.0
WALL_FACTOR = 8.0  # the wall-clock backstop: the machine may be loaded several processes per core


def target_s(family: str, n: int) -> float:
    """The fit time a family's defaults should keep to on ``n`` rows, one thread (CPU seconds)."""
    if n <= 20_000:
        return 20.0
    return 300.0 if family in FORESTS else 180.0


def cpu_limit_s(family: str, n: int, factor: float = LIMIT_FACTOR) -> float:
    return max(MIN_LIMIT_S, factor * target_s(family, n))


def fit_in_subprocess(family: str, n: int, cpu_limit: float, wall_limit: float,
                      params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One timed fit (:func:`benchmarks.speed.scale_table.time_fit`) in a fresh process; a row."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "NUMBA_NUM_THREADS": "1", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "benchmarks.speed.scale_table", "--family", family, "--n", str(int(n)),
           "--cpu-limit", f"{cpu_limit:g}", "--params", json.dumps(params or {})]
    start = time.perf_counter()
    base = {"family": family, "n": int(n), "fit_s": None, "wall_s": None, "peak_mb": None, "rss_mb": None,
            "accuracy": None, "cpu_limit_s": cpu_limit}
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=wall_limit)
    except subprocess.TimeoutExpired:
        return {**base, "wall_s": time.perf_counter() - start,
                "stopped": f"stopped after {wall_limit:.0f} s of wall time (the backstop; under its CPU limit)"}
    wall = time.perf_counter() - start
    if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        return {**base, "wall_s": wall, "stopped": f"stopped after {cpu_limit:.0f} s (CPU time)"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {**base, "wall_s": wall, "error": f"exit status {proc.returncode}: {' | '.join(tail)[-400:]}"}
    return {**base, **json.loads(lines[-1])}


def judge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Add ``targets``, ``meets`` and ``misses`` to every row (accuracy against CART's row of the same n)."""
    cart = {r["n"]: r.get("accuracy") for r in rows if r["family"] == "cart"}
    for r in rows:
        anchor = cart.get(r["n"])
        r["targets"] = {"fit_s": target_s(r["family"], r["n"]), "peak_mb": MAX_PEAK_MB,
                        "accuracy": anchor if r["family"] != "cart" else None}
        misses = []
        if r.get("stopped"):
            misses.append(r["stopped"])
        elif r.get("error"):
            misses.append("failed")
        else:
            if r["fit_s"] > r["targets"]["fit_s"]:
                misses.append(f"fit {r['fit_s']:.1f} s > {r['targets']['fit_s']:.0f} s")
            if r["peak_mb"] > MAX_PEAK_MB:
                misses.append(f"peak {r['peak_mb']:.0f} MB > {MAX_PEAK_MB:.0f} MB")
            if anchor is not None and r["family"] != "cart" and r["accuracy"] < anchor:
                misses.append(f"accuracy {r['accuracy']:.3f} < CART's {anchor:.3f}")
        unjudged = r["family"] != "cart" and anchor is None and not misses
        r["misses"] = misses
        r["meets"] = None if unjudged else not misses
    return rows


def table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        fit = r.get("stopped") or ("FAILED" if r.get("error") else f"{r['fit_s']:.1f} s")
        out.append({"family": r["family"], "n": r["n"], "fit (CPU)": fit,
                    "wall": "" if r.get("wall_s") is None else f"{r['wall_s']:.0f} s",
                    "peak MB": "" if r.get("peak_mb") is None else f"{r['peak_mb']:.0f}",
                    "accuracy": "" if r.get("accuracy") is None else f"{r['accuracy']:.3f}",
                    "target": f"{r['targets']['fit_s']:.0f} s",
                    "meets": {True: "yes", False: "NO", None: "?"}[r["meets"]],
                    "misses": "; ".join(r["misses"])})
    return out


def measure(families: Sequence[str], sizes: Sequence[int], *, limit_factor: float = LIMIT_FACTOR,
            log: bool = True) -> list[dict[str, Any]]:
    """Every family at every size (smallest first; CART first at each size), each in its own process."""
    families = ["cart", *[f for f in families if f != "cart"]] if "cart" in families else list(families)
    rows = []
    for n in sorted(sizes):
        for family in families:
            limit = cpu_limit_s(family, n, limit_factor)
            row = fit_in_subprocess(family, n, limit, WALL_FACTOR * limit + 120.0)
            rows.append(row)
            if log:
                what = row.get("stopped") or row.get("error") or (
                    f"{row['fit_s']:.1f} s CPU, {row['wall_s']:.0f} s wall, {row['peak_mb']:.0f} MB, "
                    f"acc {row['accuracy']:.3f}")
                print(f"  scale: {family} at {n} rows: {what}", flush=True)
    return judge(rows)


def run(quick: bool = False, limit_factor: float = LIMIT_FACTOR) -> dict[str, Any]:
    families = QUICK_FAMILIES if quick else FAMILIES
    sizes = QUICK_SIZES if quick else SIZES
    factor = float(limit_factor)
    rows = measure(families, sizes, limit_factor=factor)
    missed = [f"{r['family']} at {r['n']}: {'; '.join(r['misses'])}" for r in rows if r["meets"] is False]
    return {"rows": table(rows),
            "results": {"rows": rows, "families": list(families), "sizes": list(sizes),
                        "targets": {"fit_s_20000": 20.0, "fit_s_200000": 180.0, "fit_s_200000_forests": 300.0,
                                    "peak_mb": MAX_PEAK_MB, "accuracy": "at least CART's at the same n"},
                        "missed": missed,
                        "protocol": ("make_classification (20 features, 10 informative, 5 redundant, 3 classes, "
                                     "random_state 0), the Data page's default preparation (20 % test); each "
                                     "family's app defaults through train_run, one thread (OMP/MKL/torch/numba), "
                                     "each fit in its own process; fit_s = process CPU time of the fit, peak_mb = "
                                     "the fit's peak RSS above the process before it; a fit is stopped after "
                                     f"{factor:g} x its target of CPU time (at least {MIN_LIMIT_S:.0f} s)"),
                        "notes": {"dgt_bandit": "learns from bandit feedback (the reward of one played class per "
                                                "row), not from labels: its accuracy is held to CART's all the "
                                                "same"}}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Chosen fits of the scale benchmark, printed (nothing written).")
    ap.add_argument("--family", action="append", help=f"family key (repeatable; default all: {', '.join(FAMILIES)})")
    ap.add_argument("--n", type=int, action="append", help="rows (repeatable; default 20000 and 200000)")
    ap.add_argument("--limit-factor", type=float, default=LIMIT_FACTOR, help="CPU limit = factor x target")
    a = ap.parse_args(argv)
    rows = measure(a.family or FAMILIES, a.n or SIZES, limit_factor=a.limit_factor)
    print(format_table(table(rows)))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
