"""Features read from any model's trees, and the importance baselines at a budget."""

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.views.features import feature_table, importance_baselines


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))


def test_the_feature_table_of_a_cart_tree_counts_its_splits(prepared):
    model = CARTClassifier(max_depth=3).fit(prepared.X_train, prepared.labels("train"),
                                            feature_names=prepared.dataset.feature_names)
    tree = model.to_tree()
    rows = feature_table([tree])
    used = {int(j) for j in np.nonzero(tree.weight)[1]}
    assert {r.index for r in rows if r.used} == used and len(rows) == 30
    splits = np.bincount(np.nonzero(tree.weight)[1], minlength=30)
    assert all(r.norm == pytest.approx(np.sqrt(splits[r.index])) for r in rows)  # one-hot rows: √(splits)
    assert [r.used for r in rows] == sorted((r.used for r in rows), reverse=True)  # used first
    assert rows[0].name == prepared.dataset.feature_names[rows[0].index]
    with pytest.raises(TreevizError):
        feature_table([])


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_importance_baselines_keep_the_top_k_and_refit(prepared):
    results = importance_baselines(prepared, 4, "classification", seed=0)
    assert [r.method for r in results] == ["random forest importance", "gradient boosting importance"]
    forest = RandomForestClassifier(n_estimators=200, random_state=0, n_jobs=1).fit(
        prepared.X_train, prepared.labels("train").astype(str))
    assert results[0].features == tuple(np.argsort(-forest.feature_importances_, kind="stable")[:4])
    for r in results:
        assert len(r.features) == 4 and {"val_auc", "test_auc", "val_accuracy", "test_accuracy"} <= set(r.metrics)
        assert 0.85 < r.metrics["test_accuracy"] <= 1.0
    with pytest.raises(TreevizError, match="outside 1 to 30"):
        importance_baselines(prepared, 31, "classification")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_importance_baselines_for_regression():
    prepared = prepare(load_dataset("diabetes"), PrepConfig(seed=0))
    results = importance_baselines(prepared, 3, "regression")
    assert all({"test_r2", "test_rmse"} <= set(r.metrics) for r in results)
