"""Shared helpers for benchmarks: timing, tables, JSON results, the reference-data folder."""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def results_dir() -> Path:
    """Where results go: ``benchmarks/results`` unless ``TREEVIZ_BENCH_RESULTS`` says otherwise."""
    return Path(os.environ.get("TREEVIZ_BENCH_RESULTS", RESULTS_DIR))


def shared_data_dir() -> Path | None:
    """The papers' reference data (``../shared/data`` by default, or ``TREEVIZ_SHARED_DATA``)."""
    path = Path(os.environ.get("TREEVIZ_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    return path if path.is_dir() else None


def best_time(fn: Callable[[], Any], *, repeat: int = 5, min_time: float = 0.05) -> float:
    """Best wall time of ``fn`` in seconds over ``repeat`` rounds (each round loops to ``min_time``)."""
    best = float("inf")
    for _ in range(repeat):
        loops, start = 0, time.perf_counter()
        while True:
            fn()
            loops += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / loops)
    return best


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain-text table with right-aligned numbers."""
    if not rows:
        return "(no rows)"
    columns = list(columns or dict.fromkeys(k for r in rows for k in r))  # every key, in first-seen order

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    body = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(columns)]
    line = "  ".join(c.rjust(w) for c, w in zip(columns, widths))
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line, sep] + ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body])


def write_results(name: str, results: dict[str, Any], *, quick: bool) -> Path:
    """Write ``results`` to ``benchmarks/results/<name>.json`` with machine information."""
    out_dir = results_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "quick": quick,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    "cpus": os.cpu_count()},
        "results": results,
    }
    payload["machine"]["torch"] = torch.__version__
    payload["machine"]["cuda"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    path = out_dir / f"{name}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True))
    os.replace(tmp, path)
    return path
