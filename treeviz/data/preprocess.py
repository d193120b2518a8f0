"""Seeded train/validation/test split, then imputation and scaling fitted on the training part.

Missing-value policy (stated once, shown in the app):

* **target**: a row whose target is missing cannot be used; uploads either stop with a message
  or, if the user ticks "drop rows with a missing target", drop those rows (counted in the notes);
* **numeric features**: missing values are replaced by the column's median on the *training*
  split (so validation and test never leak into preprocessing);
* **categorical features**: a missing value becomes its own level, ``(missing)``, before one-hot
  encoding (done at upload, see :mod:`treeviz.data.upload`);
* columns that are entirely missing are dropped at upload, with a note.

Scaling choices: ``"none"``, ``"standard"`` (z-score with training mean and standard deviation)
and ``"quantile"`` (z-score, then scikit-learn's ``QuantileTransformer`` with a normal output,
fitted on training features with a little noise added to break ties, as the latent-tree papers
do after NODE; see :class:`NoisyQuantileScaler`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from sklearn.impute import SimpleImputer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import QuantileTransformer, StandardScaler

from treeviz.data.dataset import Dataset
from treeviz.errors import TreevizError

SCALINGS = ("none", "standard", "quantile")

MISSING_VALUE_POLICY = (
    "Missing values: a missing target stops the upload unless you drop those rows; missing numeric "
    "features are replaced by the training-split median; a missing category becomes its own level "
    "'(missing)'; columns with no values at all are dropped."
)


@dataclass(frozen=True)
class PrepConfig:
    """Every choice that turns a Dataset into model-ready arrays (all JSON values)."""

    scaling: str = "standard"
    test_size: float = 0.2
    val_size: float = 0.1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.scaling not in SCALINGS:
            raise TreevizError(f"Unknown scaling {self.scaling!r}; use one of {', '.join(SCALINGS)}.")
        for name in ("test_size", "val_size"):
            v = getattr(self, name)
            if not 0.0 <= v < 0.9:
                raise TreevizError(f"{name.replace('_', ' ')} must be a fraction in [0, 0.9), got {v}.")
        if self.test_size + self.val_size >= 0.9:
            raise TreevizError("Test and validation together must leave at least 10% for training.")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrepConfig:
        known = {k: data[k] for k in ("scaling", "test_size", "val_size", "seed") if k in data}
        return cls(**known)


@dataclass(frozen=True, eq=False)
class PreparedData:
    """A Dataset split and preprocessed; arrays are what the estimators see."""

    dataset: Dataset
    config: PrepConfig
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    X_train: np.ndarray
    X_val: np.ndarray
    X_test: np.ndarray
    notes: tuple[str, ...] = ()
    imputer: Any = None
    scaler: Any = None

    def _y(self, idx: np.ndarray) -> np.ndarray | None:
        return None if self.dataset.y is None else self.dataset.y[idx]

    @property
    def y_train(self) -> np.ndarray | None:
        return self._y(self.train_idx)

    @property
    def y_val(self) -> np.ndarray | None:
        return self._y(self.val_idx)

    @property
    def y_test(self) -> np.ndarray | None:
        return self._y(self.test_idx)

    def labels(self, part: str) -> np.ndarray | None:
        """Targets of ``part`` ("train", "val", "test") as estimators are fitted on them:
        class names for classification, values for regression, None for clustering."""
        idx = {"train": self.train_idx, "val": self.val_idx, "test": self.test_idx}[part]
        if self.dataset.task == "clustering":
            return None
        return self.dataset.y_labels[idx]

    def X(self, part: str) -> np.ndarray:
        return {"train": self.X_train, "val": self.X_val, "test": self.X_test}[part]

    def transform(self, X_raw: np.ndarray) -> np.ndarray:
        """Apply the fitted imputation and scaling to new raw feature rows."""
        X = np.asarray(X_raw, dtype=np.float64)
        X = self.imputer.transform(X) if self.imputer is not None else X
        return self.scaler.transform(X) if self.scaler is not None else X

    def affine_scaling(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(mean, scale)`` with ``X_model = (X_raw - mean) / scale`` (after imputation), or None
        when the preprocessing is not affine (quantile transform)."""
        d = self.dataset.n_features
        if self.config.scaling == "none":
            return np.zeros(d), np.ones(d)
        if self.config.scaling == "standard":
            return np.asarray(self.scaler.mean_, dtype=np.float64), np.asarray(self.scaler.scale_, dtype=np.float64)
        return None

    @property
    def fingerprint(self) -> str:
        """Identifies dataset + preprocessing choices (same print, same arrays)."""
        text = json.dumps([self.dataset.fingerprint, self.config.to_dict()], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class NoisyQuantileScaler:
    """z-score, then a normal-output quantile transform fitted on slightly noisy training data.

    The recipe of NODE (Popov et al.) that the latent-tree papers follow: Gaussian noise of
    per-feature standard deviation 1e-3 / max(std_j, 1e-3) is added to the (z-scored) training
    features *for fitting only*, so ties (binary or rounded features) do not collapse onto a few
    quantiles; transforming uses the data as it is. Seeded, so prepare() stays deterministic.
    """

    def __init__(self, n_quantiles: int, seed: int):
        self.standard = StandardScaler()
        self.quantile = QuantileTransformer(output_distribution="normal", n_quantiles=n_quantiles,
                                            random_state=seed)
        self.seed = seed

    def fit(self, X: np.ndarray) -> NoisyQuantileScaler:
        Z = self.standard.fit_transform(X)
        std = Z.std(axis=0)
        rng = np.random.default_rng(self.seed)
        noisy = Z + rng.normal(size=Z.shape) * (1e-3 / np.maximum(std, 1e-3))
        self.quantile.fit(noisy)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return self.quantile.transform(self.standard.transform(X))


def split_indices(dataset: Dataset, config: PrepConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Seeded train/val/test indices, stratified by class when every class allows it."""
    n = dataset.n_samples
    notes: list[str] = []
    idx = np.arange(n)
    strat = dataset.y if dataset.task == "classification" else None
    if strat is not None and np.bincount(strat).min() < 3:
        notes.append("Some class has fewer than 3 rows, so the split is not stratified by class.")
        strat = None

    def cut(pool: np.ndarray, frac: float, seed: int, strat_pool: np.ndarray | None):
        if frac <= 0:
            return pool, pool[:0]
        size = max(1, round(frac * n))
        if size >= pool.size:
            raise TreevizError(f"The data set has too few rows ({n}) for this split; use smaller fractions.")
        try:
            return train_test_split(pool, test_size=size, random_state=seed, stratify=strat_pool)
        except ValueError:
            notes.append("The split could not be stratified by class at this size; it is random.")
            return train_test_split(pool, test_size=size, random_state=seed)

    rest, test = cut(idx, config.test_size, config.seed, strat)
    strat_rest = None if strat is None else dataset.y[rest]
    train, val = cut(rest, config.val_size, config.seed + 1, strat_rest)
    if train.size < 2:
        raise TreevizError(f"Only {train.size} training row(s) remain after the split; use smaller fractions.")
    return np.sort(train), np.sort(val), np.sort(test), notes


def prepare(dataset: Dataset, config: PrepConfig | None = None) -> PreparedData:
    """Split ``dataset`` and fit imputation and scaling on its training part.

    Deterministic: the same dataset and config give bit-identical arrays, which is how a saved
    run finds its data again after an app restart.
    """
    config = config or PrepConfig()
    train, val, test, notes = split_indices(dataset, config)
    X = dataset.X
    imputer = None
    if np.isnan(X).any():
        train_missing = np.isnan(X[train]).all(axis=0)
        if train_missing.any():
            cols = ", ".join(np.asarray(dataset.feature_names)[train_missing][:5])
            raise TreevizError(
                f"Column(s) {cols} have no value in the training split; drop them or change the seed."
            )
        imputer = SimpleImputer(strategy="median", keep_empty_features=True).fit(X[train])
        notes.append(
            f"{int(np.isnan(X).sum())} missing feature value(s) were replaced by training-split medians."
        )
    scaler = None
    if config.scaling == "standard":
        scaler = StandardScaler()
    elif config.scaling == "quantile":
        scaler = NoisyQuantileScaler(n_quantiles=min(1000, train.size), seed=config.seed)
    Xi = imputer.transform(X) if imputer is not None else X
    if scaler is not None:
        scaler.fit(Xi[train])
        Xs = scaler.transform(Xi)
    else:
        Xs = Xi
    Xs = np.ascontiguousarray(Xs, dtype=np.float64)
    return PreparedData(
        dataset=dataset,
        config=config,
        train_idx=train,
        val_idx=val,
        test_idx=test,
        X_train=Xs[train],
        X_val=Xs[val],
        X_test=Xs[test],
        notes=tuple(dataset.notes) + tuple(notes),
        imputer=imputer,
        scaler=scaler,
    )
