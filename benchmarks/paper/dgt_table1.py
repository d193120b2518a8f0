"""DGT's Table 1: supervised regression, test RMSE in the target's units, on Abalone and Comp-Activ
(cpu_act) over the five shuffles shipped with the authors' code (their training part is the
paper's 0.5 + 0.1, so a seeded sixth of it is carved out as validation).

* DGT: h = 6, L = 3, the paper's Table 12 widths, RMSprop recipe, batch 128, 200 epochs, the best
  validation epoch kept; λ1 and momentum chosen on split 0's validation part (``table1.tune``).
  Every row also reports the mean seconds per epoch (``epoch_s_mean``).
* CART (scikit-learn): ``max_depth`` in {2, 4, 6, 8, 10} and ``min_samples_leaf`` from the authors'
  grid 1, 2..20, 21..100, 101..150, chosen on each split's validation part."""

from __future__ import annotations

import time
from typing import Any

from sklearn.tree import DecisionTreeRegressor

from benchmarks.paper.dgt_common import HEIGHT, Paper, make_row, parallel, reduced_reasons, regression_split, rmse
from benchmarks.paper.dgt_config import jobs_for
from benchmarks.paper.dgt_supervised import dgt_row, tune_and_run

PART = "table1"
#: (dataset, method) → the paper's (mean, std, metric, source).
PAPER: dict[tuple[str, str], Paper] = {
    ("abalone", "DGT"): (2.15, 0.026, "rmse", "Table 1, DGT (h=6)"),
    ("abalone", "CART"): (2.29, 0.034, "rmse", "Table 1, CART"),
    ("cpu_act", "DGT"): (2.91, 0.149, "rmse", "Table 1, DGT (h=6)"),
    ("cpu_act", "CART"): (3.35, 0.221, "rmse", "Table 1, CART"),
}
#: The paper's Table 1 ran every seed on each of the five shuffles.
PAPER_SPLITS = 5
CART_DEPTHS = (2, 4, 6, 8, 10)
CART_LEAF_GRID = (1, *range(2, 21, 2), *range(21, 101, 4), *range(101, 151, 5))


def fit_cart(dataset: str, k: int, seed: int) -> dict[str, Any]:
    """CART with max_depth and min_samples_leaf chosen on the validation part of split ``k``."""
    Xa, ya, Xv, yv, Xte, yte = regression_split(dataset, k)
    best = None
    start = time.perf_counter()
    for depth in CART_DEPTHS:
        for leaf in CART_LEAF_GRID:
            model = DecisionTreeRegressor(max_depth=depth, min_samples_leaf=leaf, random_state=seed).fit(Xa, ya)
            val = rmse(model.predict(Xv), yv)
            if best is None or val < best[0]:
                best = (val, depth, leaf, model)
    val, depth, leaf, model = best
    return {"split": k, "seed": seed, "val": val, "test": rmse(model.predict(Xte), yte), "max_depth": depth,
            "min_samples_leaf": leaf, "fit_s": time.perf_counter() - start}


def rows(datasets: tuple[str, ...], s: dict[str, Any]) -> list[dict[str, Any]]:
    """DGT and CART on each data set."""
    n_splits = s["splits"][PART]
    tuned = tune_and_run(PART, datasets, s, lambda ds: HEIGHT[(PART, ds)])
    cart_jobs = [(ds, k, seed) for ds in datasets for k in range(n_splits) for seed in range(s["seeds"])]
    carts = parallel(fit_cart, cart_jobs, jobs_for(s, s["device"]), s["one_thread_workers"])
    out = []
    for ds in datasets:
        out.append(dgt_row(PART, ds, tuned[ds], s, HEIGHT[(PART, ds)], PAPER[(ds, "DGT")],
                           validation="a sixth of the shipped training part, seeded by the split index",
                           splits=f"the shipped splits 0..{n_splits - 1}", paper_splits=PAPER_SPLITS))
        cart = [r for job, r in zip(cart_jobs, carts) if job[0] == ds]
        settings = {"model": "sklearn DecisionTreeRegressor", "max_depth_grid": list(CART_DEPTHS),
                    "min_samples_leaf_grid": list(CART_LEAF_GRID),
                    "tuning": "grid on the validation part of each split (trained on the rest)",
                    "chosen": [(r["max_depth"], r["min_samples_leaf"]) for r in cart]}
        out.append(make_row(PART, ds, "CART", cart, settings, reduced_reasons(s, n_splits, PAPER_SPLITS), "cpu",
                            PAPER[(ds, "CART")]))
    return out
