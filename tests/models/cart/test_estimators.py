"""The CART adapter: scikit-learn compatibility, exact Tree conversion, counts, history."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from models.base import Callback
from models.cart.estimators import CARTClassifier, CARTRegressor, float64_threshold
from models.ground.errors import TrainingCancelled
from models.persist import load_model, save_model
from treeviz.readers.rules import node_rule


def test_float64_threshold_matches_float32_comparison_exactly():
    rng = np.random.default_rng(0)
    t = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.integers(-6, 6, 2000), [0.0, -0.0, 1.5, 1e-30]])
    m = float64_threshold(t)
    probes = [t, m, np.nextafter(m, np.inf), np.nextafter(m, -np.inf), t * (1 + 1e-8), t * (1 - 1e-8)]
    for x in probes:
        assert np.array_equal(x.astype(np.float32) <= t, x <= m)


@pytest.mark.parametrize("loader,depth", [(load_breast_cancer, 6), (load_digits, 8), (load_iris, None)])
def test_tree_predictions_equal_sklearn_exactly(loader, depth):
    X, y = loader(return_X_y=True)
    rng = np.random.default_rng(1)
    ours = CARTClassifier(max_depth=depth, random_state=0).fit(X, y)
    ref = DecisionTreeClassifier(max_depth=depth, random_state=0).fit(X, y)
    Xt = np.vstack([X, X + rng.normal(size=X.shape) * X.std(axis=0) * 0.05])
    np.testing.assert_array_equal(ours.apply(Xt), ref.apply(Xt))
    np.testing.assert_array_equal(ours.predict_proba(Xt), ref.predict_proba(Xt))
    np.testing.assert_array_equal(ours.predict(Xt), ref.predict(Xt))


def test_regressor_predictions_equal_sklearn_exactly():
    X, y = load_diabetes(return_X_y=True)
    ours = CARTRegressor(max_depth=5).fit(X, y)
    ref = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X * 1.01), ref.predict(X * 1.01))
    Y = np.column_stack([y, -y])
    multi = CARTRegressor(max_depth=3).fit(X, Y)
    assert multi.predict(X).shape == (X.shape[0], 2)
    assert multi.to_tree().n_outputs == 2


def test_breast_cancer_depth6_node_counts_equal_sklearn_counts():
    X, y = load_breast_cancer(return_X_y=True)
    est = CARTClassifier(max_depth=6).fit(X, y)
    tree = est.to_tree()
    stats = tree.node_stats(X, y)
    np.testing.assert_array_equal(stats.count, est.estimator_.tree_.n_node_samples)
    # class counts at the root equal the class totals; leaves partition the data
    np.testing.assert_array_equal(stats.class_counts[0], np.bincount(y))
    assert stats.count[tree.leaves].sum() == len(y)
    assert tree.max_depth == 6
    assert tree.is_axis_aligned()[tree.decision_nodes].all()


def test_string_labels_and_names():
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"], dtype=object)[y]
    est = CARTClassifier(max_depth=2).fit(X, names)
    assert list(est.classes_) == ["setosa", "versicolor", "virginica"]
    assert est.to_tree().output_names == ("setosa", "versicolor", "virginica")
    assert set(est.predict(X)) <= set(est.classes_)


def test_history_and_callbacks():
    X, y = load_iris(return_X_y=True)
    seen = []

    class Spy(Callback):
        def on_train_begin(self, estimator, total):
            seen.append(("begin", total))

        def on_epoch_end(self, estimator, record):
            seen.append(("epoch", record["epoch"]))

        def on_train_end(self, estimator):
            seen.append(("end",))

    est = CARTClassifier(max_depth=3).fit(X, y, callbacks=[Spy()], eval_set=(X[:20], y[:20]))
    assert seen == [("begin", 1), ("epoch", 1), ("end",)]
    (record,) = est.history_
    assert record["train_score"] == pytest.approx(est.score(X, y))
    assert "val_score" in record and record["depth"] == 3


def test_cancel_from_a_callback_is_recorded():
    X, y = load_iris(return_X_y=True)

    class Stop(Callback):
        def on_epoch_end(self, estimator, record):
            raise TrainingCancelled

    est = CARTClassifier(max_depth=2).fit(X, y, callbacks=[Stop()])
    assert est.stopped_early_ is True
    assert est.predict(X).shape == y.shape


def test_feature_names_for_display_and_dataframes():
    import warnings

    import pandas as pd

    from models.ground.errors import TreevizError

    X, y = load_iris(return_X_y=True)
    names = ["sepal length", "sepal width", "petal length", "petal width"]
    est = CARTClassifier(max_depth=1).fit(X, y, feature_names=names)
    assert est.to_tree().feature_names == tuple(names)
    assert node_rule(est.to_tree(), 0).startswith("petal")
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est2 = CARTClassifier(max_depth=2).fit(df, y, eval_set=(df, y))
        est2.predict(df)
    assert est2.to_tree().feature_names == ("a", "b", "c", "d")
    assert CARTClassifier(max_depth=1).fit(X, y).to_tree().feature_names[0] == "x0"
    with pytest.raises(TreevizError, match="3 feature names"):
        CARTClassifier().fit(X, y, feature_names=names[:3])


def _with_holes(X: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = X.astype(np.float64).copy()
    X[rng.random(X.shape) < fraction] = np.nan
    return X


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_missing_values_train_and_route_exactly_as_scikit_learn(criterion):
    X, y = load_breast_cancer(return_X_y=True)
    X = _with_holes(X, 0.15, 0)
    ours = CARTClassifier(max_depth=6, criterion=criterion).fit(X, y)
    ref = DecisionTreeClassifier(max_depth=6, criterion=criterion, random_state=0).fit(X, y)
    Xt = _with_holes(load_breast_cancer().data, 0.3, 1)  # other holes, and features never missing in training
    np.testing.assert_array_equal(ours.apply(Xt), ref.apply(Xt))
    np.testing.assert_array_equal(ours.predict_proba(Xt), ref.predict_proba(Xt))
    tree = ours.to_tree()
    assert tree.missing_right.any() and not tree.missing_right.all()  # both sides occur
    split = ref.tree_.children_left >= 0
    np.testing.assert_array_equal(tree.missing_right, (ref.tree_.missing_go_to_left == 0) & split)


def test_a_split_between_missing_and_present_values_routes_like_scikit_learn():
    x = np.array([0.0, 1.0, np.nan, 3.0, np.nan, 5.0, np.nan, 2.0])
    y = np.array([0, 0, 1, 0, 1, 0, 1, 0])
    ours = CARTClassifier().fit(x[:, None], y)
    ref = DecisionTreeClassifier(random_state=0).fit(x[:, None], y)
    assert np.isposinf(ref.tree_.threshold[0])  # scikit-learn's "missing vs present" split
    probe = np.array([[-1e30], [0.0], [1e30], [np.nan]])
    np.testing.assert_array_equal(ours.predict(probe), ref.predict(probe))
    assert ours.predict(probe).tolist() == [0, 0, 0, 1]


def test_missing_values_survive_save_and_load(tmp_path):
    X, y = load_diabetes(return_X_y=True)
    X = _with_holes(X, 0.2, 2)
    model = CARTRegressor(max_depth=5).fit(X, y)
    ref = DecisionTreeRegressor(max_depth=5, random_state=0).fit(X, y)
    np.testing.assert_array_equal(model.predict(X), ref.predict(X))
    again = load_model(save_model(model, tmp_path / "m"))
    np.testing.assert_array_equal(again.predict(X), model.predict(X))
    np.testing.assert_array_equal(again.to_tree().missing_right, model.to_tree().missing_right)


def test_infinite_values_are_still_refused():
    X, y = load_iris(return_X_y=True)
    X = X.copy()
    X[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        CARTClassifier().fit(X, y)
