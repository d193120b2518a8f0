"""The tree embedding beside the embedding libraries a user would pick instead: openTSNE and UMAP.

Protocol (``python -m benchmarks.report.run embedding_peers``, or this module with ``--data`` and
``--methods`` to choose): for each data set, scikit-learn's stratified 80/20 train/test split (seed
0) and standard scaling fitted on the training rows. Each method runs in a fresh process of its own
(so nothing compiled or cached by one helps another), on one thread (torch, BLAS, numba and the
libraries' own ``n_jobs``), and the methods take turns data set by data set:

* ``tree_default``: :class:`~models.embedding.tree_embedding.TreeEmbedding` with the family's app
  defaults for the table (its depth and λ chosen from the rows), fitted on the training rows; the
  test rows are mapped through the tree;
* ``tree_quick``: the same with the family's "quick" preset;
* ``opentsne``: openTSNE's ``TSNE`` with its defaults (perplexity 30, ``n_jobs=1``,
  ``random_state=0``), ``fit`` on the training rows and ``transform`` of the test rows;
* ``umap``: UMAP with its defaults (``random_state=0``), ``fit`` and ``transform``.

Recorded per method: the process CPU seconds of fit + transform (``cpu_s``), of the free embedding
alone (the tree embedding's ``free_seconds``; openTSNE's ``fit``), the KL divergence of the free
embedding, each under the method's own affinities (the tree embedding's ``free_objective_`` at its
perplexity, 15; openTSNE's ``kl_divergence`` at 30; UMAP exposes no objective), and the mapped
10-NN accuracy: a 10-nearest-neighbour
classifier fitted on the training rows' embedding, scored on the test rows' mapped coordinates.

Rows (``results.rows``), one per tree-embedding setting and peer: ``name``, ``ours_s``, ``peer``,
``peer_s``, ``ratio`` (ours / peer, CPU seconds of fit + transform), ``ours_knn``, ``peer_knn``, and
``ours_free_s``, ``peer_fit_s``, ``free_ratio``, ``ours_kl``, ``peer_kl``. A method that ran past
:data:`LIMIT_S` of wall time is stopped; its row says so (``ours_s`` None, ``note``).

The data: digits (1 797 × 64, scikit-learn), pendigits (10 992 × 16) and the 5 000-image MNIST
subset from ``../shared/data`` (left out, with a note, where absent), and a 100 000-row synthetic
table (:func:`synthetic`). ``--quick`` runs digits' first 500 rows with the quick preset only beside
both peers (the numbers then say little).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import StandardScaler

from benchmarks.common import format_table, shared_data_dir, write_results
from models.registry import get_family

NAME = "embedding_peers"
DATASETS = ("digits", "pendigits", "mnist", "synthetic_100k")
OURS = ("tree_default", "tree_quick")
PEERS = ("opentsne", "umap")
#: The order the methods of a data set run in: ours and a peer by turns.
ORDER = ("tree_default", "opentsne", "tree_quick", "umap")
#: Wall seconds a method may run on one data set before it is stopped.
LIMIT_S = 3600
#: Neighbours of the mapped-accuracy classifier.
NEIGHBOURS = 10
#: The threads every library gets: one.
ONE_THREAD = dict.fromkeys(("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
                            "TREEVIZ_THREADS"), "1")
#: The files of the shared data sets, under ``../shared/data``.
FILES = {"pendigits": "uci/pendigits.csv.gz", "mnist": "mnist/mnist_5k.csv.gz"}
QUICK_ROWS = 500


def synthetic() -> tuple[np.ndarray, np.ndarray]:
    """100 000 rows × 20 features, 5 classes of 2 clusters each (10 informative features, seed 0)."""
    return make_classification(n_samples=100_000, n_features=20, n_informative=10, n_redundant=5, n_classes=5,
                               n_clusters_per_class=2, random_state=0)


def load(name: str, quick: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
    """The data set ``name`` as (X, y), or None where its file is absent."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return (X[:QUICK_ROWS], y[:QUICK_ROWS]) if quick else (X, y)
    if name == "synthetic_100k":
        return synthetic()
    root = shared_data_dir()
    path = None if root is None else root / FILES[name]
    if path is None or not path.is_file():
        return None
    table = pd.read_csv(path)
    y = table.pop("label").to_numpy()
    return table.to_numpy(np.float64), y


def split(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Stratified 80/20 (seed 0), standard scaling fitted on the training rows."""
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, stratify=y, random_state=0)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def _tree(preset: str | None):
    family = get_family("tree_embedding")

    def fit(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        params = family.validate_params(family.defaults("embedding", preset), "embedding")
        model = family.make("embedding", {**params, "device": "cpu"})
        model.fit(X_train)
        return model.embedding_, model.transform(X_test), {
            "free_s": float(model.history_[0]["free_seconds"]), "kl": float(model.free_objective_),
            "depth": int(model.depth_)}
    return fit


def _opentsne(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    from openTSNE import TSNE  # deferred: each method runs in a process of its own, which imports only its library

    start = time.process_time()
    embedding = TSNE(n_jobs=1, random_state=0).fit(X_train)
    fit_s = time.process_time() - start
    return np.asarray(embedding), np.asarray(embedding.transform(X_test)), {
        "free_s": fit_s, "kl": float(embedding.kl_divergence)}


def _umap(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
    from umap import UMAP  # deferred: each method runs in a process of its own, which imports only its library

    model = UMAP(random_state=0, n_jobs=1).fit(X_train)
    return model.embedding_, model.transform(X_test), {"free_s": None, "kl": None}


METHODS = {"tree_default": _tree(None), "tree_quick": _tree("quick"), "opentsne": _opentsne, "umap": _umap}


def measure(method: str, X_train: np.ndarray, X_test: np.ndarray, y_train: np.ndarray, y_test: np.ndarray
            ) -> dict[str, Any]:
    """Fit ``method`` on the training rows and map the test rows, in this process: CPU seconds,
    the free embedding's seconds and KL, and the mapped 10-NN accuracy."""
    start, wall = time.process_time(), time.perf_counter()
    Z_train, Z_test, extra = METHODS[method](X_train, X_test)
    cpu_s, wall_s = time.process_time() - start, time.perf_counter() - wall
    knn = KNeighborsClassifier(NEIGHBOURS).fit(Z_train, y_train).score(Z_test, y_test)
    return {"method": method, "cpu_s": cpu_s, "wall_s": wall_s, "knn": float(knn), **extra}


def measure_in_child(method: str, data: str, quick: bool) -> dict[str, Any]:
    """:func:`measure` in a fresh process on one thread, stopped after :data:`LIMIT_S` wall seconds."""
    cmd = [sys.executable, "-m", "benchmarks.speed.embedding_peers", "--child", method, data, *(["--quick"] * quick)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **ONE_THREAD}, check=True,
                             timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        return {"method": method, "cpu_s": None, "note": f"stopped after {LIMIT_S} s of wall time"}
    except subprocess.CalledProcessError as err:
        return {"method": method, "cpu_s": None, "note": f"failed: {err.stderr.strip().splitlines()[-1:]}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def rows_of(data: str, runs: dict[str, dict[str, Any]], protocol: str, note: str = "") -> list[dict[str, Any]]:
    """One row per tree-embedding setting and peer, from the methods' measurements on ``data``."""
    rows = []
    for ours in (m for m in OURS if m in runs):
        for peer in (m for m in PEERS if m in runs):
            a, b = runs[ours], runs[peer]
            ratio = a["cpu_s"] / b["cpu_s"] if a.get("cpu_s") and b.get("cpu_s") else None
            free = a.get("free_s") / b["free_s"] if a.get("free_s") and b.get("free_s") else None
            rows.append({
                "name": f"{data}: tree embedding ({'defaults' if ours == 'tree_default' else 'quick'}) vs {peer}",
                "ours_s": a.get("cpu_s"), "peer": peer, "peer_s": b.get("cpu_s"), "ratio": ratio,
                "ours_knn": a.get("knn"), "peer_knn": b.get("knn"), "ours_free_s": a.get("free_s"),
                "peer_fit_s": b.get("free_s"), "free_ratio": free, "ours_kl": a.get("kl"), "peer_kl": b.get("kl"),
                "note": "; ".join(r["note"] for r in (a, b) if r.get("note")), "protocol": protocol,
                **({"protocol_note": note} if note else {})})
    return rows


def run(quick: bool = False, data: tuple[str, ...] = DATASETS, methods: tuple[str, ...] = ORDER) -> dict[str, Any]:
    datasets = ("digits",) if quick else data
    chosen = [m for m in ORDER if m in methods and not (quick and m == "tree_default")]
    rows: list[dict[str, Any]] = []
    measured: dict[str, dict[str, Any]] = {}
    skipped = []
    for name in datasets:
        if load(name, quick) is None:
            skipped.append(f"{name}: not found in the shared data")
            continue
        runs = {m: measure_in_child(m, name, quick) for m in chosen}
        measured[name] = runs
        full = not quick and set(chosen) == set(ORDER)
        note = "" if full else ("digits' first 500 rows, the quick preset only" if quick
                                else "methods run: " + ", ".join(chosen))
        rows += rows_of(name, runs, "full" if full else "reduced", note)
    table = [{"row": r["name"], "ours s": _num(r["ours_s"]), "peer s": _num(r["peer_s"]), "ratio": _num(r["ratio"]),
              "free ratio": _num(r["free_ratio"]), "ours 10-NN": _num(r["ours_knn"]),
              "peer 10-NN": _num(r["peer_knn"]), "note": r["note"]} for r in rows]
    return {"rows": table, "results": {"rows": rows, "measured": measured, "skipped": skipped}}


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--data", nargs="+", choices=DATASETS, default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", choices=ORDER, default=list(ORDER))
    parser.add_argument("--child", nargs=2, metavar=("METHOD", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        import torch  # deferred: only the measuring child sets its threads

        torch.set_num_threads(1)
        method, name = args.child
        X, y = load(name, args.quick)
        print(json.dumps(measure(method, *split(X, y))))
        return 0
    out = run(args.quick, tuple(args.data), tuple(args.methods))
    print(format_table(out["rows"]))
    # a run of some data sets with every method is a full run of those (it replaces the stored file)
    path = write_results(NAME, out["results"], quick=bool(args.quick or args.methods != list(ORDER)))
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
