"""Every family with its default parameters against CART with its defaults, on the built-in datasets.

A new user trains with the defaults first, so the defaults must be competitive with CART's. For
every built-in classification and regression dataset (the app's catalogue) and every registered
family that handles its task, each seed draws its own split (the Data page's default preparation:
standard scaling, 20 % test, 10 % validation, split seed = seed) and trains the family with its
defaults, exactly as the Train page's "Train" button with no edits does (``train_run`` with no
parameters). Rows give the test accuracy (classification) or test R² (regression), mean ± std over
the seeds, beside CART's defaults on the same splits, and the time to train and score.

``competitive`` means: mean accuracy at most 2 points below CART's, or mean R² at most 0.05 below
(or better than CART). ``--quick`` runs one seed on the small datasets only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from models.registry import families_for_task
from treeviz.data import PrepConfig, list_datasets, load_dataset, prepare
from treeviz.training import train_run

NAME = "defaults"
SEEDS = (0, 1, 2)
TOLERANCE = {"classification": 0.02, "regression": 0.05}
METRIC = {"classification": "test_accuracy", "regression": "test_r2"}
QUICK = ("iris", "wine", "diabetes", "moons")


def run(quick: bool = False) -> dict[str, Any]:
    seeds = SEEDS[:1] if quick else SEEDS
    rows: list[dict[str, Any]] = []
    for entry in list_datasets():
        if entry.task not in METRIC or (quick and entry.key not in QUICK):
            continue
        dataset = load_dataset(entry.key)
        scores: dict[str, list[float]] = {}
        seconds: dict[str, list[float]] = {}
        for seed in seeds:
            prepared = prepare(dataset, PrepConfig(seed=seed))
            for family in families_for_task(entry.task):
                start = time.perf_counter()
                _, metrics = train_run(family.key, entry.task, {"random_state": seed}, prepared)
                seconds.setdefault(family.key, []).append(time.perf_counter() - start)
                scores.setdefault(family.key, []).append(float(metrics[METRIC[entry.task]]))
        cart = float(np.mean(scores["cart"]))
        for key, values in scores.items():
            mean = float(np.mean(values))
            rows.append({
                "name": f"{entry.key} · {key}", "dataset": entry.key, "family": key,
                "metric": METRIC[entry.task], "ours_mean": mean, "ours_std": float(np.std(values)),
                "cart_mean": cart, "cart_std": float(np.std(scores["cart"])),
                "paper_mean": None, "paper_std": None,
                "fit_s": float(np.mean(seconds[key])),
                "competitive": bool(mean >= cart - TOLERANCE[entry.task]),
                "protocol": f"defaults; {len(seeds)} seed(s); split seed = model seed; standard scaling"
                            + ("; reduced (--quick)" if quick else ""),
            })
    table = [{k: r[k] for k in ("dataset", "family", "metric", "ours_mean", "ours_std", "cart_mean", "fit_s",
                                "competitive")} for r in rows]
    return {"rows": table, "results": {"rows": rows,
                                       "all_competitive": all(r["competitive"] for r in rows)}}
