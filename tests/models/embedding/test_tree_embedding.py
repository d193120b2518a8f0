"""The tree embedding (t-SNE / EE with a TAO tree as the mapping) on small subsets of breast cancer."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.exceptions import NotFittedError
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor

import models.embedding.objectives as objectives
import models.embedding.objectives.paths as objective_paths
from models.base import Callback
from models.embedding.objectives import free_embedding
from models.embedding.tree_embedding import TreeEmbedding, direct_fit
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.tao.estimators import TAORegressor

SMALL = {"depth": 2, "l1_penalty": 0.1, "n_mu": 4, "z_iter": 30, "free_iter": 200, "tao_iter": 5,
         "device": "cpu"}


@pytest.fixture(scope="module")
def X():
    data = StandardScaler().fit_transform(load_breast_cancer().data)
    return data[np.random.default_rng(0).permutation(data.shape[0])[:120]]


@pytest.fixture(scope="module")
def fitted(X):
    return TreeEmbedding(**SMALL).fit(X)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_learning_curve_starts_at_the_direct_fit(X, fitted):
    first = fitted.history_[0]
    assert first["step"] == 0 and first["E_tree"] == fitted.direct_fit_objective_
    direct = fitted.direct_transform(X)
    np.testing.assert_array_equal(direct, fitted.direct_embedding_)
    assert fitted.direct_fit_objective_ == pytest.approx(float(fitted.objective_function_.embedding_value(direct)))
    # the same direct fit as the baseline function gives
    again = direct_fit(X, fitted.free_embedding_, kind="tao", depth=2, l1_penalty=0.1, tao_iter=5, device="cpu")
    np.testing.assert_allclose(again.predict(X), direct, atol=1e-8)
    assert fitted.free_objective_ == pytest.approx(
        float(fitted.objective_function_.embedding_value(fitted.free_embedding_)))
    assert len(fitted.history_) == SMALL["n_mu"] + 1


def test_penalty_objective_does_not_increase_within_a_mu_step(fitted):
    for r in fitted.history_[1:]:
        tol = 1e-9 * max(1.0, abs(r["objective_start"]))
        assert r["objective_after_z"] <= r["objective_start"] + tol  # Z-step
        assert r["objective"] <= r["objective_after_z"] + tol  # F-step


def test_mu_grows_geometrically_from_the_relative_rule(fitted):
    mus = [r["mu"] for r in fitted.history_[1:]]
    assert mus[0] == pytest.approx(fitted.mu0_)
    expected = 0.3 * fitted.free_objective_ / fitted.history_[0]["dist2"]
    assert fitted.mu0_ == pytest.approx(expected)
    np.testing.assert_allclose(np.diff(np.log(mus)), np.log(1.4))


def test_tree_penalty_is_lambda_at_mu0_and_scales_as_one_over_mu(fitted):
    # the F-step's penalty λ μ0 / μ: the direct fit's λ at the start, so μ · penalty = μ0 λ throughout
    hist = fitted.history_
    assert hist[0]["tree_penalty"] == SMALL["l1_penalty"] and hist[1]["tree_penalty"] == SMALL["l1_penalty"]
    for r in hist[1:]:
        assert r["mu"] * r["tree_penalty"] == pytest.approx(fitted.mu0_ * SMALL["l1_penalty"], rel=1e-12)
    # the penalty objective charges φ(F) at μ0 λ: recompute the last step's from the final state
    # (β before the last update is β_end + μ R, R = Z − F(X))
    last = hist[-1]
    R = fitted.Z_ - fitted.embedding_
    beta_before = fitted.multipliers_ + last["mu"] * R
    expected = (last["E_Z"] + fitted.mu0_ * SMALL["l1_penalty"] * last["l1_norm"] + last["mu"] * np.sum(R * R)
                - 2.0 * np.sum(beta_before * R))
    assert last["objective"] == pytest.approx(expected, rel=1e-9)
    assert last["l1_norm"] == pytest.approx(fitted.tao_tree_.l1_norm())


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_path_ends_below_the_direct_fit_on_digits():
    # 200 digits, depth 3, λ = 3: with the thesis's fixed λ the penalty traded against E is μλ and
    # grows along the path; E(F(X)) then went 0.744 → 0.736 → 1.016 (above the direct fit). With
    # λ μ0 / μ it decreases to about 0.637 and stays there.
    digits = load_digits()
    Xd = digits.data[np.random.default_rng(0).permutation(digits.data.shape[0])[:200]] / 16.0
    model = TreeEmbedding(depth=3, l1_penalty=3.0, n_mu=10, z_iter=30, free_iter=300, tao_iter=5,
                          device="cpu").fit(Xd)
    E = [r["E_tree"] for r in model.history_]
    assert E[0] == model.direct_fit_objective_
    assert E[-1] < 0.9 * E[0]
    assert E[-1] <= min(E) + 1e-3  # no rise at the end of the path
    assert model.free_objective_ <= E[-1]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_above_the_exact_size_the_fit_runs_on_the_fft_path_and_reports_exact_objectives(monkeypatch):
    # shrink the switch (and the cutoff, so that 200 points are sparse enough for near pairs)
    monkeypatch.setattr(objective_paths, "EXACT_MAX_POINTS", 100)
    monkeypatch.setattr(objectives.TSNE, "_fft_defaults", {"cutoff": 1.0, "box": 1.0, "nodes": 5})
    digits = load_digits()
    Xd = digits.data[np.random.default_rng(1).permutation(digits.data.shape[0])[:200]] / 16.0
    model = TreeEmbedding(depth=2, n_mu=2, z_iter=10, free_iter=150, tao_iter=3, device="cpu").fit(Xd)
    exact = objectives.embedding_objective(Xd, "tsne", perplexity=15.0, path="dense")
    assert model.objective_function_.path == "chunked"
    assert model.objective_ == pytest.approx(float(exact.value(model.embedding_)), rel=1e-12)
    assert model.free_objective_ == pytest.approx(float(exact.value(model.free_embedding_)), rel=1e-12)
    assert model.history_[-1]["E_Z"] == pytest.approx(float(exact.value(model.Z_)), rel=1e-12)
    # the optimiser's value of Z0 (step 0's penalty objective) is the approximation: close, not equal
    approx = model.history_[0]["objective"]
    assert approx != model.free_objective_ and approx == pytest.approx(model.free_objective_, rel=1e-3)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_transform_of_the_training_points_is_the_embedding(X, fitted):
    np.testing.assert_array_equal(fitted.transform(X), fitted.embedding_)
    assert fitted.embedding_.shape == (X.shape[0], 2)
    assert fitted.objective_ == pytest.approx(float(fitted.objective_function_.embedding_value(fitted.embedding_)))
    # the objective rebuilt from the model's settings (what a loaded model uses) is the same E
    rebuilt = fitted.embedding_objective(X)
    assert float(rebuilt.embedding_value(fitted.embedding_)) == pytest.approx(fitted.objective_, rel=1e-12)
    np.testing.assert_array_equal(fitted.fit_transform(X), fitted.embedding_)


def test_to_tree_is_a_valid_tree_that_predicts_like_transform(X, fitted):
    tree = fitted.to_tree()
    assert isinstance(tree, Tree)
    assert tree.output_names == ("z1", "z2")
    assert Tree.from_json(tree.to_json()).to_json() == tree.to_json()
    np.testing.assert_allclose(tree.predict_value(X), fitted.transform(X), atol=1e-9)
    rng = np.random.default_rng(1)
    new = rng.standard_normal((7, X.shape[1]))
    np.testing.assert_allclose(tree.predict_value(new), fitted.transform(new), atol=1e-9)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_same_random_state_gives_the_same_embedding(X, fitted):
    again = TreeEmbedding(**SMALL).fit(X)
    np.testing.assert_array_equal(again.embedding_, fitted.embedding_)
    np.testing.assert_array_equal(again.Z_, fitted.Z_)
    assert [r["E_tree"] for r in again.history_] == [r["E_tree"] for r in fitted.history_]


@pytest.mark.parametrize("augmented", [True, False])
def test_large_mu_makes_Z_equal_to_the_tree_outputs(X, augmented):
    # One μ step (β = 0 at its start): the Z-step's pull towards F(X) dominates E at μ = 1e4.
    model = TreeEmbedding(**{**SMALL, "mu0": 1e4, "n_mu": 1, "augmented_lagrangian": augmented}).fit(X)
    FX = model.direct_embedding_
    gap = np.linalg.norm(model.Z_ - FX) / np.linalg.norm(FX)
    assert gap < 1e-3
    # the F-step refits the tree to that Z, so the final tree outputs stay close too
    assert np.linalg.norm(model.Z_ - model.embedding_) / np.linalg.norm(model.Z_) < 0.1


def test_quadratic_penalty_keeps_multipliers_at_zero(X):
    model = TreeEmbedding(**{**SMALL, "n_mu": 2, "augmented_lagrangian": False}).fit(X)
    assert not model.multipliers_.any()


def test_callbacks_see_every_mu_step(X):
    seen = []

    class Spy(Callback):
        def on_train_begin(self, estimator, **kwargs):
            seen.append(("begin", kwargs["total"]))

        def on_epoch_end(self, estimator, **kwargs):
            seen.append(("step", kwargs["record"]["step"]))

    TreeEmbedding(**{**SMALL, "n_mu": 2}).fit(X, callbacks=[Spy()])
    # one record per μ step (the free embedding, then n_mu steps); the planned total counts work units
    # (the free embedding's iterations weigh most), not records
    assert seen[0][0] == "begin" and seen[0][1] > 3
    assert seen[1:] == [("step", 0), ("step", 1), ("step", 2)]


def test_elastic_embedding_runs(X):
    model = TreeEmbedding(**{**SMALL, "method": "ee", "n_mu": 2}).fit(X[:60])
    assert np.isfinite(model.objective_) and model.embedding_.shape == (60, 2)


def test_cart_baseline_is_pruned_on_a_validation_split(X, fitted):
    cart = direct_fit(X, fitted.free_embedding_, kind="cart")
    assert isinstance(cart, DecisionTreeRegressor)
    best = min(cart.validation_mse_, key=cart.validation_mse_.get)
    assert cart.get_depth() <= best and cart.predict(X).shape == (X.shape[0], 2)


def test_direct_tao_fit_is_a_tao_tree(X):
    Z0 = free_embedding(X, "tsne", max_iter=100).Z
    model = direct_fit(X, Z0, depth=1, tao_iter=3, device="cpu")
    assert isinstance(model, TAORegressor) and model.predict(X).shape == Z0.shape


@pytest.mark.parametrize("params, words", [
    ({"method": "umap"}, "'method' must be one of"),
    ({"leaf": "softmax"}, "'leaf' must be one of"),
    ({"n_mu": -1}, "'n_mu' must be at least 0"),
    ({"mu0": 0.0}, "'mu0' must be at least"),
    ({"mu_factor": 0.5}, "'mu_factor' must be at least 1"),
    ({"depth": 2.5}, "'depth' must be a whole number"),
    ({"augmented_lagrangian": "yes"}, "'augmented_lagrangian' must be true or false"),
    ({"n_neighbors": 10}, "must exceed the perplexity"),
    ({"n_neighbors": 40}, "at most N − 1"),
])
def test_bad_parameters_raise_sentences_at_fit(X, params, words):
    model = TreeEmbedding(**params)
    assert model.get_params()[next(iter(params))] == next(iter(params.values()))
    with pytest.raises(TreevizError, match=words):
        model.fit(X[:20])


def test_a_perplexity_too_large_for_the_data_is_lowered(X):
    model = TreeEmbedding(**{**SMALL, "n_mu": 1, "perplexity": 30.0}).fit(X[:16])
    assert model.perplexity_ == pytest.approx(5.0)  # (N − 1) / 3
    assert model.embedding_objective(X[:16]).embedding_value(model.embedding_) == pytest.approx(model.objective_)
    with pytest.raises(TreevizError, match="at least 4 points"):
        TreeEmbedding(**SMALL).fit(X[:3])


def test_unfitted_transform_raises(X):
    with pytest.raises(NotFittedError):
        TreeEmbedding().transform(X)


def test_the_mu_path_is_planned_per_step_and_grows_when_the_steps_say_more_is_left(X):
    """Progress: the plan is the free iterations plus n_mu μ steps of MU_STEP_SHARE · z_iter; each
    step adds its measured work (Z-step and tree refit, in free iterations' time); the work done
    reaches the total."""
    from models.embedding.tree_embedding import MU_STEP_SHARE

    class Plan(Callback):
        def __init__(self):
            self.begin, self.reports = None, []

        def on_train_begin(self, estimator, **kwargs):
            self.begin = kwargs.get("total")

        def on_progress(self, estimator, **kwargs):
            self.reports.append((kwargs.get("done"), kwargs.get("total")))

    plan = Plan()
    TreeEmbedding(**SMALL).fit(X, callbacks=[plan])
    free, n_mu, z_iter = SMALL["free_iter"], SMALL["n_mu"], SMALL["z_iter"]
    planned = free + n_mu * MU_STEP_SHARE * z_iter
    assert plan.begin == pytest.approx(planned)
    steps = [(d, t) for d, t in plan.reports if t is not None]
    assert steps[0] == (free, pytest.approx(planned))  # the free embedding done, the plan unchanged
    done = [d for d, _ in steps[1:]]
    assert len(done) == n_mu and done == sorted(done) and done[0] > free  # each step adds its work
    assert all(t >= d for d, t in steps[1:])
    assert steps[-1][0] == pytest.approx(steps[-1][1])  # the last step: nothing left


def test_the_mu_path_forecast_falls_with_the_z_steps_and_holds_at_their_cap():
    from models.embedding.tree_embedding import _mu_path_left

    falling = _mu_path_left([100.0, 60.0, 30.0], 1.0, [10.0, 10.0], 5, 100)
    capped = _mu_path_left([100.0, 100.0, 100.0], 1.0, [10.0, 10.0], 5, 100)
    assert 5 * 10 + 5 < falling < 5 * 10 + 5 * 30  # trees at their cost; Z-steps below the last one
    assert capped >= 5 * 10 + 3 * 100  # capped steps stay capped for a while
    assert _mu_path_left([50.0], 2.0, [4.0, 8.0], 0, 100) == 0.0
    # the cost of an iteration scales the Z-steps' part
    assert _mu_path_left([40.0, 20.0], 2.0, [0.0], 4, 100) == pytest.approx(
        2 * _mu_path_left([40.0, 20.0], 1.0, [0.0], 4, 100))
