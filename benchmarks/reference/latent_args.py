"""What both sides of the latent-trees comparison share (ref_latent.py, the authors' code, and
ours_latent.py, treeviz's): the command line, so that both train with the same setting by default,
and the per-epoch summary of their clocks.

Only the standard library and numpy: ref_latent.py imports this in the authors' environment, where
treeviz is not installed. Both scripts run by path, so this file's folder is on their ``sys.path``.
"""
import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np


def arguments(seed: int) -> argparse.ArgumentParser:
    """The shared options: ``--split_file``, ``--depth``, ``--reg``, ``--lr``, ``--batch``, ``--epochs``,
    ``--seed`` (default ``seed``: each side keeps its own) and ``--out``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--split_file", required=True)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--reg", type=float, default=1.0)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=seed)
    ap.add_argument("--out", required=True)
    return ap


def epoch_times(marks: Sequence[tuple[float, float]]) -> dict[str, Any]:
    """Wall and process-CPU seconds of each epoch from ``marks`` ((wall, cpu) at the start and at the
    end of every epoch), and their median and mean without epoch 1, which also carries the set-up."""
    epoch_s = [marks[i][0] - marks[i - 1][0] for i in range(1, len(marks))]
    epoch_cpu_s = [marks[i][1] - marks[i - 1][1] for i in range(1, len(marks))]
    return {"epoch_s": epoch_s, "epoch_cpu_s": epoch_cpu_s,
            "median_epoch_s": float(np.median(epoch_s[1:])), "mean_epoch_s": float(np.mean(epoch_s[1:])),
            "median_epoch_cpu_s": float(np.median(epoch_cpu_s[1:])),
            "mean_epoch_cpu_s": float(np.mean(epoch_cpu_s[1:]))}
