"""TAO estimators: scikit-learn contract, model files, history, callbacks, warm start, sample
weights, regression, linear leaves and solvers (``docs/tao.md``)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from models.base import Callback
from models.ground.errors import TrainingCancelled, TreevizError
from models.persist import load_model
from models.tao.estimators import TAOClassifier, TAORegressor, auto_depth
from models.tao.objective import objective

TINY = dict(depth=2, max_iter=3)


@pytest.fixture(scope="module")
def fitted(cancer):
    X, y = cancer
    return TAOClassifier(depth=3, l1_penalty=0.1, max_iter=6, init="random", solver="sklearn").fit(
        X[:400], y[:400], eval_set=(X[400:480], y[400:480]), feature_names=[f"f{i}" for i in range(30)])


HISTORY_KEYS = ("iteration", "objective", "train_error", "n_nonzero", "n_decision_nodes", "n_leaves")


def test_history_records_every_iteration(fitted):
    assert len(fitted.history_) == fitted.n_iter_ >= 1
    for i, rec in enumerate(fitted.history_):
        for key in (*HISTORY_KEYS, "val_score"):
            assert key in rec, key
        assert rec["iteration"] == i + 1
        assert 0 <= rec["train_error"] <= 1 and 0 <= rec["val_score"] <= 1
        assert rec["n_leaves"] == rec["n_decision_nodes"] + 1 <= 8
        assert isinstance(rec["objective"], float) and isinstance(rec["n_nonzero"], int)
    assert not fitted.stopped_early_


def test_val_score_is_the_validation_accuracy_of_that_iteration(cancer):
    X, y = cancer
    model = TAOClassifier(depth=2, max_iter=1, solver="sklearn").fit(X[:400], y[:400], eval_set=(X[400:], y[400:]))
    # one iteration, then pruning / a leaf pass that may only touch the leaves' class fractions
    assert model.history_[0]["val_score"] == pytest.approx(model.score(X[400:], y[400:]), abs=0.05)
    plain = TAOClassifier(depth=2, max_iter=1, solver="sklearn").fit(X[:400], y[:400])
    assert "val_score" not in plain.history_[0]


def test_the_tree_describes_the_model(cancer, fitted):
    X, _y = cancer
    tree = fitted.to_tree()
    assert tree.family == "tao" and tree.task == "classification"
    assert tree.feature_names[:2] == ("f0", "f1") and tree.output_names == ("benign", "malignant")
    np.testing.assert_array_equal(tree.apply(X), fitted.apply(X))
    np.testing.assert_array_equal(fitted.classes_[np.argmax(tree.predict_value(X), axis=1)], fitted.predict(X))
    np.testing.assert_allclose(tree.leaf_value[tree.leaves].sum(axis=1), 1.0)
    # pruning after the last iteration can only remove weights
    assert tree.n_nonzero_weights() == fitted.tao_tree_.n_nonzero() <= fitted.history_[-1]["n_nonzero"]


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_model_file_round_trip_predicts_identically(tmp_path, cancer, fitted, suffix):
    X, _ = cancer
    back = load_model(fitted.save(str(tmp_path / f"tao{suffix}")))
    assert type(back) is TAOClassifier
    np.testing.assert_array_equal(back.predict(X), fitted.predict(X))
    np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(back.node_origin_, fitted.node_origin_)
    assert back.to_tree().equals(fitted.to_tree())
    assert back.history_ == fitted.history_
    assert back.get_params() == {**fitted.get_params(), "device": back.device}


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_model_file_round_trip_linear_and_regression(tmp_path, suffix):
    X, y = load_iris(return_X_y=True)
    cls = TAOClassifier(depth=2, leaf="linear", max_iter=2, solver="sklearn").fit(X, y)
    back = load_model(cls.save(str(tmp_path / f"lin{suffix}")))
    np.testing.assert_array_equal(back.predict_proba(X), cls.predict_proba(X))
    assert back.to_tree().equals(cls.to_tree())
    reg = TAORegressor(depth=2, max_iter=2, solver="sklearn").fit(X[:, :3], X[:, 3])
    back = load_model(reg.save(str(tmp_path / f"reg{suffix}")))
    np.testing.assert_array_equal(back.predict(X[:, :3]), reg.predict(X[:, :3]))
    assert back.predict(X[:, :3]).ndim == 1
    assert back.to_tree().equals(reg.to_tree())


def test_a_callback_can_cancel_training(cancer):
    X, y = cancer
    events = []

    class StopAfterTwo(Callback):
        def on_train_begin(self, estimator, total):
            events.append(("begin", total))

        def on_epoch_end(self, estimator, record):
            events.append(("iteration", record["iteration"]))
            if record["iteration"] >= 2:
                raise TrainingCancelled

        def on_train_end(self, estimator):
            events.append(("end", None))

    model = TAOClassifier(depth=3, max_iter=20, tol=0.0, guard="off", init="random", solver="sklearn").fit(
        X, y, callbacks=[StopAfterTwo()])
    assert model.stopped_early_ and len(model.history_) == 2 == model.n_iter_
    # 20 iterations planned, plus the finishing step
    assert events == [("begin", 21), ("iteration", 1), ("iteration", 2), ("end", None)]
    # a usable (pruned, leaf-refitted) model
    assert model.predict(X).shape == y.shape and model.score(X, y) > 0.8
    assert model.to_tree().n_nodes >= 1


def test_warm_start_continues_from_the_current_tree(cancer):
    X, y = cancer
    model = TAOClassifier(depth=4, l1_penalty=1.0, max_iter=2, init="random", solver="sklearn").fit(X, y)
    first = model.tao_tree_.copy()
    n_dec = first.decision_nodes().size
    cfg = model._config(2)
    Y = np.searchsorted(model.classes_, y)
    e_first = objective(first, X, Y, np.ones(len(y)), cfg)
    model.set_params(warm_start=True, max_iter=3)
    model.fit(X, y)
    # the second fit starts from the compact first tree: its node ids index that tree
    assert model.node_origin_.max() < first.n_slots
    assert model.tao_tree_.decision_nodes().size <= n_dec
    assert model.history_[0]["objective"] <= e_first + 1e-9  # guard on: one more pass never hurts
    # parent-child links of the new tree are ancestor-descendant links of the first one
    tree = model.to_tree()
    for v in tree.decision_nodes:
        for child, side in ((tree.children_left[v], first.left), (tree.children_right[v], first.right)):
            node = int(model.node_origin_[child])
            path = {node}
            while node != first.root:
                node = int(np.flatnonzero((first.left == node) | (first.right == node))[0])
                path.add(node)
            assert int(side[model.node_origin_[v]]) in path


def test_warm_start_with_new_features_starts_over(cancer):
    X, y = cancer
    model = TAOClassifier(depth=2, max_iter=1, warm_start=True, solver="sklearn").fit(X, y)
    model.fit(X[:, :5], y)
    assert model.tao_tree_.n_features == 5 and model.n_features_in_ == 5


@pytest.mark.parametrize("init", ["cart", "random"])
def test_integer_weights_equal_repeated_rows_exact_axis(init):
    """Exact node updates (axis-aligned enumeration), exact leaves, a weight-aware init: integer
    sample weights give the very same tree as repeating the rows."""
    X, y = load_iris(return_X_y=True)
    sw = np.random.default_rng(0).integers(1, 4, size=len(y))
    params = dict(depth=3, init=init, node_type="axis", max_iter=4, l1_penalty=0.01)
    a = TAOClassifier(**params).fit(X, y, sample_weight=sw)
    b = TAOClassifier(**params).fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.to_tree().equals(b.to_tree())
    assert [r["objective"] for r in a.history_] == pytest.approx([r["objective"] for r in b.history_], rel=1e-12)


def test_integer_weights_close_to_repeated_rows_oblique(cancer):
    """Oblique nodes go through liblinear, which only solves its (identical) weighted problem
    approximately, so weighted and repeated fits agree up to the solver tolerance."""
    X, y = cancer
    sw = np.random.default_rng(1).integers(1, 4, size=len(y))
    params = dict(depth=3, init="random", max_iter=4, l1_penalty=0.1, solver="sklearn")
    a = TAOClassifier(**params).fit(X, y, sample_weight=sw)
    b = TAOClassifier(**params).fit(np.repeat(X, sw, axis=0), np.repeat(y, sw))
    assert np.mean(a.predict(X) == b.predict(X)) >= 0.97
    ea, eb = a.history_[-1]["objective"], b.history_[-1]["objective"]
    assert abs(ea - eb) <= 0.1 * max(ea, eb)


def test_zero_weights_equal_removed_rows(cancer):
    X, y = cancer
    sw = np.ones(len(y))
    sw[::3] = 0.0
    params = dict(depth=3, init="random", max_iter=3, l1_penalty=0.1, solver="sklearn")
    a = TAOClassifier(**params).fit(X, y, sample_weight=sw)
    b = TAOClassifier(**params).fit(X[sw > 0], y[sw > 0])
    assert a.to_tree().equals(b.to_tree())
    assert np.all(np.isfinite(a.predict_proba(X)))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_regression_with_2d_targets():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Y = np.column_stack([y, -0.5 * y + 10 * X[:, 0]])
    model = TAORegressor(depth=3, max_iter=4, l1_penalty=1.0, solver="sklearn").fit(X, Y)
    pred = model.predict(X)
    assert pred.shape == (len(y), 2)
    assert model.score(X, Y) > 0.3
    tree = model.to_tree()
    assert tree.n_outputs == 2 and tree.output_names == ("target 0", "target 1")
    np.testing.assert_allclose(tree.predict_value(X), pred)
    one = TAORegressor(depth=3, max_iter=4, l1_penalty=1.0, solver="sklearn").fit(X, Y[:, :1])
    assert one.predict(X).shape == (len(y), 1)
    flat = TAORegressor(depth=3, max_iter=4, l1_penalty=1.0, solver="sklearn").fit(X, Y[:, 0])
    assert flat.predict(X).shape == (len(y),)
    np.testing.assert_array_equal(flat.predict(X), one.predict(X)[:, 0])


def test_linear_leaves_regression_beats_the_mean():
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    model = TAORegressor(depth=1, leaf="linear", l1_penalty=1.0, max_iter=4, solver="sklearn").fit(Xtr, ytr)
    mse = np.mean((model.predict(Xte) - yte) ** 2)
    baseline = np.mean((ytr.mean() - yte) ** 2)
    assert mse < 0.75 * baseline
    assert model.to_tree().leaf_weight is not None


def test_linear_leaves_classifier_on_iris():
    X, y = load_iris(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    model = TAOClassifier(depth=2, leaf="linear", l1_penalty=0.1, max_iter=3, solver="sklearn").fit(X, y)
    assert model.score(X, y) >= 0.95
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[np.argmax(proba, axis=1)], model.predict(X))
    tree = model.to_tree()
    assert tree.leaf_weight is not None and np.count_nonzero(tree.leaf_weight) > 0
    # linear leaves are deterministic for a fixed random_state (SAGA's shuffling is seeded)
    again = TAOClassifier(depth=2, leaf="linear", l1_penalty=0.1, max_iter=3, solver="sklearn").fit(X, y)
    assert again.to_tree().equals(tree)


@pytest.fixture
def one_torch_thread():
    # the batched solver runs many tiny ops; on a busy 2-core machine two intra-op threads make
    # it 10-20x slower than one
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_torch_and_sklearn_solvers_agree(cancer, one_torch_thread):
    X, y = cancer
    errors = {}
    for solver in ("sklearn", "torch"):
        model = TAOClassifier(depth=3, l1_penalty=0.1, max_iter=3, init="random", solver=solver, device="cpu").fit(X, y)
        errors[solver] = 1 - model.score(X, y)
    assert abs(errors["sklearn"] - errors["torch"]) <= 0.02, errors


@pytest.mark.parametrize("init", ["auto", "cart", "random"])
def test_depth_zero_is_a_single_leaf(init):
    X, y = load_iris(return_X_y=True)
    constant = TAOClassifier(depth=0, init=init, max_iter=2).fit(X, y)
    assert constant.to_tree().n_nodes == 1 and np.all(constant.predict(X) == 0)  # ties: smallest class
    linear = TAOClassifier(depth=0, init=init, leaf="linear", max_iter=2, l1_penalty=0.1).fit(X, y)
    assert linear.to_tree().n_nodes == 1 and linear.score(X, y) > 0.9  # one sparse softmax model


def test_bad_parameters_are_explained(cancer):
    X, y = cancer
    for params, match in ((dict(depth=-1), "'depth' must be"), (dict(leaf="cubic"), "'leaf' must be one of"),
                          (dict(init="kmeans"), "'init' must be one of"), (dict(l1_penalty=-1.0), "l1_penalty"),
                          (dict(max_iter=0), "'max_iter' must be"), (dict(order="dfs"), "'order' must be one of")):
        with pytest.raises(TreevizError, match=match):
            TAOClassifier(**params).fit(X, y)
    with pytest.raises(TreevizError, match="'leaf' must be one of"):
        TAORegressor(leaf="softmax").fit(X, y == "benign")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_solver_matches_cpu(cancer):
    X, y = cancer
    params = dict(depth=3, l1_penalty=0.1, max_iter=4, init="random", solver="torch")
    gpu = TAOClassifier(device="cuda", **params).fit(X, y)
    cpu = TAOClassifier(device="cpu", **params).fit(X, y)
    assert abs(gpu.score(X, y) - cpu.score(X, y)) <= 0.02
    # routing is float64 on the CPU whatever the solver's device: the tree predicts like its Tree
    np.testing.assert_array_equal(gpu.to_tree().apply(X), gpu.apply(X))
    auto = TAOClassifier(device="auto", solver="auto", depth=2, max_iter=1).fit(X, y)
    assert auto._config(2).solver == "cd"  # the compiled solver is faster even beside a GPU


def test_auto_depth_grows_with_the_number_of_classes():
    assert [auto_depth(k) for k in (2, 3, 6, 7, 10, 26, 1000)] == [4, 5, 6, 6, 7, 8, 8]
    X = np.random.default_rng(0).normal(size=(300, 4))
    y = np.repeat(np.arange(10), 30)
    model = TAOClassifier(max_iter=1).fit(X, y)
    assert model.depth is None and model.depth_ == 7 and model.to_tree().max_depth <= 7
    assert TAOClassifier(depth=3, max_iter=1).fit(X, y).depth_ == 3
