"""What both sides of every side-by-side pair share: one thread, the command line of each pair (so
both sides train the same setting by default), the per-epoch summary of their clocks, and the
result file.

Only the standard library: the reference drivers import this in the authors' environments, where
treeviz is not installed. Every driver runs by path, so this folder is on its ``sys.path``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from collections.abc import Sequence
from typing import Any

#: The thread counts of the native pools, set before numpy, torch or TensorFlow load.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "TREEVIZ_THREADS")


def one_thread() -> None:
    """Ask every native thread pool for one thread (call before importing numpy)."""
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _parser(**defaults: Any) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser()
    for name, value in defaults.items():
        ap.add_argument(f"--{name}", type=type(value), default=value)
    ap.add_argument("--out", required=True, help="the result file (JSON)")
    return ap


def dgt_options() -> argparse.ArgumentParser:
    """DGT: tree height, batch, l1 on the predicate layers, seed; each side adds its data options."""
    return _parser(height=6, epochs=20, batch=128, l1=1e-5, seed=1)


def skinny_options() -> argparse.ArgumentParser:
    """Skinny Trees, the authors' ToyExample notebook's setting by default."""
    ap = _parser(trees=20, depth=4, lam0=100.0, l2=0.1, temperature=0.01, lr=0.1, batch=16, epochs=10, seed=0)
    ap.add_argument("--data", default="breast_cancer", help="breast_cancer (the notebook's split) or an .npz")
    return ap


def latent_options(seed: int) -> argparse.ArgumentParser:
    """Latent trees: depth, λ (``--reg``), learning rate, batch; ``seed`` is each side's own default."""
    ap = _parser(depth=4, reg=1.0, lr=1e-2, batch=64, epochs=30, seed=seed)
    ap.add_argument("--split_file", required=True)
    return ap


def epoch_times(marks: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Wall and process-CPU seconds of each epoch from ``marks`` ((wall, cpu) at the start and at the
    end of every epoch), and their median and mean without epoch 1, which also carries the set-up
    (tracing, compilation, the first batch's initialisation); needs two epochs or more."""
    epoch_s = [marks[i][0] - marks[i - 1][0] for i in range(1, len(marks))]
    epoch_cpu_s = [marks[i][1] - marks[i - 1][1] for i in range(1, len(marks))]
    if len(epoch_s) < 2:
        raise ValueError("time at least two epochs: the first carries the set-up and is left out")
    return {"epoch_s": epoch_s, "epoch_cpu_s": epoch_cpu_s,
            "median_epoch_s": statistics.median(epoch_s[1:]), "mean_epoch_s": statistics.fmean(epoch_s[1:]),
            "median_epoch_cpu_s": statistics.median(epoch_cpu_s[1:]),
            "mean_epoch_cpu_s": statistics.fmean(epoch_cpu_s[1:])}


def save(result: dict[str, Any], out: str, summary: Sequence[str]) -> None:
    """Write ``result`` to ``out`` and print one JSON line of its ``summary`` keys (the runner shows it)."""
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({k: result.get(k) for k in ("impl", "median_epoch_cpu_s", "median_epoch_s", *summary)}))
