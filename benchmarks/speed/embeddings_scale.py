"""Tree embeddings at 10 000 points: the approximate repulsion path (``path="fft"`` of
:mod:`models.embedding.objectives`) against the exact chunked path, in the same process.

Protocol (``python -m benchmarks.report.run embeddings_scale``): pendigits (``../shared/data/uci``,
10 992 × 16, features divided by 100) split into 10 000 training and 992 test points (stratified,
seed 0); one torch and one BLAS thread. Not an experiment of the thesis (its Z-steps used Barnes-Hut or the
fast multipole method but it reports no timings), so there are no paper numbers. Rows:

* one ``value_and_grad`` of t-SNE (at the tree embedding's free embedding Z0 and at its F(X)) and
  of the elastic embedding (λ = 100, at a free EE embedding), fft against chunked: best time of
  three rounds, and the relative errors of the fft value and gradient against the exact ones, of
  E and of the approximated part alone (the repulsive pair sum and its gradient: at a converged
  free embedding ∇E is a small difference of attraction and repulsion, so its relative error is
  much larger than that of either);
* the free embedding (t-SNE 300 and EE 300 spectral-direction iterations from the same start)
  on each path: wall time, and the objective of the result evaluated exactly;
* the whole tree embedding (t-SNE, depth 6, λ = 100, 12 μ steps of 50 Z-step and 8 TAO
  iterations, free embedding at most 1000 iterations: shorter than the thesis's schedule, hence
  "reduced"), once as ``TreeEmbedding`` runs it at this size (fft) and once with the exact chunked
  path forced: fit wall time, E(F(X)) computed exactly, the direct fit's and the free embedding's
  E, and 5-NN accuracy of the test points mapped through the tree (trained on the training
  points' tree embedding).

``--quick`` runs 600 points with the fft path forced and a tiny schedule (the numbers then mean
nothing; at that size and schedule most evaluations fall back to the exact sum).

``results.app_defaults`` (not in ``rows``): the app's own training of the family with its defaults
(``treeviz.services.experiments.training.train_run("tree_embedding", "embedding", None, prepared)``, the Train page's
button) on seattle_weather (1 461 rows, the sample table) and on the scale benchmark's synthetic
table (:mod:`benchmarks.speed.scale_table`, 20 000 rows), one fit per child process, one thread:
``fit_s`` process CPU seconds of the fit, ``peak_mb`` the child's peak resident memory, the
training rows, and the test split's trustworthiness and 5-NN accuracy of the mapped points.
``--quick`` fits the 400-row table with the "quick" preset instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import torch
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from threadpoolctl import threadpool_limits

import models.embedding.objectives as objectives
import models.embedding.objectives.paths as objective_paths
from benchmarks.common import best_time, shared_data_dir
from benchmarks.speed.scale_table import make_table
from models.embedding.objectives import embedding_objective, free_embedding
from models.embedding.tree_embedding import TreeEmbedding
from models.ground import threads
from treeviz.services.data import PrepConfig, prepare
from treeviz.services.data.catalogue import load_dataset
from treeviz.services.experiments.training import train_run

NAME = "embeddings_scale"
TREE = {"method": "tsne", "perplexity": 15.0, "depth": 6, "l1_penalty": 100.0, "leaf": "linear", "n_mu": 12,
        "mu_factor": 1.4, "z_iter": 50, "free_iter": 1000, "tao_iter": 8, "augmented_lagrangian": True}
FULL = {"n_train": 10_000, "tree": TREE, "free_iter": 300, "ee_iter": 300}
QUICK = {"n_train": 600, "tree": {**TREE, "depth": 2, "n_mu": 2, "z_iter": 5, "free_iter": 60, "tao_iter": 2},
         "free_iter": 20, "ee_iter": 20}
EE_LAMBDA = 100.0
NEIGHBOURS = 5


@contextlib.contextmanager
def _path(kind: str, n: int) -> Iterator[None]:
    """Make ``path="auto"`` pick the fft path (``kind="fft"``) or an exact one (``"exact"``) at n points:
    the one switch the estimator reads, so ``TreeEmbedding`` runs unchanged."""
    saved = objective_paths.EXACT_MAX_POINTS
    objective_paths.EXACT_MAX_POINTS = min(saved, n - 1) if kind == "fft" else 10**12
    try:
        yield
    finally:
        objective_paths.EXACT_MAX_POINTS = saved


def _row(name: str, metric: str, ours: float, note: str, *, reduced: bool, **extra: Any) -> dict:
    return {"name": name, "metric": metric, "ours_mean": ours, "ours_std": None, "paper_mean": None,
            "paper_std": None, "protocol": "reduced" if reduced else "full", "protocol_note": note, **extra}


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.linalg.norm(a - b) / torch.linalg.norm(b))


def _data(n_train: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    data = shared_data_dir()
    path = None if data is None else data / "uci" / "pendigits.csv.gz"
    if path is None or not path.is_file():
        return None
    table = pd.read_csv(path)
    X = table.drop(columns="label").to_numpy(np.float64) / 100.0
    y = table["label"].to_numpy()
    test = min(992, X.shape[0] - n_train) if n_train < X.shape[0] else 0
    X_train, X_test, y_train, y_test = train_test_split(X, y, train_size=n_train, test_size=test, stratify=y,
                                                        random_state=0)
    return X_train, X_test, y_train, y_test


def _compare_evaluations(fft: objectives.EmbeddingObjective, exact: objectives.EmbeddingObjective,
                         Z: np.ndarray) -> dict[str, float]:
    Zt = torch.as_tensor(Z, dtype=torch.float64)
    vf, gf = fft.value_and_grad(Zt)
    ve, ge = exact.value_and_grad(Zt)
    sf, dsf = fft.repulsive_sum(Zt)
    se, dse = exact.repulsive_sum(Zt)
    t_fft = best_time(lambda: fft.value_and_grad(Zt), repeat=3)
    t_exact = best_time(lambda: exact.value_and_grad(Zt), repeat=3)
    # near a minimum ∇E is a small difference of attraction and repulsion, so the error of the
    # approximated part itself (the repulsive sum and its gradient) is reported too
    return {"fft_seconds": t_fft, "chunked_seconds": t_exact, "speedup": t_exact / t_fft,
            "value_rel_error": abs(float(vf - ve)) / abs(float(ve)), "grad_rel_error": _rel(gf, ge),
            "repulsion_rel_error": abs(float(sf - se)) / abs(float(se)), "repulsion_grad_rel_error": _rel(dsf, dse)}


def _free_runs(X: np.ndarray, method: str, iters: int, n: int) -> dict[str, Any]:
    """The same free embedding (same start, same iterations) on the fft and the chunked path."""
    out: dict[str, Any] = {}
    for kind, path in (("fft", "fft"), ("chunked", "exact")):
        start = time.perf_counter()
        free = free_embedding(X, method, perplexity=15.0, lam=EE_LAMBDA, max_iter=iters, tol=0.0, random_state=0,
                              path=path)
        out[f"{kind}_seconds"] = time.perf_counter() - start
        out[f"{kind}_objective_exact"] = float(free.objective.exact().value(free.Z))
        out[f"{kind}_Z"] = free.Z
        out[f"{kind}_objective"] = free.objective
    return out


def _tree_run(params: dict, kind: str, X_train: np.ndarray, X_test: np.ndarray, y_train: np.ndarray,
              y_test: np.ndarray) -> tuple[TreeEmbedding, dict[str, Any]]:
    with _path(kind, X_train.shape[0]):
        start = time.perf_counter()
        model = TreeEmbedding(**params, device="cpu", random_state=0).fit(X_train)
        seconds = time.perf_counter() - start

    def knn(train: np.ndarray, test: np.ndarray) -> float:
        return float(KNeighborsClassifier(NEIGHBOURS).fit(train, y_train).score(test, y_test)) if len(y_test) else None

    last = model.history_[-1]
    stats = {"fit_seconds": seconds, "E_tree_exact": model.objective_, "E_direct_exact": model.direct_fit_objective_,
             "E_free_exact": model.free_objective_, "tree_below_direct": bool(model.objective_ <
                                                                                model.direct_fit_objective_),
             "curve_ends_lower": bool(model.history_[-1]["E_tree"] < model.history_[0]["E_tree"]),
             "knn_test_mapped": knn(model.embedding_, model.transform(X_test)),
             "knn_test_mapped_direct": knn(model.direct_embedding_, model.direct_transform(X_test)),
             "free_seconds": model.history_[0]["seconds"], "n_leaves": int(last["n_leaves"]),
             "n_nonzero": int(last["n_nonzero"]), "n_nonzero_leaf": int(last["n_nonzero_leaf"]),
             "E_tree_path": [float(r["E_tree"]) for r in model.history_]}
    return model, stats


#: (source, rows or None, parameters over the app defaults) of the app-default fits.
APP_FITS = (("seattle_weather", None, {}), ("table", 20_000, {}))
APP_FITS_QUICK = (("table", 400, {"depth": 2, "n_mu": 2, "free_iter": 60, "z_iter": 10, "tao_iter": 3}),)


def time_app_fit(source: str, n: int | None, params: dict[str, Any]) -> dict[str, Any]:
    """One fit of the family's app defaults (plus ``params``) on one thread, in this process."""

    threads.apply_budget(1)
    torch.set_num_threads(1)
    if source == "table":

        data = make_table(int(n))
    else:
        data = load_dataset(source)
    prepared = prepare(data, PrepConfig(seed=0))
    c0, t0 = time.process_time(), time.perf_counter()
    model, metrics = train_run("tree_embedding", "embedding", params or None, prepared, device="cpu")
    fit_s, wall_s = time.process_time() - c0, time.perf_counter() - t0
    return {"source": source, "rows": int(data.X.shape[0]), "n_train": int(prepared.X_train.shape[0]),
            "params": params, "fit_s": fit_s, "wall_s": wall_s,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "free_iter_used": int(model.history_[0]["z_iter"]),
            "z_iter_used": [int(r["z_iter"]) for r in model.history_[1:]],
            "objective": float(model.objective_), "free_objective": float(model.free_objective_),
            **{k: float(v) for k, v in metrics.items() if k.endswith(("trustworthiness", "knn_accuracy"))}}


def _app_fit_in_child(source: str, n: int | None, params: dict[str, Any]) -> dict[str, Any]:
    """:func:`time_app_fit` in a fresh process (so that ``peak_mb`` is this fit's), one thread."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "benchmarks.speed.embeddings_scale", "--fit", source, "--params", json.dumps(params)]
    if n is not None:
        cmd += ["--n", str(n)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    settings = QUICK if quick else FULL
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    rows: list[dict] = []
    try:
        # one BLAS thread too: SciPy's eigh of a 600 × 600 matrix took 4.7 s with OpenBLAS's two
        # threads on the shared 2-core machine, 0.04 s with one
        with threadpool_limits(1):
            data = _data(settings["n_train"])
            if data is not None:
                rows = _rows(settings, *data, quick=quick)
    finally:
        torch.set_num_threads(threads)
    app = [_app_fit_in_child(*fit) for fit in (APP_FITS_QUICK if quick else APP_FITS)]
    table = [{"row": r["name"], "metric": r["metric"], "ours": f"{r['ours_mean']:.4g}",
              "fft s": f"{r['fft_seconds']:.3g}", "exact s": f"{r['chunked_seconds']:.3g}",
              "exact": "—" if r.get("exact_value") is None else f"{r['exact_value']:.4g}"} for r in rows]
    table += [{"row": f"app defaults, {a['source']} ({a['n_train']} training rows)", "metric": "fit CPU s",
               "ours": f"{a['fit_s']:.4g}", "fft s": "—", "exact s": "—", "exact": f"{a['peak_mb']:.0f} MB peak"}
              for a in app]
    return {"rows": table, "results": {"rows": rows, "app_defaults": app, "total_seconds": time.perf_counter() - start,
                                       "skipped": None if rows else "pendigits not found in the shared data"}}


def _rows(settings: dict, X_train: np.ndarray, X_test: np.ndarray, y_train: np.ndarray, y_test: np.ndarray, *,
          quick: bool) -> list[dict]:
    n = X_train.shape[0]
    tree = settings["tree"]
    note = (f"pendigits N={n} train / {X_test.shape[0]} test, features /100, t-SNE perplexity 15, 1 torch and 1 BLAS "
            "thread"
            + (" (quick)" if quick else ""))
    rows = []
    # the whole tree embedding, as the estimator runs it at this size (fft), then with the exact path
    model, fft_stats = _tree_run(tree, "fft", X_train, X_test, y_train, y_test)
    _, exact_stats = _tree_run(tree, "exact", X_train, X_test, y_train, y_test)
    schedule = (f"depth {tree['depth']}, linear leaves, lambda {tree['l1_penalty']}, {tree['n_mu']} mu steps "
                f"x{tree['mu_factor']}, {tree['z_iter']} Z-step and {tree['tao_iter']} TAO iterations per step, "
                f"free embedding {tree['free_iter']} iterations at most; reduced")
    rows.append(_row(f"pendigits {n} t-SNE: tree embedding E(F(X)), fft path", "KL (exact)", fft_stats["E_tree_exact"],
                     f"{note}; {schedule}; no paper number (not in the thesis)", reduced=True,
                     fft_seconds=fft_stats["fit_seconds"], chunked_seconds=exact_stats["fit_seconds"],
                     exact_value=exact_stats["E_tree_exact"], fft_run=fft_stats, exact_run=exact_stats))
    # one evaluation, fft against chunked, at the free embedding and at the tree embedding
    tsne_fft = embedding_objective(X_train, "tsne", perplexity=15.0, path="fft")
    tsne_exact = tsne_fft.exact()
    for label, Z in (("free embedding Z0", model.free_embedding_), ("tree embedding F(X)", model.embedding_)):
        stats = _compare_evaluations(tsne_fft, tsne_exact, Z)
        rows.append(_row(f"pendigits {n} t-SNE: value_and_grad at the {label}, fft path", "seconds",
                         stats["fft_seconds"], f"{note}; best of 3 rounds; no paper number", reduced=quick,
                         **stats))
    # free embeddings on both paths, and one EE evaluation at the EE result
    for method, iters, metric in (("tsne", settings["free_iter"], "KL (exact)"),
                                  ("ee", settings["ee_iter"], "EE objective (exact)")):
        runs = _free_runs(X_train, method, iters, n)
        label = "t-SNE" if method == "tsne" else f"EE (lambda {EE_LAMBDA:g})"
        rows.append(_row(f"pendigits {n} {label}: free embedding, {iters} iterations, fft path", metric,
                         runs["fft_objective_exact"], f"{note}; same start, same iterations; no paper number",
                         reduced=quick,
                         fft_seconds=runs["fft_seconds"], chunked_seconds=runs["chunked_seconds"],
                         exact_value=runs["chunked_objective_exact"]))
        if method == "ee":
            stats = _compare_evaluations(runs["fft_objective"], runs["fft_objective"].exact(), runs["fft_Z"])
            rows.append(_row(f"pendigits {n} {label}: value_and_grad at the free embedding, fft path", "seconds",
                             stats["fft_seconds"], f"{note}; best of 3 rounds; no paper number", reduced=quick,
                             **stats))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="One timed fit of the tree embedding's app defaults (JSON on stdout).")
    ap.add_argument("--fit", required=True, help="'table' (the scale benchmark's synthetic table) or a sample key")
    ap.add_argument("--n", type=int, default=None, help="rows of the synthetic table")
    ap.add_argument("--params", default="{}", help="JSON of parameters over the defaults")
    a = ap.parse_args(argv)
    print(json.dumps(time_app_fit(a.fit, a.n, json.loads(a.params))))
    return 0


if __name__ == "__main__":
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    sys.exit(main())
