"""Built-in datasets: scikit-learn's bundled sets, seeded synthetic sets and the sample CSVs.

Everything here works offline and is deterministic: the synthetic sets use fixed seeds, and the
CSVs in ``sample_data/`` go through the same upload path as a user's file
(:func:`~treeviz.services.data.upload.read_table` then :func:`~treeviz.services.data.upload.table_to_dataset`), so
they behave exactly as if uploaded. Loading the same key twice gives the same fingerprint.

Examples
--------
>>> ds = load_dataset("iris")
>>> ds.task, ds.n_samples, ds.class_names
('classification', 150, ('setosa', 'versicolor', 'virginica'))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn import datasets as skdata

from models.ground.errors import TreevizError
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.upload import TableOptions, read_table, table_to_dataset

SAMPLE_DIR = Path(__file__).resolve().parents[3] / "sample_data"
#: The built-in data sets that are tables on disk (sample_data/), by key: the file name.
SAMPLE_TABLES = {"penguins": "penguins.csv", "cars": "cars.csv", "seattle_weather": "seattle_weather.csv"}
SEED = 0
OBLIQUE_WEIGHT = {0: 1.0, 3: -2.0, 7: 1.5}
"""Nonzero weights of the ``oblique`` set's true hyperplane (feature index -> weight); bias 0.25."""
OBLIQUE_BIAS = 0.25


@dataclass(frozen=True)
class CatalogueEntry:
    """One built-in dataset: what it is, where it comes from, and how to load it."""

    key: str
    label: str
    task: str
    description: str
    source: str
    licence: str
    loader: Callable[[], Dataset]
    group: str = ""

    def load(self) -> Dataset:
        """Load the dataset (same as :func:`load_dataset` with this key)."""
        return load_dataset(self.key)


# ---------------------------------------------------------------------------- scikit-learn


def _from_sklearn(key: str, bunch, task: str, target_name: str, **extra) -> Dataset:
    class_names = None if task == "regression" else tuple(str(c) for c in bunch.target_names)
    return Dataset(name=key, X=bunch.data, y=bunch.target, feature_names=tuple(bunch.feature_names),
                   task=task, target_name=target_name, class_names=class_names, **extra)


def _iris() -> Dataset:
    return _from_sklearn("iris", skdata.load_iris(), "classification", "species")


def _wine() -> Dataset:
    return _from_sklearn("wine", skdata.load_wine(), "classification", "cultivar")


def _breast_cancer() -> Dataset:
    return _from_sklearn("breast_cancer", skdata.load_breast_cancer(), "classification", "diagnosis")


def _digits() -> Dataset:
    return _from_sklearn("digits", skdata.load_digits(), "classification", "digit", image_shape=(8, 8))


def _diabetes() -> Dataset:
    return _from_sklearn("diabetes", skdata.load_diabetes(scaled=False), "regression", "progression")


# ---------------------------------------------------------------------------- synthetic


def _xor(n: int = 400, noise: float = 0.15) -> Dataset:
    rng = np.random.default_rng(SEED)
    clean = rng.uniform(-1.0, 1.0, size=(n, 2))
    y = ((clean[:, 0] > 0) != (clean[:, 1] > 0)).astype(np.int64)
    X = clean + rng.normal(0.0, noise, size=clean.shape)  # labels come from the clean points
    return Dataset(name="xor", X=X, y=y, feature_names=("x1", "x2"), task="classification",
                   target_name="quadrant", class_names=("same sign", "opposite sign"))


def _moons() -> Dataset:
    X, y = skdata.make_moons(n_samples=400, noise=0.25, random_state=SEED)
    return Dataset(name="moons", X=X, y=y, feature_names=("x1", "x2"), task="classification",
                   target_name="moon", class_names=("upper", "lower"))


def _oblique(n: int = 1000, d: int = 10, noise: float = 0.1) -> Dataset:
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    for j, v in OBLIQUE_WEIGHT.items():
        w[j] = v
    margin = X @ w + OBLIQUE_BIAS + rng.normal(0.0, noise, size=n)
    y = (margin > 0).astype(np.int64)
    return Dataset(name="oblique", X=X, y=y, feature_names=tuple(f"x{j + 1}" for j in range(d)),
                   task="classification", target_name="side", class_names=("negative", "positive"),
                   meta={"true_weight": w.tolist(), "true_bias": OBLIQUE_BIAS})


def _blobs(n: int = 500, centers: int = 4) -> Dataset:
    X, y = skdata.make_blobs(n_samples=n, centers=centers, n_features=2, cluster_std=1.0,
                             random_state=SEED)
    return Dataset(name="blobs", X=X, y=y, feature_names=("x1", "x2"), task="clustering",
                   target_name="blob", class_names=tuple(f"blob {k}" for k in range(centers)))


# ---------------------------------------------------------------------------- sample CSVs


def _sample_csv(key: str, filename: str, options: TableOptions, source: str) -> Dataset:
    path = SAMPLE_DIR / filename
    if not path.is_file():
        raise TreevizError(f"The sample file {path} is missing; reinstall treeviz or restore sample_data/.")
    return table_to_dataset(read_table(filename, path.read_bytes()), key, options, source=source)


def _penguins() -> Dataset:
    return _sample_csv("penguins", SAMPLE_TABLES["penguins"], TableOptions(target="species", task="classification"),
                       "sample_data/penguins.csv (palmerpenguins, CC0)")


def _cars() -> Dataset:
    # 8 cars have no recorded MPG: drop them explicitly (the note on the Dataset says so).
    opts = TableOptions(target="Miles_per_Gallon", task="regression", drop_missing_target=True)
    return _sample_csv("cars", SAMPLE_TABLES["cars"], opts, "sample_data/cars.csv (StatLib Auto MPG via vega_datasets)")


def _seattle_weather() -> Dataset:
    return _sample_csv("seattle_weather", SAMPLE_TABLES["seattle_weather"],
                       TableOptions(target="weather", task="classification"),
                       "sample_data/seattle_weather.csv (NOAA via vega_datasets)")


# ---------------------------------------------------------------------------- the catalogue

_SKLEARN = "BSD-3-Clause, shipped with scikit-learn"
_ENTRIES = (
    CatalogueEntry("iris", "Iris flowers", "classification",
                   "150 flowers, 4 measurements, 3 species.", "Fisher 1936 (UCI), via scikit-learn",
                   "CC BY 4.0 (UCI)", _iris, "scikit-learn"),
    CatalogueEntry("wine", "Wine cultivars", "classification",
                   "178 wines, 13 chemical measurements, 3 cultivars.", "UCI, via scikit-learn",
                   "CC BY 4.0 (UCI)", _wine, "scikit-learn"),
    CatalogueEntry("breast_cancer", "Breast cancer (Wisconsin)", "classification",
                   "569 tumours, 30 cell-nucleus features, malignant or benign.",
                   "UCI Breast Cancer Wisconsin (Diagnostic), via scikit-learn", "CC BY 4.0 (UCI)",
                   _breast_cancer, "scikit-learn"),
    CatalogueEntry("digits", "Handwritten digits (8×8)", "classification",
                   "1797 images of 8×8 grey pixels (0–16), 10 digits.",
                   "UCI Optical Recognition of Handwritten Digits, via scikit-learn", "CC BY 4.0 (UCI)",
                   _digits, "scikit-learn"),
    CatalogueEntry("diabetes", "Diabetes progression", "regression",
                   "442 patients, 10 baseline variables in original units, disease progression "
                   "after one year.", "Efron et al. 2004, via scikit-learn", _SKLEARN, _diabetes,
                   "scikit-learn"),
    CatalogueEntry("xor", "XOR (2-D)", "classification",
                   "400 points in the square; class = whether x1 and x2 have opposite signs, with "
                   "Gaussian jitter. No single split helps; two levels of splits do.",
                   "synthetic (seeded)", "generated by treeviz", _xor, "synthetic"),
    CatalogueEntry("moons", "Two moons", "classification",
                   "400 points on two interleaved half circles, noise 0.25.",
                   "synthetic (scikit-learn make_moons, seeded)", "generated by treeviz", _moons,
                   "synthetic"),
    CatalogueEntry("oblique", "Oblique boundary (10-D)", "classification",
                   "1000 points in 10 dimensions; class = side of a sparse hyperplane on x1, x4 and "
                   "x8 (plus small noise). One oblique split suffices; an axis-aligned tree needs many.",
                   "synthetic (seeded)", "generated by treeviz", _oblique, "synthetic"),
    CatalogueEntry("blobs", "Gaussian blobs", "clustering",
                   "500 points in 4 Gaussian blobs; the blob index is kept only to evaluate "
                   "clusterings.", "synthetic (scikit-learn make_blobs, seeded)", "generated by treeviz",
                   _blobs, "synthetic"),
    CatalogueEntry("penguins", "Palmer penguins", "classification",
                   "344 penguins, bill, flipper and mass measurements, island and sex; 3 species.",
                   "Horst, Hill & Gorman (2020), palmerpenguins", "CC0 1.0", _penguins, "sample CSV"),
    CatalogueEntry("cars", "Cars (Auto MPG)", "regression",
                   "398 cars from 1970–82 with a known fuel economy (8 rows without one are dropped); "
                   "predict miles per gallon.", "StatLib (Donoho & Ramos 1982), via vega_datasets",
                   "StatLib data; vega_datasets package BSD-3-Clause", _cars, "sample CSV"),
    CatalogueEntry("seattle_weather", "Seattle weather", "classification",
                   "1461 days of 2012–15 precipitation, temperatures and wind; predict the weather "
                   "type. The date becomes one feature, the decimal year.",
                   "NOAA, via vega_datasets", "public domain (NOAA)", _seattle_weather, "sample CSV"),
)
CATALOGUE: dict[str, CatalogueEntry] = {entry.key: entry for entry in _ENTRIES}


def list_datasets() -> list[CatalogueEntry]:
    """All built-in datasets in display order (scikit-learn, synthetic, sample CSVs).

    Returns
    -------
    list of CatalogueEntry
    """
    return list(CATALOGUE.values())


def load_dataset(key: str) -> Dataset:
    """Load a built-in dataset by its key.

    Parameters
    ----------
    key : str
        A key of :data:`CATALOGUE`, e.g. ``"iris"`` or ``"oblique"``.

    Returns
    -------
    Dataset
        A fresh Dataset (callers may not share arrays between loads); its ``description`` and
        ``source`` come from the catalogue entry.

    Raises
    ------
    TreevizError
        If the key is unknown; the message lists the known keys.
    """
    entry = CATALOGUE.get(key)
    if entry is None:
        raise TreevizError(f"There is no built-in dataset called {key!r}. "
                           f"Choose one of: {', '.join(CATALOGUE)}.")
    ds = entry.loader()
    return replace(ds, description=entry.description, source=ds.source or f"{entry.source} ({entry.licence})",
                   meta={**ds.meta, "catalogue_key": key})


def load_table(key: str) -> pd.DataFrame:
    """A built-in data set as a raw table, the columns a user would upload (what a model that carries
    its preprocessing predicts from): the CSV of a sample table as read at upload (text, gaps and all),
    or the features and the target of an array data set as columns.

    Examples
    --------
    >>> list(load_table("penguins").columns)[:3]
    ['species', 'island', 'bill_length_mm']
    >>> load_table("iris").shape
    (150, 5)
    """
    if key in SAMPLE_TABLES:
        path = SAMPLE_DIR / SAMPLE_TABLES[key]
        if not path.is_file():
            raise TreevizError(f"The sample file {path} is missing; reinstall treeviz or restore sample_data/.")
        return read_table(path.name, path.read_bytes())
    dataset = load_dataset(key)
    table = pd.DataFrame(dataset.X, columns=list(dataset.feature_names))
    if dataset.y is not None and dataset.target_name:
        table[dataset.target_name] = dataset.y_labels if dataset.task != "clustering" else dataset.y
    return table
