"""The CART adapter: scikit-learn compatibility, exact Tree conversion, counts, history."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_iris
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from models.base import Callback
from models.cart.estimators import CARTClassifier, CARTRegressor, float64_threshold
from treeviz.errors import TrainingCancelled
from treeviz.rules import node_rule


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

    from treeviz.errors import TreevizError

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
