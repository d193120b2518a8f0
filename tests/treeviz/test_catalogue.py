"""The built-in datasets: every entry loads, offline, deterministically, with the promised task."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.services.data import (
    CATALOGUE,
    Dataset,
    TableOptions,
    list_datasets,
    load_dataset,
    read_table,
    table_to_dataset,
)
from treeviz.services.data.catalogue import OBLIQUE_BIAS, SAMPLE_DIR

KEYS = sorted(CATALOGUE)
EXPECTED_TASKS = {
    "iris": "classification", "wine": "classification", "breast_cancer": "classification",
    "digits": "classification", "diabetes": "regression", "xor": "classification",
    "moons": "classification", "oblique": "classification", "blobs": "clustering",
    "penguins": "classification", "cars": "regression", "seattle_weather": "classification",
}


def test_catalogue_has_the_promised_entries():
    assert set(CATALOGUE) == set(EXPECTED_TASKS)
    assert [e.key for e in list_datasets()] == list(CATALOGUE)


@pytest.mark.parametrize("key", KEYS)
def test_entry_loads_with_its_task(key):
    entry = CATALOGUE[key]
    ds = load_dataset(key)
    assert isinstance(ds, Dataset)
    assert ds.task == entry.task == EXPECTED_TASKS[key]
    assert ds.name == key and ds.meta["catalogue_key"] == key
    assert ds.description == entry.description and ds.source
    assert entry.label and entry.licence and entry.source
    assert ds.n_samples >= 150 and ds.n_features >= 2
    assert len(set(ds.feature_names)) == ds.n_features
    assert not np.isinf(ds.X).any()
    if ds.task == "classification":
        assert ds.n_classes >= 2 and set(np.unique(ds.y)) == set(range(ds.n_classes))


@pytest.mark.parametrize("key", KEYS)
def test_fingerprint_stable_across_loads(key):
    first, second = load_dataset(key), load_dataset(key)
    assert first.fingerprint == second.fingerprint
    assert first.X is not second.X  # fresh arrays: one caller cannot change another's data


def test_unknown_key_lists_known_keys():
    with pytest.raises(TreevizError, match="no built-in dataset called 'iriss'") as info:
        load_dataset("iriss")
    assert "iris, wine" in str(info.value) and str(info.value).endswith(".")


def test_sklearn_names_are_used():
    iris = load_dataset("iris")
    assert iris.class_names == ("setosa", "versicolor", "virginica")
    assert iris.feature_names[0] == "sepal length (cm)"
    assert load_dataset("breast_cancer").class_names == ("malignant", "benign")
    diabetes = load_dataset("diabetes")
    assert diabetes.class_names is None and diabetes.feature_names[:3] == ("age", "sex", "bmi")
    assert diabetes.X[:, 0].max() > 1  # original units (years), not scikit-learn's scaled copy


def test_digits_is_an_image():
    digits = load_dataset("digits")
    assert digits.image_shape == (8, 8) and digits.n_features == 64 and digits.n_classes == 10
    assert digits.class_names == tuple(str(d) for d in range(10))


def test_blobs_is_clustering_with_reference_groups():
    blobs = load_dataset("blobs")
    assert blobs.task == "clustering" and blobs.y is not None
    assert blobs.class_names == ("blob 0", "blob 1", "blob 2", "blob 3")


def test_xor_needs_both_coordinates():
    xor = load_dataset("xor")
    assert 300 <= xor.n_samples <= 500
    for j in range(2):  # one axis split alone is close to chance
        guess = (xor.X[:, j] > 0).astype(int)
        assert 0.35 < np.mean(guess == xor.y) < 0.65
    quadrant = ((xor.X[:, 0] > 0) != (xor.X[:, 1] > 0)).astype(int)
    assert 0.8 < np.mean(quadrant == xor.y) < 1.0  # noisy, but two splits explain it


def test_oblique_is_separated_by_one_sparse_hyperplane():
    ds = load_dataset("oblique")
    w = np.asarray(ds.meta["true_weight"])
    assert ds.X.shape == (1000, 10) and np.count_nonzero(w) == 3
    accuracy = np.mean(((ds.X @ w + OBLIQUE_BIAS) > 0).astype(int) == ds.y)
    assert accuracy > 0.97
    best_axis = max(max(np.mean((ds.X[:, j] > t) == ds.y) for t in np.quantile(ds.X[:, j], [0.3, 0.5, 0.7]))
                    for j in range(10))
    assert best_axis < accuracy - 0.15  # no single axis-aligned split comes close


def test_moons_size_and_balance():
    moons = load_dataset("moons")
    assert moons.n_samples == 400 and np.bincount(moons.y).tolist() == [200, 200]


def test_sample_csvs_go_through_the_upload_path():
    path = SAMPLE_DIR / "penguins.csv"
    by_hand = table_to_dataset(read_table("penguins.csv", path.read_bytes()), "penguins",
                               TableOptions(target="species", task="classification"))
    catalogued = load_dataset("penguins")
    assert by_hand.fingerprint == catalogued.fingerprint
    assert catalogued.feature_names == by_hand.feature_names
    assert "sex=(missing)" in catalogued.feature_names


def test_cars_drops_rows_without_mpg_with_a_note():
    cars = load_dataset("cars")
    assert cars.n_samples == 398 and cars.target_name == "Miles_per_Gallon"
    assert any("Dropped 8 row(s)" in note for note in cars.notes)
    assert "Name" not in cars.feature_names  # 300+ distinct car names are left out
    assert {"Origin=Europe", "Origin=Japan", "Origin=USA"} <= set(cars.feature_names)


def test_seattle_weather_reads_its_year_first_dates():
    weather = load_dataset("seattle_weather")  # dates written 2012/01/01
    assert weather.n_samples == 1461 and weather.n_classes == 5
    assert weather.feature_names == ("date (year)", "precipitation", "temp_max", "temp_min", "wind")
    assert weather.X[0, 0] == 2012.0 and weather.X[-1, 0] > 2015.99
    assert any("as dates" in note for note in weather.notes)


def test_sample_data_readme_names_source_and_licence():
    readme = (Path(SAMPLE_DIR) / "README.md").read_text(encoding="utf-8")
    for needle in ("penguins.csv", "CC0", "Horst", "cars.csv", "StatLib", "Donoho", "BSD-3",
                   "seattle_weather.csv", "NOAA", "public domain"):
        assert needle in readme
