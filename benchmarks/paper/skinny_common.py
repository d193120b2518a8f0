"""What the Skinny Trees benchmark's parts share: the row beside the paper's number (standard
errors over seeds or simulations, as the paper reports them), the machine a CPU row ran on, and
the paper's satimage protocol sizes."""

from __future__ import annotations

import math
import os
import platform
from typing import Any

import numpy as np

#: The results file's name (``benchmarks/results/skinny.json``).
RESULTS = "skinny"
#: The model packages a Skinny Trees fit runs (a logged fit's version is theirs and its module's).
SKINNY_CODE = ("models.skinny", "models.ground", "models.base", "models.denormals", "models.devices",
               "models.memory", "models.schema", "models.targets", "models.cost", "benchmarks.paper.skinny_common")
#: The paper's satimage protocol: about 2000 random trials, then 100 re-runs of the chosen setting.
PAPER_TRIALS, PAPER_RERUNS = 2000, 100


def se(values: list[float]) -> float | None:
    """The standard error of the mean (None from one value: there is no spread to estimate)."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else None


def row(name: str, metric: str, values: list[float], paper: float | None, paper_se: float | None,
        note: str, *, reduced: bool, higher_is_better: bool = True, decimals: int | None = None,
        **extra: Any) -> dict[str, Any]:
    """One result row: ``protocol`` full or reduced (``reduced``), ``note`` saying how it ran and
    what differs. ``decimals``: how many the paper prints; a paper value printed as 0.26 ± 0.00
    stands for anything in [0.255, 0.265), so the comparison allows half a unit of the last digit.
    One value has no spread: its ``ours_std`` and ``ours_se`` are null."""
    mean = float(np.mean(values))
    ok = None
    if paper is not None:  # within the paper's SE (our own SE where the paper gives none) or better
        slack = paper_se if paper_se is not None else (se(values) or 0.0)
        if decimals is not None:
            slack = max(slack, 0.5 * 10.0 ** -decimals)
        ok = mean >= paper - slack if higher_is_better else mean <= paper + slack
    spread = float(np.std(values)) if len(values) > 1 else None
    if spread is None:
        note += "; one value, so no spread (ours_std null)"
    return {"name": name, "metric": metric, "ours_mean": mean, "ours_std": spread, "ours_se": se(values),
            "paper_mean": paper, "paper_std": paper_se, "n": len(values), "within_paper_se_or_better": ok,
            "protocol": "reduced" if reduced else "full", "protocol_note": note,
            "values": [float(v) for v in values], **extra}


def cpu_machine() -> dict[str, Any]:
    """The machine a CPU-only row ran on (the results file's own machine may be another run's)."""
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "cuda": None}


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    """A draw log-uniform in [low, high], to 3 significant digits."""
    return float(f"{math.exp(rng.uniform(math.log(low), math.log(high))):.3g}")
