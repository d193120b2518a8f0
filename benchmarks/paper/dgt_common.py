"""What the DGT benchmark's tables share: the paper's heights and grids, the data splits, fits in
worker processes, the rows (mean ± population std over splits × seeds beside the paper's number),
the validation grids' bookkeeping and the previous results file."""

from __future__ import annotations

import os
import platform
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from joblib import Parallel, delayed
from sklearn.model_selection import train_test_split

from benchmarks.common import read_npz_split, read_uci, required_data_dir
from benchmarks.paper.carried import previous_results
from benchmarks.paper.dgt_config import REGRESSION

#: The results file's name (``benchmarks/results/dgt.json``).
RESULTS = "dgt"
#: The paper's split sizes (train, test) of the classification sets.
UCI_SPLITS = {"pendigits": (7494, 3498), "satimage": (4435, 2000), "letter": (16000, 4000)}
QUICK_UCI_SPLITS = dict.fromkeys(UCI_SPLITS, (1200, 500))
#: The paper's best heights.
HEIGHT = {("table1", "abalone"): 6, ("table1", "cpu_act"): 6, ("table2", "pendigits"): 8,
          ("table2", "satimage"): 6, ("table2", "letter"): 10, ("table4", "abalone"): 8,
          ("table4", "cpu_act"): 8, ("table6", "abalone"): 6}
PAPER_SEEDS = 10
PAPER_EPOCHS = 200
PAPER_TREES = 30
L1_GRID = (5e-5, 1e-5, 5e-6, 1e-6, 0.0)
MOMENTUM_GRID = {"regression": (0.0, 0.3), "classification": (0.0, 0.3, 0.8)}
FIXED = {"l1_penalty": 1e-5, "momentum": 0.0}

#: The model packages a DGT fit runs (the version of a logged fit is theirs and its benchmark module's).
DGT_CODE = ("benchmarks.paper.dgt_common", "models.dgt", "models.ground", "models.base", "models.denormals",
            "models.devices", "models.memory", "models.schema", "models.targets", "models.cost")

#: (mean, std, metric, source) of one of the paper's entries.
Paper = tuple[float, float | None, str, str]


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


# ------------------------------------------------------------------------------------------ fits
def parallel(fn: Callable, jobs: list[tuple], n_jobs: int, one_thread: bool) -> list:
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
    return Parallel(n_jobs=min(n_jobs, len(jobs)))(delayed(in_worker)(fn, job, one_thread) for job in jobs)


def in_worker(fn: Callable, job: tuple, one_thread: bool) -> Any:
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


def tree_params(depth: int, epochs: int, device: str, l1_penalty: float, momentum: float, n_layers: int = 3) -> dict:
    """A DGT estimator's settings: the paper's recipe, batch 128, every epoch run (no early stop)."""
    return dict(depth=int(depth), n_layers=int(n_layers), l1_penalty=float(l1_penalty), momentum=float(momentum),
                batch_size=128, max_epochs=int(epochs), min_steps=0, device=device)


def runs_after_tuning(fn: Callable, jobs: list[tuple], tuning_jobs: list[tuple], tuned: list[dict[str, Any]],
                      n_jobs: int, one_thread: bool) -> list[dict[str, Any]]:
    """``fn`` over ``jobs``, except that a job equal to a tuning job takes that job's result: the
    chosen configuration's tuning fit is already split 0 / seed 0's run (the fits are seeded)."""
    done = {repr(job): r for job, r in zip(tuning_jobs, tuned)}
    todo = [job for job in jobs if repr(job) not in done]
    fresh = iter(parallel(fn, todo, n_jobs, one_thread) if todo else [])
    return [done[repr(job)] if repr(job) in done else next(fresh) for job in jobs]


def choose(results: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """The grid result with the best validation metric (ties: the earlier, i.e. larger λ)."""
    best = results[0]
    for r in results[1:]:
        if (r["val"] > best["val"]) if metric == "acc_pct" else (r["val"] < best["val"]):
            best = r
    return best


# ------------------------------------------------------------------------------------------ rows
def machine(device: str) -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if device == "cuda" and torch.cuda.is_available() else None}


def within_one_std_or_better(metric: str, ours: float, paper: float, paper_std: float | None) -> bool:
    slack = paper_std or 0.0
    return bool(ours >= paper - slack) if metric == "acc_pct" else bool(ours <= paper + slack)


def reduced_reasons(s: dict[str, Any], n_splits: int, paper_splits: int, *, epochs: int | None = None,
                    tuned: bool | None = None, trees: int | None = None, extra: tuple[str, ...] = (),
                    fixed: str = "fixed λ1=1e-5, momentum 0") -> list[str]:
    """How a row's run is smaller than the paper's (none for a full-size row)."""
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


def grid_note(tune: bool, l1_grid: tuple[float, ...]) -> tuple[str, ...]:
    """A reduced reason when a grid tries fewer λ1 values than the paper's."""
    return (f"λ1 grid {list(l1_grid)} instead of the paper's {list(L1_GRID)}",) if tune and l1_grid != L1_GRID else ()


def make_row(part: str, dataset: str, method: str, runs: list[dict[str, Any]], settings: dict[str, Any],
             reduced: list[str], device: str, paper: Paper, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A row of ``runs`` (each with ``split``, ``seed``, ``val``, ``test`` and ``fit_s``) beside the
    paper's entry: ``protocol`` full or reduced (the reasons in ``protocol_note``), every setting in
    ``protocol_settings``. One run has no spread: its ``ours_std`` is null."""
    paper_mean, paper_std, metric, source = paper
    values = np.asarray([r["test"] for r in runs], dtype=np.float64)
    mean = float(values.mean())
    std = float(values.std()) if len(values) > 1 else None  # population std, as the paper
    settings = {**settings, "paper_source": source}
    note = summary(settings) + (f"; reduced: {'; '.join(reduced)}" if reduced else "")
    if std is None:
        note += "; one run, so no spread (ours_std null)"
    row = {"name": f"{dataset} {method}", "part": part, "dataset": dataset, "method": method, "metric": metric,
           "ours_mean": mean, "ours_std": std, "paper_mean": paper_mean, "paper_std": paper_std,
           "n_runs": len(runs), "n_splits": len({r["split"] for r in runs}), "n_seeds": len({r["seed"] for r in runs}),
           "within_one_std_or_better": within_one_std_or_better(metric, mean, paper_mean, paper_std),
           "per_run": [float(v) for v in values], "val_mean": float(np.mean([r["val"] for r in runs])),
           "fit_s_mean": float(np.mean([r["fit_s"] for r in runs])),
           "protocol": "reduced" if reduced else "full", "protocol_note": note, "protocol_settings": settings,
           "machine": machine(device)}
    if "epoch_s_mean" in runs[0]:
        row["epoch_s_mean"] = float(np.mean([r["epoch_s_mean"] for r in runs]))
    row.update(extra or {})
    return row


def unavailable_row(part: str, dataset: str, method: str, why: str, paper: Paper) -> dict[str, Any]:
    """A row without numbers, saying why (``why`` starts with the short reason, details in brackets)."""
    paper_mean, paper_std, metric, source = paper
    return {"name": f"{dataset} {method}", "part": part, "dataset": dataset, "method": method, "metric": metric,
            "ours_mean": None, "ours_std": None, "paper_mean": paper_mean, "paper_std": paper_std, "n_runs": 0,
            "n_splits": 0, "n_seeds": 0, "within_one_std_or_better": None, "status": why.split(" (")[0],
            "protocol": "skipped", "protocol_note": why, "protocol_settings": {"paper_source": source},
            "machine": machine("cpu")}


def summary(p: dict[str, Any]) -> str:
    """The settings that tell rows apart, in one line (``h=6 L=3 λ1=1e-05 ...``)."""
    if "max_depth_grid" in p:
        return "sklearn CART, depth and min_samples_leaf chosen on validation"
    keys = (("depth", "h"), ("n_layers", "L"), ("l1_penalty", "λ1"), ("momentum", "mom"), ("epochs", "E"),
            ("batch_size", "B"), ("trees", "T"), ("n_rounds", "rounds"), ("device", "dev"))
    return " ".join(f"{short}={p[k]}" for k, short in keys if p.get(k) is not None)


# ------------------------------------------------------------------------------------------ earlier results
def previous(quick: bool) -> dict[str, Any]:
    """``results`` of the stored ``dgt.json`` when it holds a run of the same mode (empty otherwise)."""
    return previous_results(RESULTS, quick)


def row_settings(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row's settings (a row written before ``protocol`` was one word kept them there)."""
    old = row.get("protocol")
    return row.get("protocol_settings") or (old if isinstance(old, dict) else {})


def row_date(row: dict[str, Any]) -> str:
    """When a stored row ran (its stamp's date; ``run_at`` in rows written before rows were stamped)."""
    return str(row.get("date") or row.get("run_at") or "?")


#: What a Table 1 / 2 tuning score keeps: enough to pick a configuration, and (``RUN_KEYS``) enough to
#: stand as split 0 / seed 0's run of the chosen configuration when a later run reuses it.
TUNING_KEYS = ("l1_penalty", "momentum", "val", "test", "epoch_s_mean")
RUN_KEYS = ("split", "seed", "fit_s", "epochs", "best_epoch", "active_leaves")


def earlier_tuning(part: str, s: dict[str, Any], epochs: int, depth: Callable[[str], int]) -> dict[tuple, dict]:
    """The previous file's grid scores (``reuse_tuning``) for rows of ``part`` trained the same way
    (height, layers, epochs, batch, device): fits are seeded, so refitting a grid point on split 0 /
    seed 0 gives the same score again. Each reused score says where it came from."""
    found: dict[tuple, dict] = {}
    for row in previous(s["quick"]).get("rows", []):
        if row.get("part") != part or row.get("method") != "DGT":
            continue
        p, ds = row_settings(row), row.get("dataset")
        same = (p.get("depth") == depth(ds) and p.get("n_layers") == 3 and p.get("epochs") == epochs
                and p.get("batch_size") == 128 and p.get("device") == s["device"])
        for score in row.get("tuning_scores", []) if same else []:
            key = (ds, float(score["l1_penalty"]), float(score["momentum"]))
            found[key] = {**score, "reused_from": score.get("reused_from", row_date(row))}
    return found
