"""The tree embedding's defaults against openTSNE's and UMAP's out-of-sample mappings (issue 52).

Protocol (``python -m benchmarks.report.run embedding_depth``): digits (1 797 × 64) prepared as the
app prepares a data set (:func:`treeviz.services.data.prepare`, seed 0: 70 % training, 10 %
validation, 20 % test, features standardised on the training rows). Each method learns a 2-D map of
the training rows and maps the test rows:

* ``TreeEmbedding()`` with its defaults (t-SNE, perplexity 15; the depth and ℓ1 penalty chosen from
  the data, :mod:`models.embedding.defaults`), fitted with the training classes as the app fits it
  (they only choose the depth); test rows mapped by the tree (``transform``);
* the previous defaults, depth 3 and λ = 0.1, on the same split (the "before" row);
* openTSNE's ``TSNE`` (its defaults, perplexity 30, ``random_state=0``) fitted on the training rows,
  test rows placed by its ``transform`` (optimised against the training map);
* umap-learn's ``UMAP`` (defaults, ``random_state=0``), test rows by ``transform``.

The score is the 10-NN accuracy of the mapped test points: a k-nearest-neighbour vote among the
mapped training points (:func:`treeviz.readers.metrics.knn_accuracy`, the function behind the app's
``knn_accuracy`` metric, with k = 10); the app's 5-NN is given beside it. Wall times are of the fit
and the mapping together, one torch and one BLAS thread (openTSNE: ``n_jobs=1``), on a shared CPU.
The acceptance: the tree embedding's defaults within 5 points of openTSNE's transform.

``--quick`` runs a 300-row subset with short schedules (the numbers then mean nothing).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from openTSNE import TSNE
from threadpoolctl import threadpool_limits
from umap import UMAP

from models.embedding.tree_embedding import TreeEmbedding
from treeviz.readers.metrics import knn_accuracy
from treeviz.services.data import PrepConfig, load_dataset, prepare

NAME = "embedding_depth"
#: Neighbours of the headline score (the issue's), and of the app's metric.
K, K_APP = 10, 5
#: Points the tree embedding may fall behind openTSNE's transform.
MARGIN = 0.05
PREVIOUS = {"depth": 3, "l1_penalty": 0.1}
QUICK_TREE = {"n_mu": 3, "free_iter": 150, "z_iter": 20, "tao_iter": 3}
QUICK_ROWS = 300


def _split(quick: bool) -> dict[str, np.ndarray]:
    data = load_dataset("digits")
    prepared = prepare(data, PrepConfig(seed=0))
    out = {"X_train": prepared.X_train, "X_test": prepared.X("test"),
           "y_train": prepared.classes("train"), "y_test": prepared.classes("test")}
    if quick:
        out = {k: v[:QUICK_ROWS if k.endswith("train") else QUICK_ROWS // 3] for k, v in out.items()}
    return out


def _tree(params: dict[str, Any]) -> Callable[[dict[str, np.ndarray]], tuple[np.ndarray, np.ndarray, dict]]:
    def fit(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict]:
        model = TreeEmbedding(**params, device="cpu", random_state=0).fit(d["X_train"], d["y_train"])
        extra = {"depth": model.depth_, "l1_penalty": model.l1_penalty_, "n_leaves": model.history_[-1]["n_leaves"],
                 "objective": model.objective_}
        return model.embedding_, model.transform(d["X_test"]), extra
    return fit


def _opentsne(quick: bool) -> Callable[[dict[str, np.ndarray]], tuple[np.ndarray, np.ndarray, dict]]:
    def fit(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict]:
        short = {"n_iter": 100, "early_exaggeration_iter": 50} if quick else {}
        embedding = TSNE(random_state=0, n_jobs=1, **short).fit(d["X_train"])
        return np.asarray(embedding), np.asarray(embedding.transform(d["X_test"])), {"perplexity": 30.0}
    return fit


def _umap(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict]:
    model = UMAP(random_state=0).fit(d["X_train"])
    return model.embedding_, model.transform(d["X_test"]), {"n_neighbors": 15}


def _row(name: str, d: dict[str, np.ndarray], fit: Callable, quick: bool, note: str) -> dict[str, Any]:
    start = time.perf_counter()
    Z_train, Z_test, extra = fit(d)
    seconds = time.perf_counter() - start
    score = knn_accuracy(Z_train, d["y_train"], Z_test, d["y_test"], k=K)
    print(f"  {name}: {K}-NN {score:.3f} in {seconds:.0f} s", flush=True)
    return {"name": f"digits: {name}", "metric": f"{K}-NN accuracy of mapped test points", "ours_mean": score,
            "ours_std": None, "paper_mean": None, "paper_std": None,
            "protocol": "reduced" if quick else "full", "protocol_note": note,
            f"knn{K_APP}_test": knn_accuracy(Z_train, d["y_train"], Z_test, d["y_test"], k=K_APP),
            "seconds": seconds, **extra}


def run(quick: bool = False) -> dict[str, Any]:
    d = _split(quick)
    split = (f"digits as the app prepares it (seed 0, standardised): {d['X_train'].shape[0]} training rows, "
             f"{d['X_test'].shape[0]} test rows")
    defaults = QUICK_TREE if quick else {}
    methods = [
        ("tree embedding, defaults", _tree(defaults), "TreeEmbedding() fitted with the training classes"),
        ("tree embedding, depth 3 and λ 0.1 (the previous defaults)", _tree({**defaults, **PREVIOUS}),
         "TreeEmbedding(depth=3, l1_penalty=0.1)"),
        ("openTSNE transform", _opentsne(quick),
         "openTSNE TSNE() fit on the training rows, transform on the test rows"),
        ("UMAP transform", _umap, "umap-learn UMAP() fit on the training rows, transform on the test rows"),
    ]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            rows = [_row(name, d, fit, quick, f"{split}; {note}") for name, fit, note in methods]
    finally:
        torch.set_num_threads(threads)
    by = {r["name"]: r for r in rows}
    tree, tsne = by["digits: tree embedding, defaults"], by["digits: openTSNE transform"]
    gap = tsne["ours_mean"] - tree["ours_mean"]
    verdict = {"gap_to_opentsne": gap, "within_margin": bool(gap <= MARGIN), "margin": MARGIN}
    tree.update(verdict)
    table = [{"method": r["name"].removeprefix("digits: "), f"{K}-NN (test, mapped)": f"{r['ours_mean']:.3f}",
              f"{K_APP}-NN": f"{r[f'knn{K_APP}_test']:.3f}", "seconds": f"{r['seconds']:.0f}",
              "depth": str(r.get("depth", "—")), "λ": "—" if "l1_penalty" not in r else f"{r['l1_penalty']:.3g}"}
             for r in rows]
    return {"rows": table, "results": {"rows": rows, **verdict}}
