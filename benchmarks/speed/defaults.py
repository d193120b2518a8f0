"""Every family with its default parameters against CART with its defaults, on the built-in datasets.

A new user trains with the defaults first, so the defaults must be competitive with CART's. For
every built-in classification and regression dataset (the app's catalogue) and every registered
family that handles its task, each seed draws its own split (the Data page's default preparation:
standard scaling, 20 % test, 10 % validation, split seed = seed) and trains the family with its
defaults, exactly as the Train page's "Train" button with no edits does (``train_run`` with no
parameters). Rows give the test accuracy (classification) or test R² (regression), mean ± std over
the seeds, beside CART's defaults on the same splits, and the time to train and score.

The built-in datasets are small and have at most 10 classes, so the papers' many-class sets
(satimage: 6 classes, pendigits: 10, letter: 26; from ``../shared/data/uci`` or
``TREEVIZ_SHARED_DATA``) are added when present, with one seed (``protocol`` "reduced").

``competitive`` means: mean accuracy at most 2 points below CART's, or mean R² at most 0.05 below
(or better than CART). ``--quick`` runs one seed on the small datasets only.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks.common import load_uci, shared_data_dir
from models.registry import families_for_task
from treeviz.services.data import Dataset, PrepConfig, list_datasets, load_dataset, prepare
from treeviz.services.experiments.training import train_run

NAME = "defaults"
SEEDS = (0, 1, 2)
TOLERANCE = {"classification": 0.02, "regression": 0.05}
METRIC = {"classification": "test_accuracy", "regression": "test_r2"}
QUICK = ("iris", "wine", "diabetes", "moons")
PAPER_SETS = ("satimage", "pendigits", "letter")


def _paper_dataset(name: str) -> Dataset:
    X, labels = load_uci(name)
    classes, y = np.unique(labels, return_inverse=True)
    return Dataset(name=name, X=X, y=y, feature_names=tuple(f"x{j + 1}" for j in range(X.shape[1])),
                   task="classification", class_names=tuple(str(c) for c in classes),
                   source="../shared/data/uci")


def _datasets(quick: bool) -> list[tuple[Dataset, tuple[int, ...], str, str | None]]:
    """(dataset, seeds, source, what is reduced or None) of every dataset the benchmark covers."""
    seeds = SEEDS[:1] if quick else SEEDS
    out = [(load_dataset(e.key), seeds, "built-in", "quick run: 1 seed, a few datasets" if quick else None)
           for e in list_datasets() if e.task in METRIC and (not quick or e.key in QUICK)]
    data = shared_data_dir()
    if not quick and data is not None:
        out += [(_paper_dataset(name), SEEDS[:1], "paper data", f"1 seed instead of {len(SEEDS)}")
                for name in PAPER_SETS if (data / "uci" / f"{name}.csv.gz").is_file()]
    return out


def _spread(values: list[float]) -> float | None:
    """The standard deviation of ``values``; None from one seed (a single run has no spread)."""
    return float(np.std(values)) if len(values) > 1 else None


def run(quick: bool = False) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for dataset, seeds, source, reduced in _datasets(quick):
        task = dataset.task
        scores: dict[str, list[float]] = {}
        seconds: dict[str, list[float]] = {}
        for seed in seeds:
            prepared = prepare(dataset, PrepConfig(seed=seed))
            for family in families_for_task(task):
                start = time.perf_counter()
                _, metrics = train_run(family.key, task, {"random_state": seed}, prepared)
                seconds.setdefault(family.key, []).append(time.perf_counter() - start)
                scores.setdefault(family.key, []).append(float(metrics[METRIC[task]]))
        cart = float(np.mean(scores["cart"]))
        for key, values in scores.items():
            mean = float(np.mean(values))
            rows.append({
                "name": f"{dataset.name} · {key}", "dataset": dataset.name, "family": key,
                "metric": METRIC[task], "ours_mean": mean, "ours_std": _spread(values),
                "cart_mean": cart, "cart_std": _spread(scores["cart"]),
                "paper_mean": None, "paper_std": None,
                "fit_s": float(np.mean(seconds[key])),
                "competitive": bool(mean >= cart - TOLERANCE[task]),
                "protocol": "reduced" if reduced else "full",
                "protocol_note": (f"defaults; {len(seeds)} seed(s); split seed = model seed; standard scaling; "
                                  f"{source}" + (f"; reduced: {reduced}" if reduced else "")
                                  + ("; one seed, so no spread (ours_std null)" if len(seeds) < 2 else "")),
            })
    table = [{k: r[k] for k in ("dataset", "family", "metric", "ours_mean", "ours_std", "cart_mean", "fit_s",
                                "competitive")} for r in rows]
    return {"rows": table, "results": {"rows": rows,
                                       "all_competitive": all(r["competitive"] for r in rows)}}
