"""Seeded train/validation/test split, then imputation and scaling fitted on the training part.

Missing-value policy (stated once, shown in the app):

* **target**: a row whose target is missing cannot be used; uploads either stop with a message
  or, if the user ticks "drop rows with a missing target", drop those rows (counted in the notes);
* **numeric features**: missing values are replaced by the column's median on the *training*
  split (so validation and test never leak into preprocessing);
* **categorical features**: a missing value becomes its own level, ``(missing)``, before one-hot
  encoding (done at upload, see :mod:`treeviz.services.data.upload`);
* columns that are entirely missing are dropped at upload, with a note.

Scaling choices: ``"none"``, ``"standard"`` (z-score with training mean and standard deviation)
and ``"quantile"`` (z-score, then scikit-learn's ``QuantileTransformer`` with a normal output,
fitted on training features with a little noise added to break ties, as the latent-tree papers
do after NODE; see :class:`NoisyQuantileScaler`).

Size limits (any finite value is accepted at upload):

* the z-score is computed by :class:`SafeStandardScaler`, which cannot overflow: a column whose
  training values exceed 2**500 in magnitude is divided by a power of two first;
* the models square their inputs in float32, so a feature they see must stay within
  :data:`MAX_MODEL_INPUT` (1e15) in magnitude: scaling ``"none"`` is refused for data with larger
  values, and standard scaling is refused when a validation or test value lies so far outside
  the training values that its z-score is that large (quantile scaling bounds such values).
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

from models.ground.errors import TreevizError
from treeviz.services.data.dataset import Dataset

SCALINGS = ("none", "standard", "quantile")
#: Largest feature magnitude the models are given (float32 models square their inputs).
MAX_MODEL_INPUT = 1e15
#: A training column with a larger magnitude is divided by a power of two before z-scoring.
RESCALE_ABOVE = 2.0**500

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


def describe_prep(prep: dict[str, Any]) -> str:
    """One line for people: "scaling: standard · test 20 % · validation 10 % · seed 0" (a stored
    run's ``prep`` dict; keys it lacks are left out, unknown keys are appended as ``key: value``)."""
    parts = []
    if "scaling" in prep:
        parts.append(f"scaling: {prep['scaling']}")
    for key, label in (("test_size", "test"), ("val_size", "validation")):
        if isinstance(prep.get(key), (int, float)):
            parts.append(f"{label} {100 * prep[key]:.3g} %")
    if "seed" in prep:
        parts.append(f"seed {prep['seed']}")
    parts += [f"{k}: {v}" for k, v in prep.items() if k not in ("scaling", "test_size", "val_size", "seed")]
    return " · ".join(parts) or "—"


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

    def classes(self, part: str) -> np.ndarray | None:
        """Class names of ``part``'s rows: the labels of a classification data set, the reference
        classes of a clustering data set that has them (blobs), else None. What an embedding or
        a clustering is evaluated against."""
        if self.dataset.class_names is None or self.dataset.y is None:
            return None
        idx = {"train": self.train_idx, "val": self.val_idx, "test": self.test_idx}[part]
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


class SafeStandardScaler:
    """z-score with the training mean and standard deviation that cannot overflow.

    scikit-learn's ``StandardScaler`` squares the values, so columns with values above about
    1e154 turn into NaN. Here a training column whose largest magnitude is above
    :data:`RESCALE_ABOVE` (2**500) is first divided by a power of two ``2**e`` (exact in floating
    point) that brings its largest magnitude into [1, 2), z-scored there, and the power of two is
    folded back into ``mean_`` and ``scale_``. So ``(X - mean_) / scale_`` is the z-score for every
    column, ``mean_`` and ``scale_`` are finite, and columns below the bound (all ordinary data)
    get exactly StandardScaler's numbers, bit for bit.

    Attributes
    ----------
    mean_, scale_ : numpy.ndarray
        Per-column centre and scale in the data's own units.
    exponent_ : numpy.ndarray
        Per-column power of two ``e`` the column was divided by (0 for ordinary columns).
    """

    def fit(self, X: np.ndarray) -> SafeStandardScaler:
        X = np.asarray(X, dtype=np.float64)
        magnitude = np.max(np.abs(X), axis=0, initial=0.0)
        huge = magnitude > RESCALE_ABOVE
        # frexp gives magnitude = m * 2**k with m in [0.5, 1); dividing by 2**(k - 1) puts the
        # largest value in [1, 2), so any number below 2 times 2**e is still a finite float
        self.exponent_ = np.where(huge, np.frexp(magnitude)[1] - 1, 0)
        Xs = self._shrink(X)
        standard = StandardScaler().fit(Xs)
        mean, scale = standard.mean_.copy(), standard.scale_.copy()
        if huge.any():
            # rounding may not carry the centre outside the values, nor the spread above them
            # (either would overflow once the power of two is folded back)
            mean[huge] = np.clip(mean[huge], Xs[:, huge].min(axis=0), Xs[:, huge].max(axis=0))
            scale[huge] = np.minimum(scale[huge], np.max(np.abs(Xs[:, huge]), axis=0))
        self._mean, self._scale = mean, scale
        self.mean_ = np.ldexp(mean, self.exponent_)
        self.scale_ = np.ldexp(scale, self.exponent_)
        return self

    def _shrink(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return np.ldexp(X, -self.exponent_) if self.exponent_.any() else X

    def transform(self, X: np.ndarray) -> np.ndarray:
        """The z-score of ``X`` (values far outside the training ones can still exceed float range)."""
        with np.errstate(over="ignore"):
            return (self._shrink(X) - self._mean) / self._scale


class NoisyQuantileScaler:
    """z-score, then a normal-output quantile transform fitted on slightly noisy training data.

    The recipe of NODE (Popov et al.) that the latent-tree papers follow: Gaussian noise of
    per-feature standard deviation 1e-3 / max(std_j, 1e-3) is added to the (z-scored) training
    features *for fitting only*, so ties (binary or rounded features) do not collapse onto a few
    quantiles; transforming uses the data as it is. Seeded, so prepare() stays deterministic.
    The z-score is :class:`SafeStandardScaler`'s, so any finite value can be transformed.
    """

    def __init__(self, n_quantiles: int, seed: int):
        self.standard = SafeStandardScaler()
        self.quantile = QuantileTransformer(output_distribution="normal", n_quantiles=n_quantiles,
                                            random_state=seed)
        self.seed = seed

    def fit(self, X: np.ndarray) -> NoisyQuantileScaler:
        Z = self.standard.fit(X).transform(X)
        std = Z.std(axis=0)
        rng = np.random.default_rng(self.seed)
        noisy = Z + rng.normal(size=Z.shape) * (1e-3 / np.maximum(std, 1e-3))
        self.quantile.fit(noisy)
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        # a z-score beyond float range (a value far outside the training ones) maps to the
        # extreme quantile like any value beyond the training range, so it is clipped first
        top = np.finfo(np.float64).max
        return self.quantile.transform(np.clip(self.standard.transform(X), -top, top))


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


def _largest(X: np.ndarray) -> tuple[int, float]:
    """The column holding the largest magnitude in ``X``, and that magnitude."""
    magnitude = np.max(np.abs(X), axis=0, initial=0.0)
    j = int(np.argmax(magnitude)) if magnitude.size else 0
    return j, float(magnitude[j]) if magnitude.size else 0.0


def _check_unscaled(X: np.ndarray, names: tuple[str, ...]) -> None:
    """Refuse features the models cannot take as they are (scaling "none")."""
    j, value = _largest(X)
    if value > MAX_MODEL_INPUT:
        raise TreevizError(f"Column '{names[j]}' has values up to {value:.3g} in magnitude, too large for "
                           f"the models without scaling (at most {MAX_MODEL_INPUT:.0e}). Choose standard "
                           "or quantile scaling on the Data page.")


def _check_standardised(Z: np.ndarray, names: tuple[str, ...]) -> None:
    """Refuse z-scores the models cannot take: only a validation or test value far outside the
    training values gives one (training z-scores are at most sqrt(rows))."""
    with np.errstate(invalid="ignore"):
        j, value = _largest(Z)
    if not value <= MAX_MODEL_INPUT:
        raise TreevizError(f"Column '{names[j]}' has a validation or test value so far outside its training "
                           "values that standard scaling cannot bring it into range. Choose quantile "
                           "scaling on the Data page, or another split seed.")


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
        scaler = SafeStandardScaler()
    elif config.scaling == "quantile":
        scaler = NoisyQuantileScaler(n_quantiles=min(1000, train.size), seed=config.seed)
    Xi = imputer.transform(X) if imputer is not None else X
    if scaler is not None:
        scaler.fit(Xi[train])
        Xs = scaler.transform(Xi)
    else:
        _check_unscaled(Xi, dataset.feature_names)
        Xs = Xi
    if config.scaling == "standard":
        _check_standardised(Xs, dataset.feature_names)
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
