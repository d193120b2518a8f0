"""Skinny Trees' defaults select features (issue 52): constant columns are always removed, and the
default λ0 ("auto") trains a λ0 path together and keeps the largest λ0 whose validation score stays
within a point of keeping every feature. The full accuracy check on digits and the held-out tables
against CART is benchmarks/paper/skinny_defaults.py."""

import math

import numpy as np
import pytest
from sklearn.datasets import make_classification

from models.registry import get_family
from models.skinny import auto
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor, fit_together
from models.skinny.family import AUTO_TRIALS
from models.skinny.prox import l0_threshold
from treeviz.services.data import PrepConfig, load_dataset, prepare


@pytest.fixture(scope="module")
def digits():
    return prepare(load_dataset("digits"), PrepConfig())  # the app's default preparation


def test_the_defaults_remove_the_constant_pixels_and_select_pixels_on_digits(digits):
    est = SkinnyTreesClassifier(max_epochs=8)  # the defaults, fewer epochs
    assert est.lambda0 is None and get_family("skinny").param("lambda0", "classification").default is None
    est.fit(digits.X_train, digits.labels("train"), eval_set=(digits.X_val, digits.labels("val")))
    constant = np.flatnonzero(np.ptp(digits.X_train, axis=0) == 0)
    assert constant.size >= 3  # pixels 0, 32 and 39 are zero in every row of digits
    assert np.array_equal(est.constant_features_, constant)
    assert not np.isin(constant, est.selected_features_).any()
    assert np.all(est.feature_norms_[constant] == 0)
    # the penalty removed pixels beyond the constant ones, and no more than the validation allowed
    path = est.lambda0_path_
    assert [r["ratio"] for r in path] == list(auto.RATIOS) and path[0]["lambda0"] == 0.0
    assert path[0]["n_features"] == 64 - constant.size  # no penalty: every varying pixel kept
    assert est.lambda0_ > 0 and est.selected_features_.size < 64 - constant.size
    chosen = next(r for r in path if r["lambda0"] == est.lambda0_)
    best = max(r["val_score"] for r in path)
    assert chosen["val_score"] >= best - auto.TOLERANCE
    assert chosen["n_features"] == est.selected_features_.size == est.history_[-1]["n_features"]
    notes = " ".join(est.to_trees()[0].meta["notes"])
    assert f"{constant.size} constant features" in notes and "λ0 chosen from the data" in notes


def test_a_constant_column_is_never_used_whatever_its_value_or_the_penalty():
    X, y = make_classification(n_samples=120, n_features=5, n_informative=3, random_state=0)
    X = np.column_stack([X[:, :2], np.full(120, 3.0), X[:, 2:]])  # column 2: constant, not zero
    est = SkinnyTreesClassifier(lambda0=0.0, n_trees=3, depth=2, max_epochs=5).fit(X, y)
    assert est.constant_features_.tolist() == [2] and 2 not in est.selected_features_
    assert est.selected_features_.size == 5 and est.kernel_.shape == (6, 9)
    other = X.copy()
    other[:, 2] = -7.0
    np.testing.assert_array_equal(est.predict_proba(X), est.predict_proba(other))


def test_the_path_threshold_is_the_ratio_times_the_initial_row_norm():
    p, columns, nodes, rate = 64, 59, 300, 0.1
    for ratio in (0.8, 1.0, 1.2):
        lam = auto.lambda0_for_ratio(ratio, n_inputs=p, n_columns=columns, n_nodes=nodes, learning_rate=rate)
        expected = ratio * math.sqrt(auto.initial_row_norm_sq(columns, nodes))
        assert l0_threshold(rate, lam / p) == pytest.approx(expected)
    assert AUTO_TRIALS == len(auto.RATIOS) and auto.RATIOS[0] == 0.0


def test_choose_keeps_the_largest_lambda_within_the_tolerances():
    rec = lambda score, loss: {"val_score": score, "val_loss": loss}  # noqa: E731
    assert auto.choose([rec(0.98, 0.10), rec(0.98, 0.11), rec(0.975, 0.12), rec(0.95, 0.2)]) == 2
    assert auto.choose([rec(0.98, 0.10), rec(0.98, 0.11), rec(0.98, 0.13)]) == 1  # loss over +25 %
    assert auto.choose([rec(0.90, 0.20), rec(0.93, 0.10), rec(0.92, 0.11)]) == 2  # measured from the best
    assert auto.choose([rec(0.98, 0.10), rec(0.98, 0.10)], errors=[None, "diverged"]) == 0
    assert auto.choose([{"loss": 1.0}, {"loss": 2.0}]) == 0  # no validation numbers: no penalty


def test_the_path_trains_like_separate_fits_and_reloads_with_its_choice(tmp_path):
    X, y = make_classification(n_samples=200, n_features=8, n_informative=3, random_state=1)
    Xv, yv = X[150:], y[150:]
    X, y = X[:150], y[:150]
    est = SkinnyTreesClassifier(n_trees=4, depth=2, max_epochs=6).fit(X, y, eval_set=(Xv, yv))
    plain = SkinnyTreesClassifier(n_trees=4, depth=2, max_epochs=6, lambda0=est.lambda0_).fit(X, y, eval_set=(Xv, yv))
    np.testing.assert_allclose(est.predict_proba(Xv), plain.predict_proba(Xv), atol=1e-4)
    assert est.selected_features_.tolist() == plain.selected_features_.tolist()
    est.save(str(tmp_path / "m"))
    from models.persist import load_model
    back = load_model(str(tmp_path / "m"))
    assert back.lambda0_ == est.lambda0_ and back.lambda0_path_ == est.lambda0_path_
    np.testing.assert_array_equal(back.predict(Xv), est.predict(Xv))
    # in a batch of fits (a search), an auto λ0 trains its own path
    others = [SkinnyTreesClassifier(n_trees=4, depth=2, max_epochs=6, lambda0=v) for v in (None, 50.0)]
    assert fit_together(others, X, y, eval_set=(Xv, yv)) == [None, None]
    assert others[0].lambda0_ == est.lambda0_ and others[1].lambda0_ == 50.0


def test_without_validation_rows_the_choice_reads_the_training_rows():
    X, y = make_classification(n_samples=100, n_features=4, n_informative=2, random_state=2)
    est = SkinnyTreesRegressor(n_trees=3, depth=2, max_epochs=4).fit(X, y.astype(float))
    assert est.lambda0_selected_on_ == "training" and len(est.lambda0_path_) == len(auto.RATIOS)
