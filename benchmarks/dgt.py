"""DGT (dense gradient trees, Karthikeyan et al., TMLR 2022) against the published numbers.

Parts (each row carries its ``part``; mean ± population std, ddof = 0, over every split × seed run):

* ``table1`` — supervised regression, test RMSE in the target's units: DGT (h = 6, L = 3, the
  paper's Table 12 widths, RMSprop recipe, batch 128, 200 epochs, best validation epoch kept) and
  scikit-learn CART (``max_depth`` in {2, 4, 6, 8, 10} and ``min_samples_leaf`` from the authors'
  grid 1, 2..20, 21..100, 101..150, chosen on the validation part) on Abalone and Comp-Activ
  (cpu_act), each over the five shipped splits. Every DGT row also reports the mean seconds per
  epoch (``epoch_s_mean``).
* ``table2`` — supervised classification, test accuracy %: PenDigits (h = 8), SatImage (h = 6),
  Letter (h = 10), L = 3, on seeded stratified splits of the paper's sizes (7494 / 3498,
  4435 / 2000, 16000 / 4000), 20 % of the training part held out (stratified) for validation.
  Letter at h = 10, L = 3 is about 7 M parameters (about 0.5 s per epoch on an H100, 2.2–2.8 s
  on one core of a 2-core CPU machine, measured), so without a GPU this part defaults to 30
  epochs (marked reduced); ``TREEVIZ_DGT_EPOCHS=200`` runs the paper's 200.
* ``table4`` — DGT-Forest (bagged DGT trees on bootstrap samples, mean prediction), test RMSE on
  Abalone and Comp-Activ, h = 8, L = 3, on split 0: Table 4 ran its 10 seeds on one split
  (:data:`FOREST_PAPER_SPLITS`; ``TREEVIZ_DGT_SPLITS`` above 1 adds the chosen setting's seed 0
  on the other splits beside the row). A forest trains as chunks of trees, one per worker
  process, each a ``DGTForestRegressor`` with its own seed; the chunks' predictions pool into the
  forest's mean. Every finished chunk is one line of ``benchmarks/results/parts/dgt_forest.jsonl``
  (its validation and test predictions), so the paper's full protocol (``TREEVIZ_DGT_TUNE=grid
  TREEVIZ_DGT_SEEDS=10``, 30 trees: 49 forests a data set, measured in ``docs/dgt.md``) can be
  run in parts: a stopped run resumes, and a run with more seeds fits only the forests the log
  lacks.
* ``table6`` — bandit regression on Abalone, two-point loss-difference estimator, squared loss:
  ``DGTBanditRegressor`` (h = 6, L = 1) and the linear bandit baseline ``LinearBanditRegressor``,
  final test RMSE after a stream of passes over the training part. If ``models.dgt.bandit`` is
  missing, the rows say so instead of failing.
* ``speed`` — process CPU seconds per training epoch of DGT on one torch thread (median over the
  epochs after the first, which carries one-off warm-up), at the two settings the side-by-side
  comparison with the authors' code uses: Abalone split 0 (h = 6, L = 3, batch 128, ℓ1 1e-5,
  grad clip 0.01, scaled quantiser; its test RMSE too) and the 20 000 × 50 synthetic regression
  (h = 8, L = 3, batch 512; the recipe of ``../shared/reference/make_synth.py``, rebuilt here). Our
  side only: the side-by-side figures (both codes on the same machine) are
  ``benchmarks/reference_speed.py``'s.

Data (the papers' reference folder, ``../shared/data`` or ``TREEVIZ_SHARED_DATA``): the five
Abalone / cpu_act shuffles shipped with the authors' code (their training part is the paper's
0.5 + 0.1, so a seeded sixth of it — seeded by the split index — is carved out as validation), and
the UCI PenDigits, SatImage and Letter tables. Models z-score the features and min-max the
regression target on their training rows themselves; RMSE is in the target's units.

Hyper-parameters. With ``TREEVIZ_DGT_TUNE=grid`` (the default for ``table1``) ℓ1 λ and RMSprop
momentum are chosen on the validation part of split 0 with seed 0 over the paper's grid (λ in
{5e-5, 1e-5, 5e-6, 1e-6, 0}, momentum in {0, 0.3}, plus 0.8 for classification), then that
configuration is rerun on every split × seed, as the authors' selection scripts do. Otherwise λ =
1e-5, momentum 0 are fixed, and the row's protocol says so. Forests use λ = 1e-5, momentum 0 and
bootstrap fraction 1 at height 8 unless ``TREEVIZ_DGT_TUNE=grid``, which searches the paper's
forest grid (momentum in {0, 0.2, 0.3, 0.4, 0.6} × fraction in {0.7, 0.85, 0.9, 1}) at heights 6
and 8 on split 0 / seed 0 with the λ1 Table 1 chose for the data set (the paper's forests take
DGT's per-tree settings, whose height is 6 on both data sets, and Table 4 gives their maximum
height, 8); the bandit rows use the paper's defaults (δ = 0.5, learning rate 1e-3). Heights are
the paper's best heights, not re-chosen (the forests' grid excepted).

A row's ``protocol`` dict holds every setting, and ``protocol["reduced"]`` (with the word
"reduced" in ``protocol["summary"]``) says how the run is smaller than the paper's (fewer than
10 seeds, fewer splits, epochs, trees, no tuning, a subsample in ``--quick``); it is absent only
for a full-size row.

Environment variables (all optional):

* ``TREEVIZ_DGT_PARTS`` — comma list of parts to run (default all: table1,table2,table4,table6,speed).
* ``TREEVIZ_DGT_DATASETS`` — comma list restricting the datasets inside the parts (e.g. ``letter``).
* ``TREEVIZ_DGT_SEEDS`` — model seeds per split (default 1).
* ``TREEVIZ_DGT_SPLITS`` — splits per dataset, for every part (default 5 for table1 and table6, 1
  for the table4 forests and for the classification sets, whose stratified split is drawn anew
  per split index; at most 5 for the regression sets).
* ``TREEVIZ_DGT_EPOCHS`` — training epochs (default 200; table2 on a machine without CUDA: 30).
* ``TREEVIZ_DGT_L1_GRID`` — comma list: the λ1 values the grid tries (default the paper's five; a
  shorter list is marked reduced).
* ``TREEVIZ_DGT_TUNE`` — ``grid`` (tune table1, table2 and the table4 forests), ``fixed`` (tune
  nothing) or ``auto`` (default: tune table1 only).
* ``TREEVIZ_DGT_REUSE_TUNING`` — ``1``: take the grid points the previous file already scored for
  the same row trained the same way (height, layers, epochs, batch, device) instead of refitting
  them; the fits are seeded, so only the missing points are fitted (each reused score carries
  ``reused_from``). Growing Letter's grid or its seeds then costs only the new fits. Table 6's
  authors'-loop row reuses its λ1 × momentum × learning-rate grid the same way.
* ``TREEVIZ_DGT_TREES`` — trees per forest (default 30 with CUDA, 10 without).
* ``TREEVIZ_DGT_FOREST_DEPTH`` — the forests' tree height, or a comma list of heights for
  ``TREEVIZ_DGT_TUNE=grid`` to search (default: 6,8 with the grid, else 8). Table 4 gives the
  forests' maximum height (8 for Abalone and Comp-Activ), not each tree's; 6 is DGT's per-tree
  height on both (Table 1), and the paper's forests take DGT's per-tree settings.
* ``TREEVIZ_DGT_BANDIT_PASSES`` — passes of the bandit stream over the training part (default 100,
  about 210 000 rounds; the paper does not state its stream length).
* ``TREEVIZ_DGT_DEVICE`` — ``cpu``, ``cuda`` or ``auto`` for the training parts (default: CUDA when
  present, except in ``--quick`` and for the batch-1 bandit stream, which run on the CPU). On a
  16-core H100 machine 8 processes sharing the GPU trained h = 8 Abalone trees at about 0.13 s
  per epoch each, against about 1.2 s for each of 16 single-threaded CPU processes.
* ``TREEVIZ_DGT_JOBS`` — worker processes (default: one per CPU on a machine with more than 2
  CPUs, else 1 (in this process); at most 8 on CUDA). Workers run torch with one intra-op thread
  when the machine has more than 2 CPUs.

Splitting a long run and merging: a run writes ``benchmarks/results/dgt.json`` (or under
``TREEVIZ_BENCH_RESULTS``) holding its own rows **plus** the rows of the previous file for every
(part, dataset) it did not rerun, provided that file came from the same mode (``--quick`` or
not). So on a machine with a per-command time limit (10 minutes, say) run, e.g.::

    TREEVIZ_DGT_PARTS=table1,speed python -m benchmarks.run dgt
    TREEVIZ_DGT_PARTS=table2 python -m benchmarks.run dgt
    TREEVIZ_DGT_PARTS=table4 python -m benchmarks.run dgt
    TREEVIZ_DGT_PARTS=table6 python -m benchmarks.run dgt

(with more seeds, splits or tuning, split further by dataset: ``TREEVIZ_DGT_DATASETS=letter``)

and the file ends with every row; ``results["runs"]`` lists each run's settings and machine, and
each row carries its own ``machine`` and ``run_at``. Delete the file to start afresh.

Device mode: ``run(device="cuda")`` (``python -m benchmarks.run dgt --device cuda``) is timing only
(:func:`device_workloads`): seconds per training epoch of DGT on the CPU (torch's default threads,
which the estimator lowers to one for a small network) and on the GPU in this process, for the
speed part's Abalone tree (h = 6, L = 3, batch 128, 2088 rows) and for Table 2's Letter tree
(h = 10, L = 3, batch 128, 12 800 training rows, about 7 M parameters). Without the shared data
both use synthetic data of the same shape (the rows say which). A fit of a few epochs is timed
whole and divided by its epochs. The rows go under ``results["device_timing"]`` of ``dgt.json``;
every other key of the file is kept. Under a minute on a 16-core GPU machine (estimated from
CPU timings; the CPU's Letter epochs are the slow side, their rounds stop after 25 s). The other
parts and ``TREEVIZ_DGT_*`` are not used there.

``--quick`` (CI smoke test, about a minute on two CPU cores): one split, one seed, 2 epochs,
classification on 1200-row subsamples at h ≤ 4, 2-tree forests at h = 4, a 500-round bandit
stream at h = 4, everything on the CPU; 3 speed epochs (one torch thread only on a machine with 2
CPUs or fewer, where the default threads fight other work). Its numbers are not comparable with
the paper.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import platform
import time
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeRegressor

from benchmarks import device_timing
from benchmarks.common import (
    PartLog,
    read_npz_split,
    read_uci,
    required_data_dir,
    results_dir,
    run_keyed,
    shared_data_dir,
)
from models.base import Callback, TrainingTensors
from models.dgt.estimators import DGTClassifier, DGTRegressor
from models.dgt.forest import DGTForestRegressor
from models.dgt.network import DGTNetwork
from models.dgt.train import TrainConfig, fit_network

try:  # the bandit learners are optional here: without them the table6 rows say so
    from models.dgt import bandit as _bandit
except ImportError as _exc:
    _bandit, _BANDIT_IMPORT_ERROR = None, str(_exc)

NAME = "dgt"
#: The Table 6 DGT-Bandit row run the way the authors' code runs its two-point bandit mode.
AUTHORS_LOOP = "DGT-Bandit (the authors' loop)"
PARTS = ("table1", "table2", "table4", "table6", "speed")
REGRESSION = ("abalone", "cpu_act")
CLASSIFICATION = ("pendigits", "satimage", "letter")
#: The paper's split sizes (train, test) of the classification sets.
UCI_SPLITS = {"pendigits": (7494, 3498), "satimage": (4435, 2000), "letter": (16000, 4000)}
QUICK_UCI_SPLITS = dict.fromkeys(UCI_SPLITS, (1200, 500))
#: How our seeded random splits differ from the original ones the paper used.
SPLIT_NOTE = {
    "pendigits": "random stratified split of all 10992 rows; the original split is by writer (test writers unseen "
                 "in training), so a random split is easier and accuracies run higher than the paper's",
    "satimage": "random stratified split of all 6435 rows, not the original 4435 / 2000 files",
    "letter": "random stratified split of all 20000 rows, not the usual first 16000 / last 4000",
}
#: The paper's best heights.
HEIGHT = {("table1", "abalone"): 6, ("table1", "cpu_act"): 6, ("table2", "pendigits"): 8,
          ("table2", "satimage"): 6, ("table2", "letter"): 10, ("table4", "abalone"): 8,
          ("table4", "cpu_act"): 8, ("table6", "abalone"): 6}
PAPER_SEEDS = 10
PAPER_EPOCHS = 200
PAPER_TREES = 30

#: (part, dataset, method) → (mean, std, metric, source)
PAPER: dict[tuple[str, str, str], tuple[float, float | None, str, str]] = {
    ("table1", "abalone", "DGT"): (2.15, 0.026, "rmse", "Table 1, DGT (h=6)"),
    ("table1", "abalone", "CART"): (2.29, 0.034, "rmse", "Table 1, CART"),
    ("table1", "cpu_act", "DGT"): (2.91, 0.149, "rmse", "Table 1, DGT (h=6)"),
    ("table1", "cpu_act", "CART"): (3.35, 0.221, "rmse", "Table 1, CART"),
    ("table2", "pendigits", "DGT"): (96.36, 0.25, "acc_pct", "Table 2, DGT (h=8)"),
    ("table2", "satimage", "DGT"): (86.64, 0.95, "acc_pct", "Table 2, DGT (h=6)"),
    ("table2", "letter", "DGT"): (86.13, 0.72, "acc_pct", "Table 2, DGT (h=10)"),
    ("table4", "abalone", "DGT-Forest"): (2.08, 0.00, "rmse", "Table 4, DGT-Forest, 30 trees (h=8)"),
    ("table4", "cpu_act", "DGT-Forest"): (2.63, 0.08, "rmse", "Table 4, DGT-Forest, 30 trees (h=8)"),
    ("table6", "abalone", "DGT-Bandit"): (2.16, 0.030, "rmse", "Table 6, DGT-Bandit, two-point, squared loss"),
    ("table6", "abalone", "Linear bandit"): (2.28, 0.016, "rmse", "Table 6, linear, two-point, squared loss"),
    ("table6", "abalone", AUTHORS_LOOP): (2.16, 0.030, "rmse", "Table 6, DGT-Bandit, two-point, squared loss, "
                                                               "run as the authors' code runs it"),
}

L1_GRID = (5e-5, 1e-5, 5e-6, 1e-6, 0.0)
MOMENTUM_GRID = {"regression": (0.0, 0.3), "classification": (0.0, 0.3, 0.8)}
FIXED = {"l1_penalty": 1e-5, "momentum": 0.0}
#: The paper's DGT-Forest grid (searched with ``TREEVIZ_DGT_TUNE=grid``): RMSprop momentum and the
#: bootstrap sample's size as a fraction of the training rows.
FOREST_MOMENTUM = (0.0, 0.2, 0.3, 0.4, 0.6)
FOREST_FRACTION = (0.7, 0.85, 0.9, 1.0)
#: The forests' tree heights searched with the grid: Table 4's 8 (the forests' maximum height) and
#: 6, the height of DGT's per-tree settings (Table 1's best height on Abalone and Comp-Activ).
FOREST_HEIGHTS = (6, 8)
#: Table 4's forests ran their 10 seeds on one split, not on each of the five: the table gives
#: "10 seeds", and its XGBoost column is ± 0.00 on Abalone and Comp-Activ, where across the five
#: splits a deterministic method varies (Table 1's Ridge: ± 0.016 and ± 0.506; measured on our
#: copies of the splits by ``python -m benchmarks.dgt_table4_splits``). Split 0 is the first
#: shuffle (the authors' loader reads ``abalone0.npz`` for shuffle seed 1).
FOREST_PAPER_SPLITS = 1
#: The paper's learning rates for bandit regression.
AUTHORS_LOOP_LR = (1e-2, 1e-3)
CART_DEPTHS = (2, 4, 6, 8, 10)
CART_LEAF_GRID = (1, *range(2, 21, 2), *range(21, 101, 4), *range(101, 151, 5))
BANDIT = {"estimator": "two_point", "delta": 0.5, "loss": "squared", "learning_rate": 1e-3}
#: Passes of the bandit stream over the training part (the paper does not state its stream length;
#: on Abalone split 0 both learners' held-out RMSE was roughly flat after about 30 of 100 passes).
BANDIT_PASSES = 100
#: microsoft/DGT's own code (HEAD f5e91b2) on the five Abalone splits, run here with one thread
#: (``--black_box smart2p --br 0.5`` against no flag; h 6, over_param [[16,16]], batch 128, 200
#: epochs, ℓ1 1e-5, its run.sh recipe otherwise), test RMSE per split. Its bandit mode draws one
#: sign u per mini-batch of 128, forms (ℓ(ŷ + δu) − ℓ(ŷ − δu))·u/(2δ), which for the squared loss
#: is the exact derivative 2(ŷ − y), and back-propagates it inside the supervised loop (cosine warm
#: restarts, gradient clipping, the best validation epoch kept): the paper's 2.16 is that loop.
AUTHORS_BANDIT_REFERENCE: dict[str, list[float]] = {
    "bandit mode (smart2p), splits 0-4": [2.127, 2.1612, 2.2228, 2.1632, 2.227],  # 2.180 ± 0.039
    "supervised, splits 0-4": [2.1431, 2.1547, 2.2152, 2.2127, 2.2002],  # 2.185 ± 0.030
}
QUICK_EPOCHS = 2


# ------------------------------------------------------------------------------------------ settings
def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    value = int(raw)
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


def _env_floats(name: str, default: tuple[float, ...]) -> tuple[float, ...]:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        values = tuple(dict.fromkeys(float(v) for v in raw.split(",") if v.strip()))
    except ValueError:
        raise ValueError(f"{name} must be a comma list of numbers, got {raw!r}") from None
    if not values or min(values) < 0:
        raise ValueError(f"{name} must list penalties of at least 0, got {raw!r}")
    return values


def _env_heights(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        values = tuple(sorted({int(v) for v in raw.split(",") if v.strip()}))
    except ValueError:
        raise ValueError(f"{name} must be a tree height or a comma list of heights, got {raw!r}") from None
    if not values or min(values) < 1:
        raise ValueError(f"{name} must list heights of at least 1, got {raw!r}")
    return values


def _env_list(name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    raw = os.environ.get(name, "").strip()
    if not raw or raw.lower() == "all":
        return allowed
    items = tuple(dict.fromkeys(s.strip().lower() for s in raw.split(",") if s.strip()))
    unknown = sorted(set(items) - set(allowed))
    if unknown:
        raise ValueError(f"{name}: unknown {', '.join(unknown)}; known: {', '.join(allowed)}")
    return items


def settings(quick: bool) -> dict[str, Any]:
    """The run's settings from the environment (see the module docstring)."""
    cuda = torch.cuda.is_available()
    cpus = os.cpu_count() or 1
    tune = os.environ.get("TREEVIZ_DGT_TUNE", "auto").strip().lower() or "auto"
    if tune not in ("auto", "grid", "fixed"):
        raise ValueError(f"TREEVIZ_DGT_TUNE must be auto, grid or fixed, got {tune!r}")
    device = os.environ.get("TREEVIZ_DGT_DEVICE", "").strip().lower() or None
    if device not in (None, "auto", "cpu", "cuda"):
        raise ValueError(f"TREEVIZ_DGT_DEVICE must be cpu, cuda or auto, got {device!r}")
    if device == "cuda" and not cuda:
        raise ValueError("TREEVIZ_DGT_DEVICE=cuda but torch sees no GPU")
    if device == "auto":
        device = "cuda" if cuda else "cpu"
    s = {
        "parts": _env_list("TREEVIZ_DGT_PARTS", PARTS),
        "datasets": _env_list("TREEVIZ_DGT_DATASETS", REGRESSION + CLASSIFICATION),
        "seeds": 1 if quick else _env_int("TREEVIZ_DGT_SEEDS", 1),
        "splits_regression": 1 if quick else min(5, _env_int("TREEVIZ_DGT_SPLITS", 5)),
        "splits_forest": 1 if quick else min(5, _env_int("TREEVIZ_DGT_SPLITS", 1)),
        "splits_classification": 1 if quick else _env_int("TREEVIZ_DGT_SPLITS", 1),
        "epochs": QUICK_EPOCHS if quick else _env_int("TREEVIZ_DGT_EPOCHS", PAPER_EPOCHS),
        "epochs_table2": (QUICK_EPOCHS if quick else
                          _env_int("TREEVIZ_DGT_EPOCHS", PAPER_EPOCHS if cuda else 30)),
        "tune_table1": not quick and tune in ("auto", "grid"),
        "tune_table2": not quick and tune == "grid",
        "tune_table4": not quick and tune == "grid",
        "trees": 2 if quick else _env_int("TREEVIZ_DGT_TREES", PAPER_TREES if cuda else 10),
        "forest_depths": (4,) if quick else _env_heights(
            "TREEVIZ_DGT_FOREST_DEPTH", FOREST_HEIGHTS if tune == "grid" else (HEIGHT[("table4", "abalone")],)),
        "l1_grid": _env_floats("TREEVIZ_DGT_L1_GRID", L1_GRID),
        "bandit_passes": 1 if quick else _env_int("TREEVIZ_DGT_BANDIT_PASSES", BANDIT_PASSES),
        "device": device or ("cuda" if cuda and not quick else "cpu"),
        "device_bandit": device or "cpu",
        "cpus": cpus,
        "one_thread_workers": cpus > 2,
        "jobs": _env_int("TREEVIZ_DGT_JOBS", cpus if cpus > 2 else 1),
        "speed_epochs": 3 if quick else 11,
        "reuse_tuning": not quick and os.environ.get("TREEVIZ_DGT_REUSE_TUNING", "").strip() == "1",
        "quick": quick,
    }
    return s


def _jobs_for(s: dict[str, Any], device: str) -> int:
    return min(s["jobs"], 8) if device == "cuda" else s["jobs"]


# ------------------------------------------------------------------------------------------ data
def _data_dir() -> Path:
    return required_data_dir("the dgt benchmark needs dgt/abalone, dgt/cpuactiv and uci/*.csv.gz")


@cache
def regression_split(dataset: str, k: int) -> tuple[np.ndarray, ...]:
    """Split ``k`` of Abalone / cpu_act: (X_train, y_train, X_val, y_val, X_test, y_test), the
    validation part a sixth of the shipped training part (seeded by ``k``)."""
    folder, stem = {"abalone": ("abalone", "abalone"), "cpu_act": ("cpuactiv", "cpu_act")}[dataset]
    Xtr, ytr, Xte, yte = read_npz_split(_data_dir() / "dgt" / folder / f"{stem}{k}.npz")
    Xa, Xv, ya, yv = train_test_split(Xtr, ytr, test_size=1 / 6, random_state=k)
    return Xa, ya, Xv, yv, Xte, yte


@cache
def load_uci(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of ``uci/<name>.csv.gz``, read once per data set."""
    return read_uci(_data_dir(), name)


@cache
def classification_split(dataset: str, k: int, quick: bool) -> tuple[np.ndarray, ...]:
    """A stratified train / test split of the paper's sizes (seeded by ``k``), 20 % of the train part
    held out, stratified, for validation: (X_train, y_train, X_val, y_val, X_test, y_test)."""
    X, y = load_uci(dataset)
    n_train, n_test = (QUICK_UCI_SPLITS if quick else UCI_SPLITS)[dataset]
    Xtr, Xte, ytr, yte = train_test_split(X, y, train_size=n_train, test_size=n_test, stratify=y, random_state=k)
    Xa, Xv, ya, yv = train_test_split(Xtr, ytr, test_size=0.2, stratify=ytr, random_state=k)
    return Xa, ya, Xv, yv, Xte, yte


def split_for(dataset: str, k: int, quick: bool) -> tuple[np.ndarray, ...]:
    return regression_split(dataset, k) if dataset in REGRESSION else classification_split(dataset, k, quick)


def rmse(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred, dtype=np.float64).reshape(-1) - y) ** 2)))


# ------------------------------------------------------------------------------------------ jobs
def _parallel(fn: Callable, jobs: list[tuple], n_jobs: int, one_thread: bool) -> list:
    """``[fn(*job) for job in jobs]``, in ``n_jobs`` worker processes when that is more than one
    (one torch thread each when ``one_thread``); in this process with one torch thread otherwise
    (on a two-core machine shared with other work, one thread per fit is the faster choice)."""
    if n_jobs <= 1 or len(jobs) <= 1:
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return [fn(*job) for job in jobs]
        finally:
            torch.set_num_threads(before)
    return Parallel(n_jobs=min(n_jobs, len(jobs)))(delayed(_in_worker)(fn, job, one_thread) for job in jobs)


def _in_worker(fn: Callable, job: tuple, one_thread: bool) -> Any:
    """``fn(*job)``, on one torch thread when ``one_thread`` (the thread count restored after, for
    a call that runs in this process)."""
    before = torch.get_num_threads()
    if one_thread:
        torch.set_num_threads(1)
    warnings.filterwarnings("ignore", category=FutureWarning)
    try:
        return fn(*job)
    finally:
        torch.set_num_threads(before)


def _tree_params(depth: int, epochs: int, device: str, l1_penalty: float, momentum: float, n_layers: int = 3) -> dict:
    return dict(depth=int(depth), n_layers=int(n_layers), l1_penalty=float(l1_penalty), momentum=float(momentum),
                batch_size=128, max_epochs=int(epochs), min_steps=0, device=device)


def fit_dgt(dataset: str, k: int, seed: int, params: dict[str, Any], quick: bool) -> dict[str, Any]:
    """One DGT fit on split ``k`` with model seed ``seed``: validation and test metric, timings."""
    Xa, ya, Xv, yv, Xte, yte = split_for(dataset, k, quick)
    regression = dataset in REGRESSION
    model = (DGTRegressor if regression else DGTClassifier)(**params, random_state=int(seed))
    start = time.perf_counter()
    model.fit(Xa, ya, eval_set=(Xv, yv))
    fit_s = time.perf_counter() - start
    if regression:
        val, test = rmse(model.predict(Xv), yv), rmse(model.predict(Xte), yte)
    else:
        val, test = (100.0 * float(np.mean(model.predict(X) == y)) for X, y in ((Xv, yv), (Xte, yte)))
    epoch_s = [float(r["epoch_s"]) for r in model.history_]
    return {"split": k, "seed": seed, "val": val, "test": test, "fit_s": fit_s, "epochs": len(epoch_s),
            "best_epoch": int(model.best_epoch_), "epoch_s_mean": float(np.mean(epoch_s)),
            "active_leaves": int(np.sum(model.leaf_reached_)) if model.leaf_reached_ is not None else None,
            "l1_penalty": params["l1_penalty"], "momentum": params["momentum"]}


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


def fit_forest_chunk(dataset: str, k: int, seed: int, chunk: int, n_trees: int, params: dict[str, Any],
                     subsample: float) -> dict[str, Any]:
    """``n_trees`` bagged DGT trees (one ``DGTForestRegressor`` on bootstrap samples of ``subsample``
    times the training rows) for chunk ``chunk`` of a forest: the chunk's mean prediction on the
    validation and test rows (7 significant digits, so that chunks pool into the forest's mean
    and a logged chunk is plain JSON), each tree's test RMSE, and timings."""
    Xa, ya, Xv, yv, Xte, yte = regression_split(dataset, k)
    forest = DGTForestRegressor(n_trees=int(n_trees), subsample=float(subsample), **params,
                                random_state=int(seed) * 1000 + int(chunk))
    start = time.perf_counter()
    forest.fit(Xa, ya, eval_set=(Xv, yv))
    fit_s = time.perf_counter() - start
    epoch_s = [float(r["epoch_s"]) for t in forest.estimators_ for r in t.history_]

    def rounded(pred: np.ndarray) -> list[float]:
        return [float(f"{v:.7g}") for v in np.asarray(pred, dtype=np.float64).ravel()]

    return {"n_trees": int(n_trees), "val_pred": rounded(forest.predict(Xv)), "test_pred": rounded(forest.predict(Xte)),
            "tree_test": [rmse(t.predict(Xte), yte) for t in forest.estimators_], "fit_s": fit_s,
            "epoch_s": float(np.mean(epoch_s))}


def bandit_classes() -> tuple[Any, Any] | str:
    """(DGTBanditRegressor, LinearBanditRegressor), or why they are not available."""
    if _bandit is None:
        return f"bandit module not available ({_BANDIT_IMPORT_ERROR})"
    missing = [n for n in ("DGTBanditRegressor", "LinearBanditRegressor") if not hasattr(_bandit, n)]
    if missing:
        return f"bandit module not available (models.dgt.bandit lacks {', '.join(missing)})"
    return _bandit.DGTBanditRegressor, _bandit.LinearBanditRegressor


def _accepted(cls: Any, wanted: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``wanted`` that ``cls(...)`` accepts."""
    names = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in names.values()):
        return dict(wanted)
    return {k: v for k, v in wanted.items() if k in names}


def fit_bandit(method: str, k: int, seed: int, passes: int, depth: int, device: str, quick: bool) -> dict[str, Any]:
    """One bandit run on Abalone split ``k``: a stream of ``passes`` passes over the training part."""
    classes = bandit_classes()
    if isinstance(classes, str):
        return {"split": k, "seed": seed, "error": classes}
    cls = classes[0] if method == "DGT-Bandit" else classes[1]
    Xa, ya, Xv, yv, Xte, yte = regression_split("abalone", k)
    if quick:
        Xa, ya = Xa[:500], ya[:500]
    n_rounds = int(passes) * Xa.shape[0]
    wanted = dict(BANDIT, n_rounds=n_rounds, device=device, random_state=int(seed))
    if method == "DGT-Bandit":
        wanted.update(depth=int(depth), n_layers=1)
    params = _accepted(cls, wanted)
    model = cls(**params)
    fit_kwargs = {}
    if "eval_set" in inspect.signature(model.fit).parameters:
        fit_kwargs["eval_set"] = (Xv, yv)
    start = time.perf_counter()
    model.fit(Xa, ya, **fit_kwargs)
    fit_s = time.perf_counter() - start
    return {"split": k, "seed": seed, "val": rmse(model.predict(Xv), yv), "test": rmse(model.predict(Xte), yte),
            "fit_s": fit_s, "n_rounds": n_rounds, "params": {k: v for k, v in params.items() if k != "device"},
            "ignored_params": sorted(set(wanted) - set(params))}


def two_point_in_batches(delta: float, generator: torch.Generator) -> Callable:
    """A loss for :func:`models.dgt.train.fit_network` that learns from two loss queries per row,
    as the authors' code's two-point bandit mode does: one Rademacher sign u per mini-batch, the
    squared losses of ŷ + δu and ŷ − δu (the only use of the targets), the estimate
    g = (ℓ(ŷ + δu) − ℓ(ŷ − δu))·u/(2δ) per row, and the surrogate mean(g·ŷ), whose gradient with
    respect to ŷ is g / batch (their ``y_pred.backward(lp / batch)``)."""
    estimate = _bandit.TwoPoint(delta).estimate

    def loss(out: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
        with torch.no_grad():
            u = torch.randint(2, (1, 1), generator=generator).to(out.dtype) * 2 - 1
            centre = out.detach()
            plus = _bandit.bandit_loss(centre + delta * u - y, "squared")
            minus = _bandit.bandit_loss(centre - delta * u - y, "squared")
            g = estimate(plus, minus, u.expand_as(out))
        return (g * out).sum() / out.shape[0]

    return loss


def fit_bandit_authors_loop(k: int, seed: int, epochs: int, quick: bool, l1_penalty: float = 1e-5,
                            momentum: float = 0.0, learning_rate: float = 1e-2) -> dict[str, Any]:
    """DGT-Bandit on Abalone split ``k`` as microsoft/DGT's ``--black_box smart2p`` runs it: the
    supervised recipe (h 6, L 3, batch 128, RMSprop, cosine warm restarts, gradient norm clipped to
    0.01, ℓ1 on the predicate layers, best validation epoch kept) with the two-point estimate in
    place of the loss's gradient (:func:`two_point_in_batches`). Features z-scored and the target
    min-max scaled on the training part; RMSE in the target's units."""
    Xa, ya, Xv, yv, Xte, yte = regression_split("abalone", k)
    if quick:
        Xa, ya = Xa[:500], ya[:500]
    mean, scale = Xa.mean(axis=0), Xa.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    low, span = float(ya.min()), float(np.ptp(ya)) or 1.0

    def features(X: np.ndarray) -> torch.Tensor:
        return torch.tensor((X - mean) / scale, dtype=torch.float32)

    def targets(y: np.ndarray) -> torch.Tensor:
        return torch.tensor((y - low) / span, dtype=torch.float32).reshape(-1, 1)

    generator = torch.Generator().manual_seed(int(seed))
    data = TrainingTensors(X=features(Xa), Y=targets(ya), X_val=features(Xv), Y_val=targets(yv))
    net = DGTNetwork(Xa.shape[1], 4 if quick else HEIGHT[("table6", "abalone")], 1, n_layers=3, generator=generator)
    config = TrainConfig(epochs=int(epochs), batch_size=128, learning_rate=float(learning_rate),
                         momentum=float(momentum), l1_penalty=float(l1_penalty), grad_clip=0.01)
    start = time.perf_counter()
    info = fit_network(net, data, two_point_in_batches(BANDIT["delta"], torch.Generator().manual_seed(int(seed) + 1)),
                       config, generator=generator, record=lambda **numbers: True,
                       validation=lambda out, Y: {"val_loss": float(((out - Y) ** 2).mean())})
    fit_s = time.perf_counter() - start

    def predict(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(features(X))[0].numpy().reshape(-1) * span + low

    return {"split": k, "seed": seed, "val": rmse(predict(Xv), yv), "test": rmse(predict(Xte), yte), "fit_s": fit_s,
            "best_epoch": int(info["best_epoch"]), "queries": 2 * int(epochs) * Xa.shape[0],
            "l1_penalty": float(l1_penalty), "momentum": float(momentum), "learning_rate": float(learning_rate)}


# ------------------------------------------------------------------------------------------ rows
def _machine(device: str) -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if device == "cuda" and torch.cuda.is_available() else None}


def within_one_std_or_better(metric: str, ours: float, paper: float, paper_std: float | None) -> bool:
    slack = paper_std or 0.0
    return bool(ours >= paper - slack) if metric == "acc_pct" else bool(ours <= paper + slack)


def _reduced(s: dict[str, Any], n_splits: int, paper_splits: int, *, epochs: int | None = None,
             tuned: bool | None = None, trees: int | None = None, extra: tuple[str, ...] = (),
             fixed: str = "fixed λ1=1e-5, momentum 0") -> list[str]:
    why = []
    if s["quick"]:
        why.append("quick mode (CI smoke test)")
    if s["seeds"] < PAPER_SEEDS or n_splits < paper_splits:
        why.append(f"{n_splits} split(s) x {s['seeds']} seed(s) instead of the paper's "
                   + (f"{paper_splits} splits x " if paper_splits > 1 else "")
                   + f"{PAPER_SEEDS} seeds")
    if epochs is not None and epochs < PAPER_EPOCHS:
        why.append(f"{epochs} epochs instead of {PAPER_EPOCHS}")
    if tuned is False:
        why.append(f"no validation grid search ({fixed})")
    if trees is not None and trees < PAPER_TREES:
        why.append(f"{trees} trees instead of {PAPER_TREES}")
    return why + list(extra)


def make_row(part: str, dataset: str, method: str, runs: list[dict[str, Any]], protocol: dict[str, Any],
             reduced: list[str], device: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    paper_mean, paper_std, metric, source = PAPER[(part, dataset, method)]
    values = np.asarray([r["test"] for r in runs], dtype=np.float64)
    mean, std = float(values.mean()), float(values.std())  # population std, as the paper
    protocol = {**protocol, "paper_source": source}
    if reduced:
        protocol["reduced"] = "; ".join(reduced)
    protocol["summary"] = _summary(protocol) + (" (reduced)" if reduced else " (full size)")
    row = {"name": f"{dataset} {method}", "part": part, "dataset": dataset, "method": method, "metric": metric,
           "ours_mean": mean, "ours_std": std, "paper_mean": paper_mean, "paper_std": paper_std,
           "n_runs": len(runs), "n_splits": len({r["split"] for r in runs}), "n_seeds": len({r["seed"] for r in runs}),
           "within_one_std_or_better": within_one_std_or_better(metric, mean, paper_mean, paper_std),
           "per_run": [float(v) for v in values], "val_mean": float(np.mean([r["val"] for r in runs])),
           "fit_s_mean": float(np.mean([r["fit_s"] for r in runs])), "protocol": protocol,
           "machine": _machine(device), "run_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    if "epoch_s_mean" in runs[0]:
        row["epoch_s_mean"] = float(np.mean([r["epoch_s_mean"] for r in runs]))
    row.update(extra or {})
    return row


def unavailable_row(part: str, dataset: str, method: str, why: str) -> dict[str, Any]:
    """A row without numbers, saying why (``why`` starts with the short reason, details in brackets)."""
    paper_mean, paper_std, metric, source = PAPER[(part, dataset, method)]
    short = why.split(" (")[0]
    return {"name": f"{dataset} {method}", "part": part, "dataset": dataset, "method": method, "metric": metric,
            "ours_mean": None, "ours_std": None, "paper_mean": paper_mean, "paper_std": paper_std, "n_runs": 0,
            "n_splits": 0, "n_seeds": 0, "within_one_std_or_better": None, "status": short, "detail": why,
            "protocol": {"paper_source": source, "summary": short, "reduced": why},
            "machine": _machine("cpu"), "run_at": time.strftime("%Y-%m-%d %H:%M:%S")}


def _summary(p: dict[str, Any]) -> str:
    if "max_depth_grid" in p:
        return "sklearn CART, depth and min_samples_leaf chosen on validation"
    keys = (("depth", "h"), ("n_layers", "L"), ("l1_penalty", "λ1"), ("momentum", "mom"), ("epochs", "E"),
            ("batch_size", "B"), ("trees", "T"), ("n_rounds", "rounds"), ("device", "dev"))
    return " ".join(f"{short}={p[k]}" for k, short in keys if p.get(k) is not None)


def _runs_after_tuning(fn: Callable, jobs: list[tuple], tuning_jobs: list[tuple], tuned: list[dict[str, Any]],
                       n_jobs: int, one_thread: bool) -> list[dict[str, Any]]:
    """``fn`` over ``jobs``, except that a job equal to a tuning job takes that job's result: the
    chosen configuration's tuning fit is already split 0 / seed 0's run (the fits are seeded)."""
    done = {repr(job): r for job, r in zip(tuning_jobs, tuned)}
    todo = [job for job in jobs if repr(job) not in done]
    fresh = iter(_parallel(fn, todo, n_jobs, one_thread) if todo else [])
    return [done[repr(job)] if repr(job) in done else next(fresh) for job in jobs]


#: What a Table 1 / 2 tuning score keeps: enough to pick a configuration, and (``RUN_KEYS``) enough to
#: stand as split 0 / seed 0's run of the chosen configuration when a later run reuses it.
TUNING_KEYS = ("l1_penalty", "momentum", "val", "test", "epoch_s_mean")
RUN_KEYS = ("split", "seed", "fit_s", "epochs", "best_epoch", "active_leaves")


def _tuning_key(job: tuple) -> tuple:
    """(dataset, λ1, momentum) of a tuning job ``(dataset, split, seed, params, quick)``."""
    return (job[0], float(job[3]["l1_penalty"]), float(job[3]["momentum"]))


def _earlier_tuning(part: str, s: dict[str, Any], epochs: int, depth: Callable[[str], int]) -> dict[tuple, dict]:
    """The previous file's grid scores (``TREEVIZ_DGT_REUSE_TUNING``) for rows of ``part`` trained
    the same way (height, layers, epochs, batch, device): fits are seeded, so refitting a grid point
    on split 0 / seed 0 gives the same score again. Each reused score says where it came from."""
    found: dict[tuple, dict] = {}
    for row in _previous(s["quick"]).get("rows", []):
        if row.get("part") != part or row.get("method") != "DGT":
            continue
        p, ds = row.get("protocol", {}), row.get("dataset")
        same = (p.get("depth") == depth(ds) and p.get("n_layers") == 3 and p.get("epochs") == epochs
                and p.get("batch_size") == 128 and p.get("device") == s["device"])
        for score in row.get("tuning_scores", []) if same else []:
            key = (ds, float(score["l1_penalty"]), float(score["momentum"]))
            found[key] = {**score, "reused_from": score.get("reused_from", row.get("run_at"))}
    return found


def _choose(results: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """The grid result with the best validation metric (ties: the earlier, i.e. larger λ)."""
    best = results[0]
    for r in results[1:]:
        if (r["val"] > best["val"]) if metric == "acc_pct" else (r["val"] < best["val"]):
            best = r
    return best


# ------------------------------------------------------------------------------------------ parts
def _supervised_part(part: str, datasets: tuple[str, ...], s: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 1 (regression) or Table 2 (classification): tune on split 0 / seed 0, then every run."""
    regression = part == "table1"
    device = s["device"]
    epochs = s["epochs"] if regression else s["epochs_table2"]
    tune = s["tune_table1"] if regression else s["tune_table2"]
    n_splits = s["splits_regression"] if regression else s["splits_classification"]
    task = "regression" if regression else "classification"
    n_jobs, one = _jobs_for(s, device), s["one_thread_workers"]

    def depth(ds: str) -> int:
        return min(HEIGHT[(part, ds)], 4) if s["quick"] and not regression else HEIGHT[(part, ds)]

    l1_grid = s["l1_grid"]
    grid = [(lam, mom) for mom in MOMENTUM_GRID[task] for lam in l1_grid] if tune else []
    tuning_jobs = [(ds, 0, 0, _tree_params(depth(ds), epochs, device, l1_penalty=lam, momentum=mom), s["quick"])
                   for ds in datasets for lam, mom in grid]
    earlier = _earlier_tuning(part, s, epochs, depth) if s["reuse_tuning"] else {}
    fresh_jobs = [job for job in tuning_jobs if _tuning_key(job) not in earlier]
    fresh = iter(_parallel(fit_dgt, fresh_jobs, n_jobs, one) if fresh_jobs else [])
    tuned = [earlier.get(_tuning_key(job)) or next(fresh) for job in tuning_jobs]
    chosen: dict[str, dict[str, float]] = {}
    scores: dict[str, list[dict[str, Any]]] = {}
    for ds in datasets:
        scores[ds] = [r for job, r in zip(tuning_jobs, tuned) if job[0] == ds]
        best = _choose(scores[ds], "rmse" if regression else "acc_pct") if scores[ds] else None
        chosen[ds] = ({"l1_penalty": best["l1_penalty"], "momentum": best["momentum"]} if best else dict(FIXED))
    runs_jobs = [(ds, k, seed, _tree_params(depth(ds), epochs, device, **chosen[ds]), s["quick"])
                 for ds in datasets for k in range(n_splits) for seed in range(s["seeds"])]
    complete = [(job, r) for job, r in zip(tuning_jobs, tuned) if all(k in r for k in RUN_KEYS)]
    runs = _runs_after_tuning(fit_dgt, runs_jobs, [j for j, _ in complete], [r for _, r in complete], n_jobs, one)
    cart_jobs = [(ds, k, seed) for ds in datasets for k in range(n_splits) for seed in range(s["seeds"])]
    carts = _parallel(fit_cart, cart_jobs, n_jobs, one) if regression else []
    rows = []
    for ds in datasets:
        mine = [r for job, r in zip(runs_jobs, runs) if job[0] == ds]
        tuning = ("grid on the validation part of split 0, seed 0: λ1 in "
                  f"{list(l1_grid)} x momentum in {list(MOMENTUM_GRID[task])}" if tune
                  else "none: fixed λ1=1e-5, momentum 0")
        protocol = {**_tree_params(depth(ds), epochs, device, **chosen[ds]), "epochs": epochs, "tuning": tuning,
                    "width": "the paper's Table 12 (hidden width multiplier x (2^h - 1))",
                    "quantizer": "scaled", "learning_rate": 1e-2, "grad_clip": 0.01,
                    "validation": ("a sixth of the shipped training part, seeded by the split index" if regression
                                   else "20% of the training part, stratified, seeded by the split index"),
                    "splits": (f"the shipped splits 0..{n_splits - 1}" if regression else
                               f"stratified {'/'.join(map(str, (QUICK_UCI_SPLITS if s['quick'] else UCI_SPLITS)[ds]))}"
                               f" train/test splits seeded 0..{n_splits - 1}"),
                    "checkpoint": "best validation loss epoch"}
        if not regression:
            protocol["split_note"] = SPLIT_NOTE[ds]
        extra_reduced = ()
        if s["quick"] and not regression:
            extra_reduced = (f"subsample {QUICK_UCI_SPLITS[ds][0]}/{QUICK_UCI_SPLITS[ds][1]}, h={depth(ds)} "
                             f"instead of {HEIGHT[(part, ds)]}",)
        if tune and tuple(l1_grid) != L1_GRID:
            extra_reduced += (f"λ1 grid {list(l1_grid)} instead of the paper's {list(L1_GRID)}",)
        reduced = _reduced(s, n_splits, 5 if regression else 1, epochs=epochs, tuned=bool(tune), extra=extra_reduced)
        rows.append(make_row(part, ds, "DGT", mine, protocol, reduced, device, {
            "best_epoch_mean": float(np.mean([r["best_epoch"] for r in mine])),
            "active_leaves_mean": float(np.mean([r["active_leaves"] for r in mine])),
            "tuning_scores": [{k: r[k] for k in (*TUNING_KEYS, *RUN_KEYS, "reused_from") if k in r}
                              for r in scores[ds]]}))
        if regression:
            cart = [r for job, r in zip(cart_jobs, carts) if job[0] == ds]
            cart_protocol = {"model": "sklearn DecisionTreeRegressor", "max_depth_grid": list(CART_DEPTHS),
                             "min_samples_leaf_grid": list(CART_LEAF_GRID),
                             "tuning": "grid on the validation part of each split (trained on the rest)",
                             "chosen": [(r["max_depth"], r["min_samples_leaf"]) for r in cart]}
            rows.append(make_row(part, ds, "CART", cart, cart_protocol, _reduced(s, n_splits, 5), "cpu"))
    return rows


def _forest_key(ds: str, k: int, seed: int, chunk: int, sizes: list[int], params: dict[str, Any],
                subsample: float) -> str:
    """A forest chunk's log key: readable, plus a digest of everything that changes its trees."""
    config = json.dumps({"params": params, "subsample": float(subsample), "sizes": sizes}, sort_keys=True)
    return (f"{ds} split {k} seed {seed} chunk {chunk + 1}/{len(sizes)} "
            f"{hashlib.sha1(config.encode()).hexdigest()[:10]}")


def _forest_l1(ds: str, s: dict[str, Any]) -> tuple[float, str]:
    """The forests' λ1: with tuning, Table 1's validation choice for ``ds`` in the stored results
    (the paper's forests take the per-tree hyper-parameters of DGT), else the fixed 1e-5."""
    if s["tune_table4"]:
        for row in _previous(s["quick"]).get("rows", []):
            if (row.get("part"), row.get("dataset"), row.get("method")) == ("table1", ds, "DGT") \
                    and row.get("tuning_scores"):
                lam = float(row["protocol"]["l1_penalty"])
                return lam, f"λ1 {lam:g}: Table 1's validation choice for {ds} (run at {row.get('run_at', '?')})"
    return FIXED["l1_penalty"], f"λ1 {FIXED['l1_penalty']:g} fixed"


def _pooled(chunks: list[dict[str, Any]], key: str) -> np.ndarray:
    """The forest's mean prediction from its chunks' means, weighted by their tree counts."""
    total = sum(c["n_trees"] for c in chunks)
    return sum(np.asarray(c[key]) * c["n_trees"] for c in chunks) / total


def _forest_part(datasets: tuple[str, ...], s: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 4: forests of ``trees`` bagged DGT trees. A forest trains as chunks of trees (one per
    worker, with their own seeds) whose predictions pool into the forest's mean. Outside
    ``--quick`` every finished chunk is logged (``benchmarks/results/parts/dgt_forest.jsonl``, a
    :class:`PartLog`), so a stopped run resumes and a run with more splits or seeds fits only
    what the log lacks. With ``TREEVIZ_DGT_TUNE=grid`` the paper's forest grid (momentum ×
    bootstrap fraction × tree height) is searched on split 0 / seed 0 first, and the chosen
    forest is that run. The row is the chosen setting's seeds on split 0, as Table 4 ran
    (:data:`FOREST_PAPER_SPLITS`); with ``TREEVIZ_DGT_SPLITS`` above 1 the same setting's seed 0 on
    the other splits is reported beside it (``across_splits``), not averaged into the row."""
    device = s["device"]
    n_jobs = _jobs_for(s, device)
    one_thread = n_jobs <= 1 or s["one_thread_workers"]
    depths = s["forest_depths"]
    n_splits, trees, tune = s["splits_forest"], s["trees"], s["tune_table4"]
    if len(depths) > 1 and not tune:
        raise ValueError(f"TREEVIZ_DGT_FOREST_DEPTH lists the heights {list(depths)}, but only "
                         "TREEVIZ_DGT_TUNE=grid searches heights; give one height, or set the grid")
    n_chunks = min(trees, n_jobs) if n_jobs > 1 else 1  # the same for any number of runs, so logs are reused
    sizes = [trees // n_chunks + (1 if c < trees % n_chunks else 0) for c in range(n_chunks)]
    log = None if s["quick"] else PartLog("dgt_forest")
    # the tallest trees first (the search's most expensive forests, logged first)
    grid = [(depth, mom, frac) for depth in sorted(depths, reverse=True) for frac in FOREST_FRACTION
            for mom in FOREST_MOMENTUM] if tune else [(depths[0], FIXED["momentum"], 1.0)]
    l1 = {ds: _forest_l1(ds, s) for ds in datasets}

    def params(ds: str, depth: int, mom: float) -> dict[str, Any]:
        return _tree_params(depth, s["epochs"], device, l1_penalty=l1[ds][0], momentum=mom)

    def forest_keys(ds: str, k: int, seed: int, depth: int, mom: float, frac: float) -> list[str]:
        return [_forest_key(ds, k, seed, c, sizes, params(ds, depth, mom), frac) for c in range(n_chunks)]

    def forest_tasks(ds: str, k: int, seed: int, depth: int, mom: float, frac: float) -> list[tuple[str, Any]]:
        return [(key, delayed(_in_worker)(fit_forest_chunk,
                                          (ds, k, seed, c, sizes[c], params(ds, depth, mom), frac), one_thread))
                for c, key in enumerate(forest_keys(ds, k, seed, depth, mom, frac))]

    def forest_run(ds: str, k: int, seed: int, depth: int, mom: float, frac: float,
                   done: dict[str, Any]) -> dict[str, Any]:
        chunks = [done[key] for key in forest_keys(ds, k, seed, depth, mom, frac)]
        _, _, _, yv, _, yte = regression_split(ds, k)
        return {"split": k, "seed": seed, "depth": depth, "momentum": mom, "subsample": frac,
                "val": rmse(_pooled(chunks, "val_pred"), yv), "test": rmse(_pooled(chunks, "test_pred"), yte),
                "fit_s": float(sum(c["fit_s"] for c in chunks)),
                "epoch_s_mean": float(np.mean([c["epoch_s"] for c in chunks])),
                "single_tree_test_mean": float(np.mean([t for c in chunks for t in c["tree_test"]]))}

    tuning_tasks = [t for ds in datasets for point in grid for t in forest_tasks(ds, 0, 0, *point)] if tune else []
    done = run_keyed(tuning_tasks, log, n_jobs=n_jobs) if tuning_tasks else {}
    scores = {ds: [forest_run(ds, 0, 0, *point, done) for point in grid] if tune else [] for ds in datasets}
    chosen = {}
    for ds in datasets:
        best = _choose(scores[ds], "rmse") if tune else None
        chosen[ds] = (best["depth"], best["momentum"], best["subsample"]) if best else grid[0]
    # the row: split 0's seeds; beside it, seed 0 on the other splits
    runs_of = [(0, seed) for seed in range(s["seeds"])] + [(k, 0) for k in range(1, n_splits)]
    run_tasks = [t for ds in datasets for k, seed in runs_of for t in forest_tasks(ds, k, seed, *chosen[ds])]
    done.update(run_keyed([t for t in run_tasks if t[0] not in done], log, n_jobs=n_jobs))
    rows = []
    for ds in datasets:
        runs = [forest_run(ds, 0, seed, *chosen[ds], done) for seed in range(s["seeds"])]
        across = [forest_run(ds, k, 0, *chosen[ds], done) for k in range(n_splits)]
        depth, mom, frac = chosen[ds]
        protocol = {**params(ds, depth, mom), "epochs": s["epochs"], "trees": trees, "subsample": frac,
                    "bagging": "bootstrap samples drawn with replacement (DGTForestRegressor), mean prediction",
                    "training": f"each forest trained as {n_chunks} DGTForestRegressor fit(s) of {sizes} trees "
                                "with their own seeds, their predictions pooled into the forest's mean",
                    "tuning": (f"grid on the validation part of split 0, seed 0: height in {list(depths)} x "
                               f"momentum in {list(FOREST_MOMENTUM)} x bootstrap fraction in "
                               f"{list(FOREST_FRACTION)}; {l1[ds][1]}" if tune else
                               "none: fixed λ1=1e-5, momentum 0, bootstrap fraction 1 (the paper tunes momentum "
                               f"in {list(FOREST_MOMENTUM)} and the fraction in {list(FOREST_FRACTION)})")}
        if log is not None:
            protocol["log"] = f"benchmarks/results/parts/{log.path.name}"
        extra = (f"h={depth} instead of 8",) if s["quick"] else ()
        if tune and len(depths) > 1:
            protocol["height_note"] = (f"h={depth}, chosen on validation from {list(depths)}: the paper's Table 4 "
                                       f"gives the forests' maximum height ({HEIGHT[('table4', ds)]}), and its "
                                       f"forests take DGT's per-tree settings (h={HEIGHT[('table1', ds)]} in "
                                       "Table 1)")
        elif depth != HEIGHT[("table4", ds)] and not s["quick"]:
            protocol["height_note"] = (f"h={depth}: the paper's Table 4 gives the forests' maximum height "
                                       f"({HEIGHT[('table4', ds)]}), and its heights are tuned")
        protocol["splits"] = ("the seeds on split 0, as Table 4 ran them (one split: its 10 seeds' XGBoost column "
                              "is ± 0.00, which the five splits cannot give; python -m benchmarks.dgt_table4_splits)")
        reduced = _reduced(s, 1, FOREST_PAPER_SPLITS, epochs=s["epochs"], tuned=tune, trees=trees, extra=extra,
                           fixed="fixed λ1=1e-5, momentum 0, bootstrap fraction 1")
        # the compute the row rests on, however many resumed runs it took: every chunk's own fit time
        keys = {key for point in (grid if tune else []) for key in forest_keys(ds, 0, 0, *point)} | {
            key for k, seed in runs_of for key in forest_keys(ds, k, seed, *chosen[ds])}
        rows.append(make_row("table4", ds, "DGT-Forest", runs, protocol, reduced, device, {
            "row_seconds": float(sum(done[key]["fit_s"] for key in keys)),
            "row_seconds_of": f"the summed fit times (each chunk's wall time in its worker process) of the "
                              f"{len(keys)} chunks ({len(keys) // n_chunks} forests: the search, the seeds and "
                              "any other splits) the row and its across_splits rest on",
            "single_tree_test_mean": float(np.mean([r["single_tree_test_mean"] for r in runs])),
            **({"across_splits": {"per_split": [r["test"] for r in across],
                                  "mean": float(np.mean([r["test"] for r in across])),
                                  "std": float(np.std([r["test"] for r in across])),
                                  "note": f"seed 0 of the chosen setting on splits 0-{n_splits - 1}: the spread "
                                          "the splits add, not part of the row"}} if n_splits > 1 else {}),
            "tuning_scores": [{key: r[key] for key in ("depth", "momentum", "subsample", "val", "test", "fit_s")}
                              for r in scores[ds]]}))
    return rows


def _bandit_part(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Table 6: DGT-Bandit and the linear bandit on Abalone (two-point estimator, squared loss)."""
    classes = bandit_classes()
    methods = ("DGT-Bandit", "Linear bandit")
    if isinstance(classes, str):
        return [unavailable_row("table6", "abalone", m, classes) for m in methods]
    device = s["device_bandit"]
    depth = 4 if s["quick"] else HEIGHT[("table6", "abalone")]
    n_splits = s["splits_regression"]
    jobs = [(m, k, seed, s["bandit_passes"], depth, device, s["quick"]) for m in methods for k in range(n_splits)
            for seed in range(s["seeds"])]
    out = _parallel(fit_bandit, jobs, _jobs_for(s, device), s["one_thread_workers"])
    rows = []
    for m in methods:
        runs = [r for job, r in zip(jobs, out) if job[0] == m]
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            rows.append(unavailable_row("table6", "abalone", m, errors[0]))
            continue
        protocol = {**BANDIT, **runs[0]["params"], "passes": s["bandit_passes"], "device": device,
                    "ignored_params": runs[0]["ignored_params"],
                    "stream": "the training part of each split, reshuffled every pass (the paper does not state "
                              "its length); the final model is scored on test"}
        extra = ((f"h={depth} instead of 6", "500-row stream") if s["quick"] and m == "DGT-Bandit"
                 else ("500-row stream",) if s["quick"] else ())
        rows.append(make_row("table6", "abalone", m, runs, protocol, _reduced(s, n_splits, 5, extra=extra), device))
    rows.append(_authors_loop_row(s, depth, n_splits))
    return rows


def _authors_loop_row(s: dict[str, Any], depth: int, n_splits: int) -> dict[str, Any]:
    """Table 6's DGT-Bandit as the authors' code runs it (:func:`fit_bandit_authors_loop`), its ℓ1,
    momentum and learning rate chosen on split 0's validation part over the paper's grids when
    table1 is tuned (δ is not searched: with the squared loss the estimate does not depend on it)."""
    epochs = s["epochs"]
    l1_grid, n_jobs, one = s["l1_grid"], _jobs_for(s, "cpu"), s["one_thread_workers"]
    grid = ([(lam, mom, lr) for lr in AUTHORS_LOOP_LR for mom in MOMENTUM_GRID["regression"] for lam in l1_grid]
            if s["tune_table1"] else [])
    tuning_jobs = [(0, 0, epochs, s["quick"], *g) for g in grid]
    earlier = _earlier_authors_tuning(s, depth, epochs) if s["reuse_tuning"] else {}
    fresh_jobs = [job for job in tuning_jobs if tuple(map(float, job[4:])) not in earlier]
    fresh = iter(_parallel(fit_bandit_authors_loop, fresh_jobs, n_jobs, one) if fresh_jobs else [])
    tuned = [earlier.get(tuple(map(float, job[4:]))) or next(fresh) for job in tuning_jobs]
    best = _choose(tuned, "rmse") if tuned else {"l1_penalty": 1e-5, "momentum": 0.0, "learning_rate": 1e-2}
    chosen = (best["l1_penalty"], best["momentum"], best["learning_rate"])
    jobs = [(k, seed, epochs, s["quick"], *chosen) for k in range(n_splits) for seed in range(s["seeds"])]
    complete = [(job, r) for job, r in zip(tuning_jobs, tuned) if all(k in r for k in AUTHORS_RUN_KEYS)]
    runs = _runs_after_tuning(fit_bandit_authors_loop, jobs, [j for j, _ in complete], [r for _, r in complete],
                              n_jobs, one)
    protocol = {"depth": depth, "n_layers": 3, "batch_size": 128, "epochs": epochs, "learning_rate": chosen[2],
                "l1_penalty": chosen[0], "momentum": chosen[1], "grad_clip": 0.01, "delta": BANDIT["delta"],
                "tuning": ("grid on the validation part of split 0, seed 0: λ1 in "
                           f"{list(l1_grid)} x momentum in {list(MOMENTUM_GRID['regression'])} x learning rate in "
                           f"{list(AUTHORS_LOOP_LR)}" if grid else "none: λ1 1e-5, momentum 0, learning rate 1e-2"),
                "estimator": "two_point, one sign per mini-batch", "loss": "squared", "device": "cpu",
                "checkpoint": "best validation loss epoch (labelled validation rows, as the authors' code)",
                "queries_per_run": runs[0]["queries"],
                "why": ("microsoft/DGT's --black_box smart2p runs its supervised mini-batch loop with the two-point "
                        "estimate, which for the squared loss is the exact gradient; the paper's text describes "
                        "batch 1 with 4-step accumulation and L 1 (the DGT-Bandit row)"),
                "authors_code": AUTHORS_BANDIT_REFERENCE}
    extra = ("500-row stream",) if s["quick"] else ()
    if grid and tuple(l1_grid) != L1_GRID:
        extra += (f"λ1 grid {list(l1_grid)} instead of the paper's {list(L1_GRID)}",)
    reduced = _reduced(s, n_splits, 5, epochs=epochs, extra=extra)
    return make_row("table6", "abalone", AUTHORS_LOOP, runs, protocol, reduced, "cpu",
                    {"best_epoch_mean": float(np.mean([r["best_epoch"] for r in runs])),
                     "tuning_scores": [{k: r[k] for k in (*AUTHORS_TUNING_KEYS, *RUN_KEYS, "queries", "reused_from")
                                        if k in r} for r in tuned]})


#: What a score of the authors' loop grid keeps (its run keys too, as :data:`TUNING_KEYS`).
AUTHORS_TUNING_KEYS = ("l1_penalty", "momentum", "learning_rate", "val", "test")
AUTHORS_RUN_KEYS = ("split", "seed", "fit_s", "best_epoch", "queries")


def _earlier_authors_tuning(s: dict[str, Any], depth: int, epochs: int) -> dict[tuple, dict]:
    """The previous file's grid scores of the authors' loop row (``TREEVIZ_DGT_REUSE_TUNING``),
    keyed by (λ1, momentum, learning rate), when it trained the same way (height, epochs); a
    score that kept its run keys also stands as split 0 / seed 0's run of its configuration."""
    for row in _previous(s["quick"]).get("rows", []):
        p = row.get("protocol", {})
        if row.get("name") == f"abalone {AUTHORS_LOOP}" and p.get("depth") == depth and p.get("epochs") == epochs:
            return {(float(t["l1_penalty"]), float(t["momentum"]), float(t["learning_rate"])):
                    {**t, "reused_from": t.get("reused_from", row.get("run_at"))}
                    for t in row.get("tuning_scores", [])}
    return {}


def synth50() -> tuple[np.ndarray, ...]:
    """The side-by-side benchmark's synthetic regression (``../shared/reference/make_synth.py``'s
    DGT part, same seed): 20 000 training, 5 000 validation and 5 000 test rows of 50 features; the
    target is a depth-4 random sparse oblique tree's leaf value plus a linear term and noise."""
    rng = np.random.default_rng(12345)
    n_tr, n_va, n_te, p = 20_000, 5_000, 5_000, 50
    X = rng.standard_normal((n_tr + n_va + n_te, p)).astype(np.float32)
    depth = 4
    W = rng.standard_normal((2**depth - 1, p))
    W[np.abs(W) < 1.0] = 0.0
    b = rng.standard_normal(2**depth - 1) * 0.3
    leaf_val = rng.uniform(0, 20, 2**depth)
    node = np.zeros(X.shape[0], dtype=int)
    for _ in range(depth):
        node = 2 * node + 1 + ((np.einsum("ij,ij->i", X, W[node]) + b[node]) > 0)
    y = (leaf_val[node - (2**depth - 1)] + 0.5 * X[:, :5].sum(1) + rng.standard_normal(X.shape[0])).astype(np.float32)
    cut = (n_tr, n_tr + n_va)
    return tuple(a.astype(np.float64) for part in np.split(np.arange(X.shape[0]), cut) for a in (X[part], y[part]))


class _CpuClock(Callback):
    """Process CPU time at the start of training and at the end of every epoch."""

    marks: list[float]

    def on_train_begin(self, estimator, **kwargs):
        self.marks = [time.process_time()]

    def on_epoch_end(self, estimator, **kwargs):
        self.marks.append(time.process_time())


#: The speed part's tree settings per data set (the side-by-side harness's).
SPEED_SETTINGS = {
    "abalone": dict(depth=6, n_layers=3, batch_size=128),
    "synth50": dict(depth=8, n_layers=3, batch_size=512),
}


def _speed_part(s: dict[str, Any]) -> list[dict[str, Any]]:
    """Process CPU seconds per epoch on one torch thread at the side-by-side settings, in this process."""
    epochs = s["speed_epochs"]
    default_threads = torch.get_num_threads()
    rows = []
    for name, tree in SPEED_SETTINGS.items():
        if name == "abalone":
            Xa, ya, Xv, yv, Xt, yt = regression_split("abalone", 0)
            data = "shared dgt/abalone split 0"
        else:
            Xa, ya, Xv, yv, Xt, yt = synth50()
            data = "synthetic 20 000 x 50 regression (make_synth.py's recipe)"
            if s["quick"]:
                Xa, ya = Xa[:4000], ya[:4000]
                data += ", first 4 000 training rows (quick)"
        params = dict(width_multiplier=None, quantizer="scaled", l1_penalty=1e-5, l2_penalty=0.0, learning_rate=1e-2,
                      momentum=0.0, max_epochs=epochs, min_steps=0, grad_clip=0.01, device="cpu", **tree)
        clock = _CpuClock()
        torch.set_num_threads(1)
        try:
            model = DGTRegressor(**params, random_state=1)
            c0 = time.process_time()
            model.fit(Xa, ya, eval_set=(Xv, yv), callbacks=[clock])
            fit_cpu = time.process_time() - c0
        finally:
            torch.set_num_threads(default_threads)
        per_epoch = np.diff(np.asarray(clock.marks))[1:]
        rmse = float(np.sqrt(np.mean((model.predict(Xt) - yt) ** 2)))
        rows.append({
            "name": f"{name} CPU s/epoch, 1 thread, h {tree['depth']} L {tree['n_layers']} batch {tree['batch_size']}",
            "part": "speed", "dataset": name, "method": "DGT training epoch", "metric": "s_per_epoch",
            "ours_mean": float(np.median(per_epoch)), "ours_std": float(per_epoch.std()), "paper_mean": None,
            "paper_std": None, "within_one_std_or_better": None, "test_rmse": rmse, "best_epoch": model.best_epoch_,
            "n_runs": 1, "n_splits": 1, "n_seeds": 1, "fit_cpu_s": fit_cpu, "device": "cpu", "torch_threads": 1,
            "n_train": int(Xa.shape[0]), "data": data,
            "protocol": {**params, "epochs": epochs, "torch_threads": 1, "n_train": int(Xa.shape[0]),
                         "timed": f"median process CPU s of epochs 2..{epochs} (epoch 1 is warm-up)",
                         "side_by_side": "benchmarks/reference_speed.py",
                         "summary": f"h={tree['depth']} L={tree['n_layers']} B={tree['batch_size']} "
                                    f"n={Xa.shape[0]} 1 thread, CPU time"},
            "machine": _machine("cpu"), "run_at": time.strftime("%Y-%m-%d %H:%M:%S")})
    return rows


# ------------------------------------------------------------------------------------------ run
def _previous(quick: bool) -> dict[str, Any]:
    """The results of the previous run in the same mode (empty when there is none)."""
    path = results_dir() / f"{NAME}.json"
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if payload.get("benchmark") != NAME or bool(payload.get("quick")) != quick:
        return {}
    return payload.get("results") or {}


def _fmt(mean: float | None, std: float | None, metric: str) -> str:
    if mean is None:
        return "—"
    digits = 3 if metric in ("rmse", "s_per_epoch") else 2
    return f"{mean:.{digits}f}" if std is None else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _table_row(r: dict[str, Any], fresh: bool) -> dict[str, Any]:
    if r["part"] == "speed":
        verdict = f"test RMSE {r['test_rmse']:.3f}" if r.get("test_rmse") is not None else "—"
    elif r.get("within_one_std_or_better") is None:
        verdict = r.get("status", "—")
    else:
        verdict = "yes" if r["within_one_std_or_better"] else "no"
    return {"part": r["part"], "row": r["name"], "metric": r["metric"],
            "ours": _fmt(r["ours_mean"], r["ours_std"], r["metric"]),
            "paper": _fmt(r["paper_mean"], r["paper_std"], r["metric"]),
            "within 1 std / speed-up": verdict,
            "s/epoch": f"{r['epoch_s_mean']:.3f}" if r.get("epoch_s_mean") is not None else "",
            "runs": r["n_runs"], "protocol": r["protocol"].get("summary", ""),
            "from": "this run" if fresh else f"earlier ({r.get('run_at', '?')})"}


# ------------------------------------------------------------------------------------------ device mode
def _abalone_or_synthetic() -> tuple[tuple[np.ndarray, ...], str]:
    """(X_train, y_train, X_val, y_val) of Abalone split 0, or synthetic data of its shape; the source."""
    root = shared_data_dir()
    if root is not None and (root / "dgt" / "abalone" / "abalone0.npz").is_file():
        Xa, ya, Xv, yv, _, _ = regression_split("abalone", 0)
        return (Xa, ya, Xv, yv), f"shared dgt/abalone split 0 ({Xa.shape[0]} training / {Xv.shape[0]} validation)"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2088 + 418, 10))
    y = 10.0 + X @ rng.normal(size=10) + np.sin(3 * X[:, 0]) + 0.5 * rng.normal(size=X.shape[0])
    return (X[:2088], y[:2088], X[2088:], y[2088:]), "synthetic, Abalone's shape (2088 + 418 x 10; shared data absent)"


def _fit_call(cls: type, params: dict[str, Any], data: tuple[np.ndarray, ...]):
    Xa, ya, Xv, yv = data

    def build(device: str):
        def call() -> None:
            cls(**{**params, "device": device}, random_state=0).fit(Xa, ya, eval_set=(Xv, yv))
        return call
    return build


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """DGT fits of a few epochs (per epoch), for :func:`benchmarks.device_timing.compare`."""
    abalone, abalone_source = _abalone_or_synthetic()
    if quick:
        abalone = tuple(a[:300] for a in abalone)
    small_epochs = 1 if quick else 3
    small = _tree_params(3 if quick else 6, small_epochs, "cpu", **FIXED)
    n_train, n_val = (400, 100) if quick else (12800, 3200)
    X, y, source = device_timing.uci_or_synthetic("letter", n_train + n_val, 16, 26, seed=0)
    letter = (X[:n_train], y[:n_train], X[n_train:], y[n_train:])
    big = _tree_params(4 if quick else HEIGHT[("table2", "letter")], 1, "cpu", **FIXED)
    options = device_timing.epoch_options(quick)
    return [
        (f"DGT regressor fit h={small['depth']} L=3 B=128", _fit_call(DGTRegressor, small, abalone),
         {**options, "units": small_epochs, "params": {k: v for k, v in small.items() if k != "device"},
          "data": abalone_source + (f", first {abalone[0].shape[0]} rows" if quick else "")}),
        (f"DGT classifier fit h={big['depth']} L=3 B=128", _fit_call(DGTClassifier, big, letter),
         {**options, "units": 1, "max_seconds": None if quick else 25.0,
          "params": {k: v for k, v in big.items() if k != "device"},
          "data": f"{source}, {n_train} training / {n_val} validation rows"}),
    ]


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """The parts above (``device="cpu"``: where they train is ``TREEVIZ_DGT_DEVICE``'s choice), or with
    another device the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="per epoch = a whole fit of a few epochs over its epochs")
    start_all = time.perf_counter()
    warnings.filterwarnings("ignore", category=FutureWarning)
    s = settings(quick)
    plan = {"table1": [d for d in REGRESSION if d in s["datasets"]],
            "table2": [d for d in CLASSIFICATION if d in s["datasets"]],
            "table4": [d for d in REGRESSION if d in s["datasets"]],
            "table6": ["abalone"] if "abalone" in s["datasets"] else [],
            "speed": ["abalone"] if "abalone" in s["datasets"] else []}
    rows: list[dict[str, Any]] = []
    timings: dict[str, float] = {}
    # the speed part first, before any worker process exists to compete for the cores
    for part in sorted(s["parts"], key=lambda p: p != "speed"):
        datasets = tuple(plan[part])
        if not datasets:
            continue
        t0 = time.perf_counter()
        if part in ("table1", "table2"):
            new = _supervised_part(part, datasets, s)
        elif part == "table4":
            new = _forest_part(datasets, s)
        elif part == "table6":
            new = _bandit_part(s)
        else:
            new = _speed_part(s)
        timings[part] = time.perf_counter() - t0
        for r in new:
            r["part_seconds"] = timings[part]
            print(f"  [{part}] {r['name']}: {_fmt(r['ours_mean'], r['ours_std'], r['metric'])} "
                  f"(paper {_fmt(r['paper_mean'], r['paper_std'], r['metric'])}) [{timings[part]:.0f} s]",
                  flush=True)
        rows.extend(new)
    done = {(r["part"], r["dataset"]) for r in rows} | {(p, d) for p in s["parts"] for d in plan[p]}
    previous = _previous(quick)
    kept = [r for r in previous.get("rows", []) if (r.get("part"), r.get("dataset")) not in done]
    order = {p: i for i, p in enumerate(PARTS)}
    all_rows = sorted(rows + kept, key=lambda r: order.get(r.get("part"), len(order)))
    this_run = {"parts": list(s["parts"]), "datasets": sorted({d for p in s["parts"] for d in plan[p]}),
                "settings": {k: v for k, v in s.items() if k not in ("parts", "datasets")},
                "part_seconds": timings, "total_seconds": time.perf_counter() - start_all,
                "machine": _machine("cuda" if torch.cuda.is_available() else "cpu"),
                "env": {k: v for k, v in os.environ.items() if k.startswith("TREEVIZ_DGT_")},
                "at": time.strftime("%Y-%m-%d %H:%M:%S")}
    results = {"rows": all_rows, "runs": [*previous.get("runs", []), this_run],
               "notes": ("mean ± population std (ddof=0) over splits x seeds; RMSE in the target's units; rows whose "
                         "protocol has 'reduced' ran smaller than the paper (see protocol.reduced); rows of parts "
                         "and datasets not rerun are carried over from the previous file of the same mode")}
    fresh = {id(r) for r in rows}
    return {"rows": [_table_row(r, id(r) in fresh) for r in all_rows],
            "results": device_timing.carry_device_section(NAME, results, quick=quick)}
