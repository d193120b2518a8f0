"""The data both sides of a side-by-side run read, written once into ``$REF_HOME/data``.

* ``synth``: the two synthetic tables of the bigger settings, seeded, so that every setup writes
  the same rows.

  - DGT: regression, 20 000 training rows x 50 features (+ 5 000 validation, 5 000 test); the
    target is a depth-4 random sparse oblique tree's leaf value plus a linear term and noise.
    Written as ``dgt_synth50.npz`` for treeviz and in the reference's own generic-loader layout
    (``datasets/synth50/synth50-{train,val,test}-{x,y}.npy`` and a ``stats.json`` entry) in its
    checkout, so that its ``DataLoader`` reads the same rows.
  - Skinny Trees: binary classification, 20 000 training rows x 100 features (+ 5 000 / 5 000),
    10 informative features through a nonlinear logit, standardised with the training statistics
    (``skinny_synth100.npz``).
* ``latent``: breast_cancer as the ``latent_train`` benchmark splits it (treeviz's ``prepare``:
  standard scaling, 20 % test, 10 % validation, stratified, ``PrepConfig`` seed = split), one
  ``latent_bc_split<seed>.npz`` per seed, labels coded 0 / 1 in sorted order.

The abalone splits of the DGT rows come from the reference's own loader instead
(``drivers/export_dgt_split.py``, run in its environment).

usage: ``python -m benchmarks.external.data {synth,latent} REF_HOME``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from benchmarks.synthetic import SEED, SLICES, dgt_regression, skinny_classification
from treeviz.services.data import PrepConfig, load_dataset, prepare

#: The seeds of the latent-trees splits (round r trains on split (r - 1) mod 5).
LATENT_SPLITS = (0, 1, 2, 3, 4)


def write_synth(home: Path) -> None:
    """Both synthetic tables into ``home/data`` (and the DGT one into the reference's checkout)."""
    rng = np.random.default_rng(SEED)  # one stream: the DGT table first, then Skinny's (benchmarks.synthetic)
    (home / "data").mkdir(parents=True, exist_ok=True)
    X, y = dgt_regression(rng)
    parts = SLICES
    np.savez(home / "data" / "dgt_synth50.npz", **{f"x_{k}": X[s] for k, s in parts.items()},
             **{f"y_{k}": y[s] for k, s in parts.items()})
    datasets = home / "dgt" / "datasets"
    (datasets / "synth50").mkdir(parents=True, exist_ok=True)
    for k, s in parts.items():
        np.save(datasets / "synth50" / f"synth50-{k}-x.npy", X[s])
        np.save(datasets / "synth50" / f"synth50-{k}-y.npy", y[s])
    stats_path = datasets / "stats.json"
    stats = json.loads(stats_path.read_text())
    stats["synth50"] = {"n_features": 50, "n_classes": -1}
    stats_path.write_text(json.dumps(stats, indent=4))
    X, y = skinny_classification(rng)
    np.savez(home / "data" / "skinny_synth100.npz", **{f"x_{k}": X[s] for k, s in parts.items()},
             **{f"y_{k}": y[s] for k, s in parts.items()})


def write_latent_splits(home: Path) -> None:
    """breast_cancer's latent_train splits, one .npz per seed of :data:`LATENT_SPLITS`."""
    (home / "data").mkdir(parents=True, exist_ok=True)
    table = load_dataset("breast_cancer")
    for seed in LATENT_SPLITS:
        p = prepare(table, PrepConfig(scaling="standard", test_size=0.2, val_size=0.1, seed=seed))
        classes = np.unique(p.labels("train"))  # sorted: benign, malignant
        code = {part: np.searchsorted(classes, p.labels(part)).astype(np.int64) for part in ("train", "val", "test")}
        np.savez(home / "data" / f"latent_bc_split{seed}.npz", x_train=p.X_train.astype(np.float32),
                 y_train=code["train"], x_val=p.X_val.astype(np.float32), y_val=code["val"],
                 x_test=p.X_test.astype(np.float32), y_test=code["test"], classes=classes.astype(str))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.external.data", description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["synth", "latent"])
    ap.add_argument("home", type=Path)
    a = ap.parse_args(argv)
    (write_synth if a.what == "synth" else write_latent_splits)(a.home)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
