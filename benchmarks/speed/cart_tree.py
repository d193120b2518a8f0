"""CART fit, Tree conversion and Tree routing time on the sample datasets.

Baseline in the same process: scikit-learn's own ``DecisionTreeClassifier.apply`` /
``predict``. The ratio ``route_vs_sklearn`` is Tree.apply time over sklearn.apply time (lower is
better; it shows what routing every family through the shared Tree costs).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from benchmarks.common import best_time, shared_data_dir
from models.cart.estimators import CARTClassifier, CARTRegressor, tree_from_sklearn
from treeviz.services.data import PrepConfig, load_dataset, prepare

NAME = "cart_tree"
DATASETS = ("iris", "wine", "breast_cancer", "digits", "diabetes")


def _letter() -> tuple[np.ndarray, np.ndarray] | None:
    root = shared_data_dir()
    if root is None or not (root / "uci" / "letter.csv.gz").is_file():
        return None
    import pandas as pd  # deferred: only this benchmark's table needs pandas

    df = pd.read_csv(root / "uci" / "letter.csv.gz")
    return df.drop(columns="label").to_numpy(float), df["label"].to_numpy()


def _measure(name: str, X: np.ndarray, y: Any, task: str, depth: int | None, repeat: int) -> dict[str, Any]:
    cls = CARTClassifier if task == "classification" else CARTRegressor
    est = cls(max_depth=depth).fit(X, y)
    sk = est.estimator_
    tree = est.to_tree()
    fit_s = best_time(lambda: cls(max_depth=depth).fit(X, y), repeat=repeat)
    convert_s = best_time(
        lambda: tree_from_sklearn(sk, task=task, output_names=tree.output_names, family="cart"), repeat=repeat
    )
    route_s = best_time(lambda: tree.apply(X), repeat=repeat)
    sk_route_s = best_time(lambda: sk.apply(X.astype(np.float32)), repeat=repeat)
    stats_s = best_time(lambda: tree.node_stats(X), repeat=repeat)
    assert np.array_equal(tree.apply(X), sk.apply(X)), "Tree routing disagrees with scikit-learn"
    return {
        "dataset": name,
        "n": X.shape[0],
        "d": X.shape[1],
        "nodes": tree.n_nodes,
        "depth": tree.max_depth,
        "fit_ms": fit_s * 1e3,
        "to_tree_ms": convert_s * 1e3,
        "route_ms": route_s * 1e3,
        "sklearn_apply_ms": sk_route_s * 1e3,
        "route_vs_sklearn": route_s / sk_route_s,
        "node_stats_ms": stats_s * 1e3,
    }


def run(quick: bool = False) -> dict[str, Any]:
    repeat = 2 if quick else 5
    rows = []
    names = DATASETS[:3] if quick else DATASETS
    for key in names:
        prepared = prepare(load_dataset(key), PrepConfig(scaling="none", test_size=0.0, val_size=0.0))
        ds = prepared.dataset
        rows.append(_measure(key, prepared.X_train, prepared.labels("train"), ds.task, None, repeat))
    if not quick:
        letter = _letter()
        if letter is not None:
            rows.append(_measure("letter", *letter, "classification", None, repeat))
    return {"rows": rows, "results": {r["dataset"]: {k: v for k, v in r.items() if k != "dataset"} for r in rows}}
