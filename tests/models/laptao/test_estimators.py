"""LapTAO estimators (models.laptao.estimators, models.laptao.loop): the semi-supervised gain on two
moons, unlabelled-point handling, the monotone alternation, the limits (all labelled, γ → 0; row
order), the classification plumbing, determinism and the exact leaf solve.

Data sets are small (≤ 300 training points) and schedules short where the test is not about accuracy,
so the file runs in well under a minute on two cores.
"""

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons

from models.ground.errors import TrainingCancelled, TreevizError
from models.laptao.estimators import LapTAOClassifier, LapTAORegressor, TAOTreeStep
from models.laptao.graph import laptao_graph
from models.laptao.label_step import make_solver, partial_labels
from models.laptao.loop import Problem, Settings, alternate, mu_schedule
from models.tao.estimators import TAOClassifier, TAORegressor

FAST = {"n_mu": 6, "tao_iter": 5}


def moons(seed, n=300, n_labelled=None):
    """Two moons (noise 0.1): n training points with about 1 % labelled (at least one per class,
    the rest −1) and a held-out test split of the same size."""
    X, y = make_moons(2 * n, noise=0.1, random_state=seed)
    Xtr, ytr, Xte, yte = X[:n], y[:n], X[n:], y[n:]
    rng = np.random.default_rng(seed)
    lab = np.zeros(n, bool)
    for c in (0, 1):
        lab[rng.choice(np.flatnonzero(ytr == c))] = True
    extra = max(0, (n_labelled or round(0.01 * n)) - 2)
    if extra:
        lab[rng.choice(np.flatnonzero(~lab), extra, replace=False)] = True
    return Xtr, ytr, np.where(lab, ytr, -1), lab, Xte, yte


# --------------------------------------------------------------------------- the semi-supervised gain
@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_two_moons_one_percent_labels_beats_a_tree_on_the_labelled_points():
    lap_err, sup_err, lp_err = [], [], []
    for seed in range(3):
        Xtr, ytr, ypart, lab, Xte, yte = moons(seed)
        assert lab.sum() == 3 and set(ytr[lab]) == {0, 1}
        model = LapTAOClassifier(random_state=0).fit(Xtr, ypart)
        lap_err.append(np.mean(model.predict(Xte) != yte))  # inductive: the held-out test split
        sup = TAOClassifier(depth=model.depth_, random_state=0).fit(Xtr[lab], ytr[lab])
        sup_err.append(np.mean(sup.predict(Xte) != yte))
        propagated = model.classes_.take(model.label_propagation_.argmax(axis=1))
        lp_err.append(np.mean(propagated[~lab] != ytr[~lab]))  # transductive baseline
    print(f"two moons, 1 % labels: LapTAO {np.mean(lap_err):.3f} {lap_err}, supervised TAO on the labelled "
          f"points {np.mean(sup_err):.3f} {sup_err}, label propagation (unlabelled train) {np.mean(lp_err):.3f}")
    assert np.mean(lap_err) <= 0.12
    assert np.mean(sup_err) - np.mean(lap_err) >= 0.15


# --------------------------------------------------------------------------- unlabelled points
def test_minus_one_marks_unlabelled_points_and_all_unlabelled_input_is_refused():
    Xtr, ytr, ypart, lab, _, _ = moons(0, n=120, n_labelled=6)
    model = LapTAOClassifier(**FAST).fit(Xtr, ypart)
    assert list(model.classes_) == [0, 1]  # −1 is not a class
    assert set(model.predict(Xtr)) <= {0, 1}
    with pytest.raises(TreevizError, match="unlabelled"):
        LapTAOClassifier(**FAST).fit(Xtr, np.full(120, -1))
    with pytest.raises(TreevizError, match="two classes"):
        LapTAOClassifier(**FAST).fit(Xtr, np.where(lab & (ytr == 1), 1, -1))
    with pytest.raises(TypeError, match="sample_weight"):
        LapTAOClassifier(**FAST).fit(Xtr, ypart, sample_weight=np.ones(120))
    with pytest.raises(TreevizError, match="requires y"):
        LapTAOClassifier(**FAST).fit(Xtr, None)
    with pytest.raises(TreevizError, match="one label per point"):
        LapTAOClassifier(**FAST).fit(Xtr, ypart[:-1])


def test_regressor_takes_nan_as_unlabelled():
    Xtr, _, _, _, Xte, _ = moons(1, n=150)
    target = np.sin(2 * Xtr[:, 0]) + Xtr[:, 1]
    y = np.full(150, np.nan)
    keep = np.random.default_rng(0).choice(150, 15, replace=False)
    y[keep] = target[keep]
    model = LapTAORegressor(depth=3, **FAST).fit(Xtr, y)
    pred = model.predict(Xte)
    assert pred.shape == (150,) and np.all(np.isfinite(pred))
    assert model.to_tree().task == "regression"
    assert np.isfinite(model.history_[-1]["train_score"])
    with pytest.raises(TreevizError, match="Every target is missing"):
        LapTAORegressor(**FAST).fit(Xtr, np.full(150, np.nan))
    Y2 = np.column_stack([y, y])
    Y2[keep[0], 1] = np.nan
    with pytest.raises(TreevizError, match="some targets missing"):
        LapTAORegressor(**FAST).fit(Xtr, Y2)


def test_parameters_are_checked_at_fit_with_sentences():
    Xtr, _, ypart, _, _, _ = moons(0, n=60, n_labelled=4)
    with pytest.raises(TreevizError, match="gamma"):
        LapTAOClassifier(gamma=-1.0).fit(Xtr, ypart)
    with pytest.raises(TreevizError, match="solver"):
        LapTAOClassifier(solver="qr").fit(Xtr, ypart)
    with pytest.raises(TreevizError, match="must exceed the perplexity"):
        LapTAOClassifier(perplexity=15, n_neighbors=10).fit(Xtr, ypart)
    # a perplexity too large for the data (default k) is lowered to (N − 1) / 3
    Xs, _, ys, _, _, _ = moons(0, n=31, n_labelled=6)
    small = LapTAOClassifier(perplexity=50, **FAST).fit(Xs, ys)
    assert small.perplexity_ == pytest.approx(10.0)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_labelled_fraction_hides_a_stratified_share_of_the_labels_and_records_it():
    X, y = make_blobs(n_samples=[90, 50, 20], centers=[[0, 0], [4, 0], [0, 4]], random_state=0)
    given = y.copy()
    given[:10] = -1  # already unlabelled: stays unlabelled whatever the fraction
    model = LapTAOClassifier(labelled_fraction=0.1, **FAST).fit(X, given)
    lab = model.labelled_
    assert lab.dtype == bool and lab.shape == (160,) and not lab[:10].any()
    for c in range(3):  # every class keeps round(0.1 · its labels), at least one
        assert lab[given == c].sum() == max(1, round(0.1 * np.sum(given == c)))
    # the hidden labels are not used: the model equals a fit on the kept labels alone
    alone = LapTAOClassifier(labelled_fraction=1.0, **FAST).fit(X, np.where(lab, y, -1))
    np.testing.assert_array_equal(alone.labelled_, lab)
    np.testing.assert_array_equal(alone.decision_function(X), model.decision_function(X))
    again = LapTAOClassifier(labelled_fraction=0.1, **FAST).fit(X, given)
    other = LapTAOClassifier(labelled_fraction=0.1, random_state=1, **FAST).fit(X, given)
    np.testing.assert_array_equal(again.labelled_, lab)
    assert not np.array_equal(other.labelled_, lab)
    np.testing.assert_array_equal(LapTAOClassifier(labelled_fraction=1.0, **FAST).fit(X, given).labelled_,
                                  given != -1)


# --------------------------------------------------------------------------- T-L3: the alternation
def test_each_step_does_not_increase_the_augmented_lagrangian():
    Xtr, _, ypart, _, _, _ = moons(2, n=150, n_labelled=6)
    model = LapTAOClassifier(depth=3, n_mu=8, tao_iter=5).fit(Xtr, ypart)
    assert len(model.history_) == 8
    for rec in model.history_:
        tol = 1e-9 * max(1.0, abs(rec["lagrangian_start"]))
        assert rec["lagrangian_label"] <= rec["lagrangian_start"] + tol  # label step: exact minimiser in z
        assert rec["lagrangian"] <= rec["lagrangian_label"] + tol  # tree step: guarded TAO
        assert rec["residual"] < 1e-8  # the label step's normal equations hold
    mus = [rec["mu"] for rec in model.history_]
    np.testing.assert_allclose(mus, mu_schedule(1e-3, 1.5, 8))


@pytest.mark.parametrize("penalty_mode", ["fixed", "over_mu"])
def test_several_alternations_per_mu_decrease_the_lagrangian_at_every_stage(penalty_mode):
    Xtr, _, ypart, _, _, _ = moons(3, n=120, n_labelled=6)
    Y, labelled, _ = partial_labels(ypart)
    _, lap = laptao_graph(Xtr)
    problem = Problem(Y, labelled, lap, 0.1, make_solver(lap, labelled, 0.1))
    step = TAOTreeStep(Xtr, TAORegressor(depth=3, max_iter=5, random_state=0))
    settings = Settings(l1_penalty=0.01, n_mu=4, n_inner=3, tol=0.0, penalty_mode=penalty_mode)
    result = alternate(problem, step, settings, trace=True)
    assert len(result.trace) == 4 * (1 + 2 * 3)
    for k in range(4):
        values = [v for (kk, _, _, v) in result.trace if kk == k]
        assert np.all(np.diff(values) <= 1e-9 * max(1.0, abs(values[0])))


# --------------------------------------------------------------------------- T-L6: limits
def test_all_labelled_and_tiny_gamma_behaves_like_supervised_tao():
    Xtr, ytr, _, _, Xte, yte = moons(4, n=200)
    lap = LapTAOClassifier(gamma=1e-8, depth=4, labelled_fraction=1.0, **FAST).fit(Xtr, ytr)
    sup = TAOClassifier(depth=4).fit(Xtr, ytr)
    err_lap, err_sup = np.mean(lap.predict(Xte) != yte), np.mean(sup.predict(Xte) != yte)
    assert abs(err_lap - err_sup) <= 0.05, (err_lap, err_sup)
    np.testing.assert_allclose(lap.label_propagation_, np.eye(2)[ytr], atol=1e-6)  # z₀ = y


def test_row_order_does_not_matter():
    Xtr, _, ypart, _, Xte, _ = moons(5, n=150, n_labelled=6)
    perm = np.random.default_rng(0).permutation(150)
    a = LapTAOClassifier(depth=3, labelled_fraction=1.0, **FAST).fit(Xtr, ypart)
    b = LapTAOClassifier(depth=3, labelled_fraction=1.0, **FAST).fit(Xtr[perm], ypart[perm])
    np.testing.assert_array_equal(a.predict(Xte), b.predict(Xte))
    np.testing.assert_allclose(a.label_propagation_[perm], b.label_propagation_, atol=1e-10)


# --------------------------------------------------------------------------- T-L7: classification plumbing
def test_constant_leaf_is_the_mean_of_its_targets():
    Xtr, _, ypart, _, _, _ = moons(6, n=120, n_labelled=6)
    Y, labelled, _ = partial_labels(ypart)
    _, lap = laptao_graph(Xtr)
    problem = Problem(Y, labelled, lap, 0.1, make_solver(lap, labelled, 0.1))

    class Recording(TAOTreeStep):
        def fit(self, targets, penalty):
            self.last_targets = targets.copy()
            super().fit(targets, penalty)

    step = Recording(Xtr, TAORegressor(depth=3, max_iter=5, random_state=0))
    alternate(problem, step, Settings(n_mu=3))
    leaf = step.tree.apply(Xtr)
    for node in np.unique(leaf):
        np.testing.assert_allclose(step.tree.value[node], step.last_targets[leaf == node].mean(axis=0), atol=1e-12)


def test_prediction_is_the_argmax_of_scores_that_sum_to_one():
    Xtr, _, ypart, _, Xte, _ = moons(7, n=150, n_labelled=6)
    model = LapTAOClassifier(depth=3, **FAST).fit(Xtr, ypart)
    scores = model.tao_tree_.leaf_scores(Xte, model.apply(Xte))
    np.testing.assert_allclose(scores.sum(axis=1), 1.0, atol=1e-8)  # one-hot targets: rows of z sum to 1
    # two classes: the decision function is the second class's score minus the first's
    np.testing.assert_allclose(model.decision_function(Xte), scores[:, 1] - scores[:, 0])
    np.testing.assert_array_equal(model.predict(Xte), model.classes_.take(scores.argmax(axis=1)))
    proba = model.predict_proba(Xte)
    assert np.all(proba >= 0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_array_equal(proba.argmax(axis=1), scores.argmax(axis=1))
    tree = model.to_tree()
    assert tree.task == "classification" and tree.output_names == ("0", "1")
    np.testing.assert_array_equal(tree.predict_value(Xte).argmax(axis=1), scores.argmax(axis=1))


def test_string_class_names_come_back_from_predict():
    Xtr, ytr, _, lab, Xte, _ = moons(8, n=100, n_labelled=6)
    names = np.array(["left", "right"], dtype=object)
    y = np.where(lab, names[ytr], -1).astype(object)
    model = LapTAOClassifier(depth=2, **FAST).fit(Xtr, y)
    assert set(model.predict(Xte)) <= {"left", "right"}


# --------------------------------------------------------------------------- determinism, leaf solve, state
def test_same_random_state_same_model():
    Xtr, _, ypart, _, Xte, _ = moons(9, n=150, n_labelled=6)
    a = LapTAOClassifier(depth=3, random_state=3, **FAST).fit(Xtr, ypart)
    b = LapTAOClassifier(depth=3, random_state=3, **FAST).fit(Xtr, ypart)
    np.testing.assert_array_equal(a.decision_function(Xte), b.decision_function(Xte))
    assert [r["objective"] for r in a.history_] == [r["objective"] for r in b.history_]


def test_exact_leaf_solve_does_not_increase_the_objective():
    Xtr, _, ypart, _, _, _ = moons(10, n=150, n_labelled=6)
    model = LapTAOClassifier(depth=3, **FAST).fit(Xtr, ypart)
    assert model.objective_ <= model.objective_before_leaf_solve_ + 1e-9
    off = LapTAOClassifier(depth=3, leaf_solve=False, **FAST).fit(Xtr, ypart)
    assert off.objective_ == off.objective_before_leaf_solve_ == model.objective_before_leaf_solve_


def test_history_callbacks_and_model_state():
    Xtr, _, ypart, _, Xte, yte = moons(11, n=120, n_labelled=6)

    class StopAfterTwo:
        def on_train_begin(self, estimator, **kw):
            pass

        def on_epoch_end(self, estimator, **kw):
            if len(estimator.history_) == 2:
                raise TrainingCancelled()

        def on_train_end(self, estimator, **kw):
            pass

    model = LapTAOClassifier(depth=3, **FAST).fit(Xtr, ypart, callbacks=[StopAfterTwo()], eval_set=(Xte, yte))
    assert model.stopped_early_ and len(model.history_) == 2
    for key in ("objective", "lagrangian", "residual", "constraint_gap", "train_score", "val_score", "time_s", "mu"):
        assert key in model.history_[0]
    learned, arrays = model._learned_state()
    copy = LapTAOClassifier()
    copy._restore_state(learned, arrays)
    np.testing.assert_array_equal(copy.predict(Xte), model.predict(Xte))


def test_progress_counts_the_tree_fits_tao_iterations_and_plans_the_steps_left(monkeypatch):
    """The progress units are TAO's (an iteration each, one for the finishing step of each fit);
    after each μ step the plan is the work done plus the forecast of the steps left
    (models.ground.forecast), and the work done reaches it at the end."""
    fits = []
    original = TAOTreeStep.fit

    def counted(self, targets, penalty):
        original(self, targets, penalty)
        fits.append(int(self.regressor.n_iter_) + 1)

    monkeypatch.setattr(TAOTreeStep, "fit", counted)
    reports = []

    class Plan:
        def on_train_begin(self, estimator, **kw):
            reports.append(("begin", None, kw["total"]))

        def on_progress(self, estimator, **kw):
            reports.append(("progress", kw["done"], kw["total"]))

    Xtr, _, ypart, _, _, _ = moons(3, n=150, n_labelled=8)
    params = {"n_mu": 8, "tao_iter": 10}
    model = LapTAOClassifier(depth=3, **params).fit(Xtr, ypart, callbacks=[Plan()])
    assert reports[0] == ("begin", None, 8 * (10 / 2 + 1))
    steps = [(done, total) for kind, done, total in reports if kind == "progress" and total is not None]
    assert len(steps) == len(model.history_) == 8
    # the first fit, before the steps, is not work done; each step adds its fits' iterations and finishing step
    assert [done for done, _ in steps] == list(np.cumsum(fits[1:]).astype(float))
    assert all(total >= done for done, total in steps) and steps[-1][0] == steps[-1][1]
    assert min(f for f in fits[1:]) >= 3  # TAO's least: two iterations and the finishing step
    assert reports[-1][1] == steps[-1][1]  # the end reaches the plan
