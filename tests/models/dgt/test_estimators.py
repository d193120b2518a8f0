"""DGTClassifier, DGTRegressor and the DGT forest on real and synthetic data."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, load_diabetes, load_iris
from sklearn.model_selection import train_test_split

from models.dgt.estimators import DGTClassifier, DGTRegressor
from models.dgt.forest import DGTForestClassifier, DGTForestRegressor
from models.dgt.network import route
from models.ground.errors import TrainingCancelled, TreevizError
from models.persist import load_model

QUICK = {"depth": 3, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 40, "min_steps": 200}


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X, y, test_size=0.2, random_state=1, stratify=y)


@pytest.fixture(scope="module")
def dgt(cancer):
    Xtr, _, ytr, _ = cancer
    return DGTClassifier(depth=3, n_layers=3, width_multiplier=4, max_epochs=60, min_steps=300).fit(Xtr, ytr)


def test_breast_cancer_is_learned_and_the_tree_is_the_model(dgt, cancer):
    _, Xte, _, yte = cancer
    assert dgt.score(Xte, yte) >= 0.93
    tree = dgt.to_tree()
    assert tree.routing == "hard" and tree.n_nodes == 15 and tree.family == "dgt"
    np.testing.assert_array_equal(dgt.predict_proba(Xte), tree.predict_value(Xte))
    assert dgt.history_[-1]["epoch"] == dgt.n_epochs_ and 1 <= dgt.best_epoch_ <= dgt.n_epochs_
    assert {"loss", "val_loss", "val_score", "lr", "ste_open", "epoch_s"} <= set(dgt.history_[0])


def test_the_trained_network_and_the_float64_tree_agree(dgt, cancer):
    """The float32 network on z-scored inputs and the float64 tree in input units reach the same
    leaf, except where a split value is within rounding of 0."""
    X = np.vstack([cancer[0], cancer[1]])
    net = dgt._network
    Z = torch.tensor((X - dgt.x_mean_) / dgt.x_scale_, dtype=torch.float32)
    with torch.no_grad():
        _, leaf = net(Z)
        z = net.split_values(Z).numpy()
    tree_leaf = dgt.apply(X)
    mismatch = leaf.numpy() != tree_leaf
    assert np.all(np.abs(z[mismatch]).min(axis=1) < 1e-5) if mismatch.any() else True
    W, b = dgt.split_weight_, dgt.split_bias_
    np.testing.assert_array_equal(route(W, b, X), tree_leaf)


def test_unreached_leaves_are_inactive_and_noted(cancer):
    Xtr, _, ytr, _ = cancer
    model = DGTClassifier(**{**QUICK, "depth": 5}).fit(Xtr, ytr)
    tree = model.to_tree()
    reached = model.leaf_reached_
    leaves = tree.leaves
    np.testing.assert_array_equal(tree.active[leaves] > 0, reached)
    assert np.isin(np.unique(model.apply(Xtr)), np.flatnonzero(reached)).all()
    assert f"{int(reached.sum())} of 32 leaves" in tree.meta["notes"][0]


def test_regression_targets_are_scaled_and_rmse_is_in_data_units():
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=1)
    model = DGTRegressor(depth=2, n_layers=1, l1_penalty=0.0, max_epochs=100).fit(Xtr, ytr)
    assert model.target_min_ == ytr.min() and model.target_range_ == ytr.max() - ytr.min()
    pred = model.predict(Xte)
    rmse = np.sqrt(np.mean((pred - yte) ** 2))
    assert rmse < 70.0  # the mean predicts 77; CART depth 2 gives 64.5 on this split
    # leaves are in data units: the tree's values are the scaled leaves times the range plus the minimum
    np.testing.assert_allclose(model.to_tree().leaf_value[model.to_tree().leaves, 0],
                               model.leaves_[:, 0] * model.target_range_ + model.target_min_)
    # the RMSE on the [0, 1] scale times the range is the RMSE in data units
    scaled = np.sqrt(np.mean(((pred - yte) / model.target_range_) ** 2))
    assert scaled * model.target_range_ == pytest.approx(rmse, rel=1e-12)


def test_same_seed_same_model(cancer):
    Xtr, Xte, ytr, _ = cancer
    a = DGTClassifier(**QUICK, random_state=3).fit(Xtr, ytr)
    b = DGTClassifier(**QUICK, random_state=3).fit(Xtr, ytr)
    np.testing.assert_array_equal(a.apply(Xte), b.apply(Xte))
    assert [r["val_loss"] for r in a.history_] == [r["val_loss"] for r in b.history_]


def test_model_file_round_trip(tmp_path, dgt, cancer):
    _, Xte, _, _ = cancer
    path = dgt.save(str(tmp_path / "m"))
    back = load_model(path)
    np.testing.assert_array_equal(back.predict_proba(Xte), dgt.predict_proba(Xte))
    assert back.to_tree().equals(dgt.to_tree())


def test_min_steps_gives_small_data_enough_steps():
    X, y = load_iris(return_X_y=True)
    model = DGTClassifier(depth=2, n_layers=1, l1_penalty=0.0, max_epochs=10, min_steps=100, batch_size=256,
                          validation_fraction=0.0).fit(X, y)
    assert model.n_steps_ >= 100 and model.n_epochs_ == 100  # 150 rows: one step per epoch
    assert model.best_epoch_ == model.n_epochs_  # no validation: the last epoch is kept


def test_constant_columns_and_exact_zero_inputs(cancer):
    Xtr, _, ytr, _ = cancer
    Xc = np.hstack([Xtr, np.full((Xtr.shape[0], 1), 5.0)])
    model = DGTClassifier(**QUICK).fit(Xc, ytr)
    assert model.x_scale_[-1] == 1.0 and np.isfinite(model.split_weight_).all()
    # a row at the training mean has z-scored input 0: predicted without error, as the tree routes it
    row = model.x_mean_[None, :]
    assert model.predict(row).shape == (1,)
    np.testing.assert_array_equal(model.apply(row), route(model.split_weight_, model.split_bias_, row))


def test_zero_weight_rows_are_as_if_absent(cancer):
    Xtr, Xte, ytr, _ = cancer
    w = np.ones(len(ytr))
    w[:50] = 0
    a = DGTClassifier(**QUICK, validation_fraction=0.0).fit(Xtr, ytr, sample_weight=w)
    b = DGTClassifier(**QUICK, validation_fraction=0.0).fit(Xtr[50:], ytr[50:])
    np.testing.assert_array_equal(a.apply(Xte), b.apply(Xte))


def test_a_cancel_keeps_a_usable_model(cancer):
    Xtr, Xte, ytr, _ = cancer

    class StopAtThree:
        def on_train_begin(self, estimator, **kwargs):
            pass

        def on_epoch_end(self, estimator, **kwargs):
            if kwargs["record"]["epoch"] == 3:
                raise TrainingCancelled()

        def on_train_end(self, estimator, **kwargs):
            pass

    model = DGTClassifier(**QUICK).fit(Xtr, ytr, callbacks=[StopAtThree()])
    assert model.stopped_early_ and model.n_epochs_ == 3
    assert model.predict(Xte).shape == (len(Xte),)


def test_both_penalties_at_once_is_a_sentence(cancer):
    Xtr, _, ytr, _ = cancer
    with pytest.raises(TreevizError, match="not both"):
        DGTClassifier(**{**QUICK, "l1_penalty": 1e-4, "l2_penalty": 1e-4}).fit(Xtr, ytr)


def test_plain_quantizer_trains(cancer):
    Xtr, Xte, ytr, yte = cancer
    model = DGTClassifier(**QUICK, quantizer="plain").fit(Xtr, ytr)
    assert model.score(Xte, yte) > 0.85


def test_forest_votes_and_averages(cancer):
    Xtr, Xte, ytr, yte = cancer
    forest = DGTForestClassifier(n_trees=3, **QUICK).fit(Xtr, ytr)
    assert len(forest.estimators_) == 3 and len(forest.to_trees()) == 3
    assert forest.to_trees()[1].family == "dgt_forest" and forest.to_trees()[1].meta["forest_index"] == 1
    votes = np.stack([t.predict(Xte) for t in forest.estimators_])
    majority = (votes.sum(axis=0) >= 2).astype(int)
    np.testing.assert_array_equal(forest.predict(Xte), forest.classes_.take(majority))
    assert forest.score(Xte, yte) > 0.9
    X, y = load_diabetes(return_X_y=True)
    reg = DGTForestRegressor(n_trees=2, **QUICK).fit(X[:300], y[:300])
    np.testing.assert_allclose(reg.predict(X[300:]),
                               np.mean([t.predict(X[300:]) for t in reg.estimators_], axis=0))


def test_forest_model_file_round_trip(tmp_path, cancer):
    Xtr, Xte, ytr, _ = cancer
    forest = DGTForestRegressor(n_trees=2, **QUICK).fit(Xtr, ytr.astype(float))
    back = load_model(forest.save(str(tmp_path / "f")))
    np.testing.assert_array_equal(back.predict(Xte), forest.predict(Xte))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_training_learns_and_predicts_through_the_tree(cancer):
    Xtr, Xte, ytr, yte = cancer
    gpu = DGTClassifier(**QUICK, device="cuda").fit(Xtr, ytr)
    assert gpu.device_.startswith("cuda")
    assert gpu.score(Xte, yte) > 0.9
    np.testing.assert_array_equal(gpu.predict_proba(Xte), gpu.to_tree().predict_value(Xte))
