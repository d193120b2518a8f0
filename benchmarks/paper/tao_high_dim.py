"""TAO's node solvers on many features: the compiled level solver against scikit-learn's.

The workload is the tree-embedding benchmark's direct fit on the MNIST 5000 subset (4 000 training
images of 784 pixels scaled to [0, 1]; ``../shared/data/mnist``): a TAO regression tree of depth
5 with ℓ1-linear leaves, λ 100 in sum form, 8 iterations, random start, fitted to a 2-D target
(the images' first two principal components × 10, standing in for the free embedding so that the
run needs no t-SNE). Without the shared data, Gaussian rows of the same shape stand in.

Each solver (``solver="cd"``, the default: decision nodes by proximal Newton, leaves by
coordinate descent, one compiled call per depth level; ``solver="sklearn"``: liblinear per
decision node, scikit-learn's Lasso per leaf) fits the same tree from the same start, one thread
(torch and BLAS), interleaved, ``repeat`` times; a row gives the median process CPU seconds, the
ratio, and the objective each reaches (squared error + λ‖W‖₁ over the leaves and λ‖w‖₁ over
the decision nodes, as the fit records it).

    python -m benchmarks.report.run tao_high_dim            # 3 repeats
    python -m benchmarks.report.run tao_high_dim --quick    # 1 000 rows, 2 iterations, 1 repeat
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.decomposition import PCA
from threadpoolctl import threadpool_limits

from benchmarks.common import shared_data_dir
from models.tao.estimators import TAORegressor

NAME = "tao_high_dim"
SETTING = {"depth": 5, "leaf": "linear", "l1_penalty": 100.0, "init": "random", "random_state": 0, "device": "cpu"}


def _data(quick: bool) -> tuple[np.ndarray, np.ndarray, str]:
    root = shared_data_dir()
    path = None if root is None else root / "mnist" / "mnist_5k.csv.gz"
    if path is not None and path.is_file():
        table = pd.read_csv(path)
        table.pop("label")
        X, source = table.to_numpy(np.float64)[:4000] / 255.0, "MNIST 5000 subset, first 4000 images"
    else:
        X = np.random.default_rng(0).random((4000, 784))
        source = "uniform rows of MNIST's shape (shared data absent)"
    if quick:
        X, source = X[:1000], source + ", first 1000 rows"
    return X, PCA(2, random_state=0).fit_transform(X) * 10.0, source


def _fit(X: np.ndarray, Z: np.ndarray, solver: str, iterations: int) -> tuple[float, float]:
    model = TAORegressor(**SETTING, max_iter=iterations, solver=solver)
    start = time.process_time()
    model.fit(X, Z)
    return time.process_time() - start, float(model.history_[-1]["objective"])


def run(quick: bool = False) -> dict[str, Any]:
    X, Z, source = _data(quick)
    iterations, repeats = (2, 1) if quick else (8, 3)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    seconds: dict[str, list[float]] = {"cd": [], "sklearn": []}
    objective: dict[str, float] = {}
    try:
        with threadpool_limits(1):
            _fit(X[:200], Z[:200], "cd", 1)  # compile the kernels first
            for _ in range(repeats):
                for solver in seconds:
                    s, objective[solver] = _fit(X, Z, solver, iterations)
                    seconds[solver].append(s)
    finally:
        torch.set_num_threads(threads)
    cd, sk = float(np.median(seconds["cd"])), float(np.median(seconds["sklearn"]))
    row = {"name": f"TAO fit, {X.shape[0]} x {X.shape[1]}, depth 5, linear leaves, lambda 100, {iterations} iterations",
           "data": source, "cpu_s_cd": cd, "cpu_s_sklearn": sk, "cd_over_sklearn": cd / sk,
           "objective_cd": objective["cd"], "objective_sklearn": objective["sklearn"], "repeats": repeats,
           "one_thread": True}
    table = [{"workload": row["name"], "cd CPU s": f"{cd:.1f}", "sklearn CPU s": f"{sk:.1f}",
              "cd / sklearn": f"{cd / sk:.2f}", "objective (cd / sklearn)":
              f"{objective['cd']:.6g} / {objective['sklearn']:.6g}"}]
    return {"rows": table, "results": {"rows": [row], "settings": SETTING}}
