"""Skinny Trees estimators: selection, the compact model, the Trees, the synthetic support, guards."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine
from sklearn.preprocessing import StandardScaler

from models.ground.errors import TreevizError
from models.persist import load_model, model_bytes, zip_bytes
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor, auto_epochs
from models.skinny.synthetic import correlated_design, sparse_regression, support_f1, true_support

FAST = {"n_trees": 6, "depth": 3, "device": "cpu"}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def skinny(cancer):
    X, y = cancer
    return SkinnyTreesClassifier(**FAST, max_epochs=40, lambda0=600.0).fit(X[:400], y[:400],
                                                                           eval_set=(X[400:], y[400:]))


def test_features_are_selected_and_recorded(skinny):
    k = skinny.selected_features_.size
    assert 1 <= k < 30
    assert np.array_equal(skinny.get_support(indices=True), skinny.selected_features_)
    assert skinny.get_support().sum() == k
    assert np.all(skinny.feature_norms_[skinny.selected_features_] > 0)
    assert np.count_nonzero(skinny.feature_norms_) == k
    record = skinny.history_[-1]
    assert record["n_features"] == k and record["epoch"] == 40
    assert {"loss", "val_loss", "val_score", "lambda0", "threshold", "step"} <= set(record)
    counts = [r["n_features"] for r in skinny.history_]
    assert counts[0] > k and counts[-1] == k


def test_removed_features_have_no_influence_on_predictions(skinny, cancer):
    X = cancer[0].copy()
    removed = np.setdiff1d(np.arange(30), skinny.selected_features_)
    before = skinny.predict_proba(X)
    X[:, removed] = np.random.default_rng(0).normal(scale=100, size=(X.shape[0], removed.size))
    assert np.array_equal(skinny.predict_proba(X), before)


def test_the_compact_model_predicts_identically_and_survives_a_model_file(skinny, cancer):
    X = cancer[0]
    small = skinny.compact()
    Xs = X[:, skinny.selected_features_]
    assert small.n_features_in_ == skinny.selected_features_.size
    assert small.feature_names_ == tuple(skinny.feature_names_[k] for k in skinny.selected_features_)
    assert np.array_equal(small.predict_proba(Xs), skinny.predict_proba(X))
    assert np.array_equal(small.predict(Xs), skinny.predict(X))
    again = load_model(zip_bytes(model_bytes(small)))
    assert np.array_equal(again.predict_proba(Xs), skinny.predict_proba(X))


def test_the_trees_are_soft_and_sum_to_the_model(skinny, cancer):
    X = cancer[0][:50]
    trees = skinny.to_trees()
    assert len(trees) == 6 and all(t.routing == "soft" and t.n_nodes == 15 for t in trees)
    removed = np.setdiff1d(np.arange(30), skinny.selected_features_)
    assert all(np.all(t.weight[:, removed] == 0) for t in trees)
    logits = sum(t.predict_value(X) for t in trees)
    np.testing.assert_allclose(logits, skinny._outputs(X), atol=1e-12)
    proba = np.exp(logits - logits.max(1, keepdims=True))
    np.testing.assert_allclose(proba / proba.sum(1, keepdims=True), skinny.predict_proba(X), atol=1e-12)
    # the Tree's soft routing is the model's: S(w·x + b) to the left, stored as −w, −b
    model = skinny._model()
    with torch.no_grad():
        P = model.leaf_probabilities(torch.from_numpy(X[:, skinny.selected_features_])).numpy()
    reach = trees[2].reach_probability(X)
    np.testing.assert_allclose(reach[:, trees[2].leaves], P[:, 2], atol=1e-12)


def test_regression_trees_give_values_in_the_datas_units():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = SkinnyTreesRegressor(**FAST, max_epochs=20).fit(X, y)
    assert 100 < model.target_mean_[0] < 200
    total = sum(t.predict_value(X) for t in model.to_trees())[:, 0]
    np.testing.assert_allclose(total, model.predict(X), rtol=1e-12)
    assert model.score(X, y) > 0.2
    raw = SkinnyTreesRegressor(**FAST, max_epochs=2, target_scaling="none", learning_rate=1e-4).fit(X, y / 100)
    assert raw.target_mean_.tolist() == [0.0] and raw.target_scale_.tolist() == [1.0]


def test_the_feature_count_never_increases_as_lambda0_grows():
    data = sparse_regression(300, 64, 0.5, seed=3)
    counts = []
    for lam in (10.0, 100.0, 1000.0, 10_000.0):
        model = SkinnyTreesRegressor(n_trees=8, depth=2, lambda0=lam, lambda2=1.0, learning_rate=0.05,
                                     max_epochs=40, target_scaling="none", device="cpu", random_state=0)
        counts.append(model.fit(data.X, data.y).selected_features_.size)
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]


def test_the_correlated_design_has_the_papers_covariance():
    """Σ_ij = σ^|i−j|: unit variances, correlation σ at lag 1 and σ² at lag 2, C-ordered rows."""
    X = correlated_design(20_000, 6, 0.5, np.random.default_rng(0))
    assert X.shape == (20_000, 6) and X.flags["C_CONTIGUOUS"]
    C = np.cov(X, rowvar=False)
    assert np.allclose(np.diag(C), 1.0, atol=0.03)
    assert np.allclose(np.diag(C, 1), 0.5, atol=0.03) and np.allclose(np.diag(C, 2), 0.25, atol=0.03)
    again = correlated_design(20_000, 6, 0.5, np.random.default_rng(0))
    assert np.array_equal(X, again)  # one seed, one design


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_synthetic_sparse_regression_support_is_recovered_exactly():
    """The paper's Table 1 setting σ = 0.5, p = 256, N = 1000: the eight true columns and no other."""
    data = sparse_regression(1000, 256, 0.5, seed=1)
    assert true_support(256).tolist() == [16, 48, 80, 112, 144, 176, 208, 240]
    model = SkinnyTreesRegressor(n_trees=20, depth=2, learning_rate=0.05, lambda2=10.0, lambda0=100.0,
                                 temperature=0.01, batch_size=16, max_epochs=300, target_scaling="none",
                                 min_features=0, device="cpu", random_state=1)
    model.fit(data.X[:800], data.y[:800])
    assert support_f1(model.selected_features_, data.support) == 1.0
    assert np.mean((model.predict(data.X_test) - data.y_test) ** 2) < 0.45  # the noise floor is 0.25


def test_noise_features_go_first(cancer):
    X, y = cancer
    noise = np.random.default_rng(0).normal(size=(X.shape[0], 20))
    model = SkinnyTreesClassifier(**FAST, max_epochs=60, lambda0=300.0).fit(np.hstack([X, noise]), y)
    kept = model.selected_features_
    assert 0 < kept.size < 50
    assert np.mean(kept >= 30) < 20 / 50  # a smaller share of noise among the kept than among the inputs


def test_the_guard_keeps_a_feature_and_the_papers_operator_may_keep_none(cancer):
    X, y = cancer
    guarded = SkinnyTreesClassifier(**FAST, max_epochs=5, lambda0=1e5).fit(X, y)
    assert guarded.selected_features_.size == 1
    bare = SkinnyTreesClassifier(**FAST, max_epochs=5, lambda0=1e5, min_features=0).fit(X, y)
    assert bare.selected_features_.size == 0 and bare.history_[-1]["n_features"] == 0
    proba = bare.predict_proba(X)
    assert np.all(np.isfinite(proba)) and np.allclose(proba, proba[0])  # a constant model
    assert len(bare.to_trees()) == 6


def test_group_lasso_baseline_gives_exact_zeros_and_shrinks(cancer):
    X, y = cancer
    model = SkinnyTreesClassifier(**FAST, max_epochs=30, penalty="group_lasso", lambda1=20.0).fit(X, y)
    assert 0 < model.selected_features_.size < 30
    assert np.count_nonzero(model.feature_norms_) == model.selected_features_.size
    assert all(r["lambda0"] == 0.0 for r in model.history_)


def test_fixed_schedule_and_auto_epochs(cancer):
    X, y = cancer
    model = SkinnyTreesClassifier(**FAST, max_epochs=3, schedule="fixed", lambda0=60.0).fit(X, y)
    assert {r["lambda0"] for r in model.history_} == {2.0}
    assert auto_epochs(364, 16) == 300 and auto_epochs(12_800, 16) == 13 and auto_epochs(10**7, 16) == 10
    assert len(SkinnyTreesClassifier(**FAST, batch_size=100_000, lambda0=1.0).fit(X, y).history_) == 300


def test_same_seed_same_model(cancer):
    X, y = cancer
    a = SkinnyTreesClassifier(**FAST, max_epochs=10, random_state=5).fit(X, y)
    b = SkinnyTreesClassifier(**FAST, max_epochs=10, random_state=5).fit(X, y)
    assert np.array_equal(a.selected_features_, b.selected_features_)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


def test_zero_weight_rows_are_as_if_absent(cancer):
    X, y = cancer
    w = np.ones(len(y))
    w[::3] = 0
    a = SkinnyTreesClassifier(**FAST, max_epochs=5).fit(X, y, sample_weight=w)
    b = SkinnyTreesClassifier(**FAST, max_epochs=5).fit(X[w > 0], y[w > 0])
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


def test_divergence_is_a_sentence(cancer):
    X, y = cancer
    with pytest.raises(TreevizError, match=r"diverged.*lower the learning rate"):
        SkinnyTreesClassifier(**FAST, max_epochs=5, learning_rate=100.0, lambda0=0.0).fit(X * 1e30, y)


def test_multiclass_and_validation_records():
    X, y = load_wine(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    X, y = StandardScaler().fit_transform(X)[order], y[order]
    model = SkinnyTreesClassifier(**FAST, max_epochs=30, lambda0=30.0).fit(X[:140], y[:140],
                                                                           eval_set=(X[140:], y[140:]))
    assert model.predict_proba(X).shape == (178, 3) and model.score(X[140:], y[140:]) > 0.85
    assert 0.7 < model.history_[-1]["val_score"] <= 1.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_training_selects_and_predicts_like_the_cpu(cancer):
    X, y = cancer
    cpu = SkinnyTreesClassifier(n_trees=6, depth=3, max_epochs=20, lambda0=600.0, device="cpu").fit(X, y)
    gpu = SkinnyTreesClassifier(n_trees=6, depth=3, max_epochs=20, lambda0=600.0, device="cuda").fit(X, y)
    assert gpu.device_.startswith("cuda")
    assert abs(gpu.selected_features_.size - cpu.selected_features_.size) <= 2
    assert np.mean(gpu.predict(X) == cpu.predict(X)) > 0.95
