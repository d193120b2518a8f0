"""prepare(): seeded stratified split, imputation and scaling fitted on the training split only."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from models.ground.errors import TreevizError
from tests.bad_inputs import load
from treeviz.services.data import Dataset, PrepConfig, load_dataset, prepare
from treeviz.services.data.preprocess import SafeStandardScaler


def with_missing(n: int = 200, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[rng.random(size=X.shape) < 0.1] = np.nan
    y = (rng.random(n) < 0.3).astype(int)
    return Dataset(name="m", X=X, y=y, feature_names=("a", "b", "c"), task="classification",
                   class_names=("no", "yes"))


@pytest.mark.parametrize("scaling", ["none", "standard", "quantile"])
def test_prepare_is_bit_identical_for_the_same_config(scaling):
    config = PrepConfig(scaling=scaling, seed=3)
    first, second = prepare(with_missing(), config), prepare(with_missing(), config)
    for part in ("train", "val", "test"):
        assert first.X(part).tobytes() == second.X(part).tobytes()
    assert np.array_equal(first.train_idx, second.train_idx)
    assert first.fingerprint == second.fingerprint


def test_seed_changes_the_split():
    ds = load_dataset("iris")
    a, b = prepare(ds, PrepConfig(seed=0)), prepare(ds, PrepConfig(seed=1))
    assert not np.array_equal(a.test_idx, b.test_idx)
    assert a.fingerprint != b.fingerprint


def test_parts_are_disjoint_and_cover_every_row():
    prepared = prepare(load_dataset("wine"), PrepConfig(test_size=0.2, val_size=0.1))
    parts = [prepared.train_idx, prepared.val_idx, prepared.test_idx]
    assert sum(p.size for p in parts) == 178
    assert np.array_equal(np.sort(np.concatenate(parts)), np.arange(178))


def test_split_is_stratified_by_class():
    prepared = prepare(load_dataset("iris"), PrepConfig(test_size=0.2, val_size=0.1))
    assert np.bincount(prepared.y_test).tolist() == [10, 10, 10]
    assert np.bincount(prepared.y_val).tolist() == [5, 5, 5]
    assert np.bincount(prepared.y_train).tolist() == [35, 35, 35]


def test_tiny_classes_fall_back_to_a_random_split_with_a_note():
    ds = with_missing()
    y = ds.y.copy()
    y[:2] = 2
    ds = Dataset(name="t", X=ds.X, y=y, feature_names=ds.feature_names, task="classification",
                 class_names=("no", "yes", "rare"))
    assert any("not stratified" in note for note in prepare(ds).notes)


def test_imputation_uses_training_medians_only():
    X = np.arange(40, dtype=float).reshape(20, 2)
    X[0, 0] = X[1, 1] = np.nan
    ds = Dataset(name="imp", X=X, y=np.arange(20) % 2, feature_names=("a", "b"),
                 task="classification", class_names=("x", "y"))
    config = PrepConfig(scaling="none", test_size=0.25, val_size=0.0)
    prepared = prepare(ds, config)
    train = prepared.train_idx
    medians = np.nanmedian(X[train], axis=0)
    assert np.allclose(prepared.imputer.statistics_, medians)
    assert not np.allclose(medians, np.nanmedian(X, axis=0))  # the full-data median differs
    filled = prepared.transform(X)
    assert filled[0, 0] == medians[0] and filled[1, 1] == medians[1]
    assert any("training-split medians" in note for note in prepared.notes)
    for part in ("train", "val", "test"):
        assert not np.isnan(prepared.X(part)).any()


def test_standard_scaling_centres_the_training_split():
    prepared = prepare(load_dataset("wine"), PrepConfig(scaling="standard"))
    assert np.allclose(prepared.X_train.mean(axis=0), 0, atol=1e-10)
    assert np.allclose(prepared.X_train.std(axis=0), 1, atol=1e-10)
    assert not np.allclose(prepared.X_test.mean(axis=0), 0, atol=1e-3)  # fitted on train only


def test_quantile_scaling_makes_skewed_columns_normal():
    rng = np.random.default_rng(0)
    X = np.exp(rng.normal(size=(500, 2)) * 1.5)  # log-normal: heavily skewed
    ds = Dataset(name="skew", X=X, y=None, feature_names=("a", "b"), task="clustering")
    Xt = prepare(ds, PrepConfig(scaling="quantile")).X_train
    assert np.allclose(np.median(Xt, axis=0), 0, atol=0.05)
    assert np.allclose(Xt.std(axis=0), 1, atol=0.15)
    assert abs(np.mean(Xt**3)) < 0.2  # skewness gone (it is > 10 for the raw log-normal)


def test_quantile_scaling_preserves_order():
    ds = load_dataset("diabetes")
    prepared = prepare(ds, PrepConfig(scaling="quantile"))
    Xt, raw = prepared.X_train, ds.X[prepared.train_idx]
    for j in range(ds.n_features):
        order = np.argsort(raw[:, j], kind="stable")
        assert np.all(np.diff(Xt[order, j]) >= -1e-12)


def test_no_scaling_keeps_values():
    ds = load_dataset("iris")
    prepared = prepare(ds, PrepConfig(scaling="none"))
    assert np.array_equal(prepared.X_test, ds.X[prepared.test_idx])


def test_transform_matches_the_prepared_arrays():
    ds = with_missing()
    prepared = prepare(ds, PrepConfig(scaling="quantile"))
    assert np.allclose(prepared.transform(ds.X[prepared.test_idx]), prepared.X_test)


def test_y_labels_and_part_labels():
    iris = load_dataset("iris")
    assert iris.y_labels[0] == "setosa" and iris.y_labels[-1] == "virginica"
    prepared = prepare(iris)
    assert set(prepared.labels("train")) == {"setosa", "versicolor", "virginica"}
    assert np.array_equal(prepared.labels("test"), iris.y_labels[prepared.test_idx])
    diabetes = prepare(load_dataset("diabetes"))
    assert np.array_equal(diabetes.labels("val"), diabetes.dataset.y[diabetes.val_idx])
    assert prepare(load_dataset("blobs")).labels("train") is None


def test_notes_carry_the_dataset_notes():
    cars = load_dataset("cars")
    assert prepare(cars).notes[: len(cars.notes)] == cars.notes


@pytest.mark.parametrize("kwargs, expected", [
    ({"scaling": "minmax"}, "Unknown scaling"), ({"test_size": 0.95}, "test size"),
    ({"test_size": 0.5, "val_size": 0.45}, "at least 10%"),
])
def test_bad_config(kwargs, expected):
    with pytest.raises(TreevizError, match=expected):
        PrepConfig(**kwargs)


def test_config_round_trip():
    config = PrepConfig(scaling="quantile", test_size=0.3, val_size=0.0, seed=7)
    assert PrepConfig.from_dict(config.to_dict()) == config


def test_too_few_rows_for_the_split():
    ds = Dataset(name="tiny", X=np.zeros((3, 1)), y=None, feature_names=("a",), task="clustering")
    with pytest.raises(TreevizError, match="too few rows"):
        prepare(ds, PrepConfig(test_size=0.5, val_size=0.3))


def test_affine_scaling_maps_raw_features_to_model_features():
    from treeviz.services.data import load_dataset

    ds = load_dataset("iris")
    prepared = prepare(ds, PrepConfig(scaling="standard"))
    mean, scale = prepared.affine_scaling()
    np.testing.assert_allclose((ds.X[prepared.train_idx] - mean) / scale, prepared.X_train, atol=1e-12)
    mean0, scale0 = prepare(ds, PrepConfig(scaling="none")).affine_scaling()
    assert not mean0.any() and (scale0 == 1).all()
    assert prepare(ds, PrepConfig(scaling="quantile")).affine_scaling() is None


def test_quantile_scaling_breaks_ties_only_while_fitting():
    from treeviz.services.data import Dataset

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 2, 200).astype(float), rng.normal(size=200)])
    ds = Dataset(name="ties", X=X, y=rng.integers(0, 2, 200), feature_names=("bit", "g"),
                 task="classification", class_names=("a", "b"))
    prepared = prepare(ds, PrepConfig(scaling="quantile", seed=3))
    again = prepare(ds, PrepConfig(scaling="quantile", seed=3))
    np.testing.assert_array_equal(prepared.X_train, again.X_train)  # seeded noise: deterministic
    # transforming is noise-free: equal inputs give equal outputs, and the binary feature keeps
    # exactly two values
    assert np.unique(prepared.X_train[:, 0]).size == 2
    assert np.isfinite(prepared.X_test).all()
    assert abs(np.median(prepared.X_train[:, 1])) < 0.2  # a normal output


# ---------------------------------------------------------------------------- values near ±1e308


def test_standard_scaling_is_scikit_learn_bit_for_bit_on_ordinary_data():
    ds = with_missing()
    prepared = prepare(ds, PrepConfig(scaling="standard", seed=2))
    X = prepared.imputer.transform(ds.X)
    reference = StandardScaler().fit(X[prepared.train_idx])
    assert np.array_equal(prepared.X_train, reference.transform(X)[prepared.train_idx])
    assert np.array_equal(prepared.X_test, reference.transform(X)[prepared.test_idx])
    mean, scale = prepared.affine_scaling()
    assert np.array_equal(mean, reference.mean_) and np.array_equal(scale, reference.scale_)


@pytest.mark.parametrize("scaling", ["standard", "quantile"])
def test_values_near_the_largest_float_scale_to_finite_arrays(scaling):
    ds = load("huge_values")
    assert np.abs(ds.X).max() > 1.5e308
    prepared = prepare(ds, PrepConfig(scaling=scaling))
    for part in ("train", "val", "test"):
        assert np.isfinite(prepared.X(part)).all()
    assert np.isfinite(prepared.transform(ds.X)).all()
    if scaling == "standard":
        big = ds.feature_names.index("big")
        assert abs(prepared.X_train[:, big].mean()) < 1e-12
        assert abs(prepared.X_train[:, big].std() - 1) < 1e-12


def test_affine_scaling_of_values_near_the_largest_float():
    ds = load("huge_values")
    prepared = prepare(ds, PrepConfig(scaling="standard"))
    mean, scale = prepared.affine_scaling()
    assert np.isfinite(mean).all() and np.isfinite(scale).all()
    raw = ds.X[prepared.train_idx]
    # X_model = (X_raw - mean) / scale, written so that the subtraction cannot overflow
    np.testing.assert_allclose(raw / scale - mean / scale, prepared.X_train, rtol=0, atol=1e-12)


def test_scaling_none_refuses_values_too_large_for_the_models():
    with pytest.raises(TreevizError) as info:
        prepare(load("huge_values"), PrepConfig(scaling="none"))
    message = str(info.value)
    assert "Column 'big' has values up to 1.56e+308 in magnitude" in message
    assert "Choose standard or quantile scaling on the Data page." in message
    X = np.column_stack([np.arange(20.0), np.arange(20.0) * 1e14])  # 1.9e15: just too large
    ds = Dataset(name="e15", X=X, y=None, feature_names=("ok", "e15"), task="clustering")
    with pytest.raises(TreevizError, match=r"Column 'e15' has values up to 1\.9e\+15"):
        prepare(ds, PrepConfig(scaling="none"))
    prepare(Dataset(name="fine", X=X / 2, y=None, feature_names=("ok", "e15"), task="clustering"),
            PrepConfig(scaling="none"))


def test_safe_standard_scaler_at_the_largest_floats():
    top = np.finfo(np.float64).max
    X = np.column_stack([
        np.array([top, -top] * 5),  # spread as large as the values themselves
        np.full(10, -top),  # constant at the edge of the float range
        np.linspace(-1, 1, 10) * 2.0**501,  # just above the bound
        np.linspace(-1, 1, 10),  # ordinary
    ])
    scaler = SafeStandardScaler().fit(X)
    Z = scaler.transform(X)
    assert np.isfinite(scaler.mean_).all() and np.isfinite(scaler.scale_).all()
    assert np.isfinite(Z).all()
    np.testing.assert_allclose(Z[:, [0, 2, 3]].mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z[:, [0, 2, 3]].std(axis=0), 1, atol=1e-12)
    assert not Z[:, 1].any()
    assert scaler.exponent_.tolist() == [1023, 1023, 501, 0]  # largest value / 2**e in [1, 2)
    with np.errstate(all="ignore"):
        reference = StandardScaler().fit(X)  # overflows in the huge columns, exact in the ordinary one
        assert np.isnan(reference.transform(X)[:, 1]).all()
    assert scaler.mean_[3] == reference.mean_[3] and scaler.scale_[3] == reference.scale_[3]


def test_standard_scaling_refuses_a_test_value_far_outside_the_training_values():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    ds = Dataset(name="far", X=X, y=None, feature_names=("a", "b"), task="clustering")
    test_row = prepare(ds).test_idx[0]  # the split does not depend on the values
    X[test_row, 1] = 1e300
    ds = Dataset(name="far", X=X, y=None, feature_names=("a", "b"), task="clustering")
    with pytest.raises(TreevizError, match="Column 'b' has a validation or test value"):
        prepare(ds, PrepConfig(scaling="standard"))
    assert np.isfinite(prepare(ds, PrepConfig(scaling="quantile")).X_test).all()
