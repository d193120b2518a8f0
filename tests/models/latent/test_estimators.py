"""Latent-tree estimators: scikit-learn contract, model files, the Tree, warm start, inference modes."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris, make_blobs
from sklearn.preprocessing import StandardScaler

from models.base import Callback
from models.ground.errors import TrainingCancelled, TreevizError
from models.latent.estimators import (
    LatentTreeClassifier,
    LatentTreeClustering,
    LatentTreeRegressor,
    _ce_loss,
    _mse_loss,
    auto_depth,
)
from models.persist import load_model, model_bytes, zip_bytes

FAST = dict(depth=2, max_epochs=20, learning_rate=0.05, batch_size=32)


@pytest.fixture(scope="module")
def fitted(cancer):
    X, y = cancer
    return LatentTreeClassifier(depth=3, max_epochs=15, prune_strength=1.0).fit(
        X[:400], y[:400], eval_set=(X[400:480], y[400:480]), feature_names=[f"f{i}" for i in range(30)])


def test_history_records_the_issue_fields(fitted):
    rec = fitted.history_[-1]
    for key in ("epoch", "loss", "train_score", "val_score", "val_loss", "n_active_nodes", "a_norm",
                "active_fraction", "batch_active_fraction", "lr"):
        assert key in rec, key
    assert 0 <= rec["n_active_nodes"] <= 15
    assert fitted.best_epoch_ >= 1


@pytest.mark.parametrize("suffix", ["", ".zip"])
def test_model_file_round_trip_predicts_identically(tmp_path, cancer, fitted, suffix):
    X, _ = cancer
    path = fitted.save(str(tmp_path / f"latent{suffix}"))
    back = load_model(path)
    np.testing.assert_array_equal(back.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(back.pruning_, fitted.pruning_)
    assert back.to_tree().equals(fitted.to_tree())
    assert back.history_ == fitted.history_


def test_the_tree_describes_the_network(cancer, fitted):
    X, _ = cancer
    tree = fitted.to_tree()
    assert tree.n_nodes == 15 and tree.max_depth == 3 and tree.meta["prediction"] == "head"
    np.testing.assert_array_equal(tree.active, fitted.pruning_)
    assert tree.feature_names[:2] == ("f0", "f1")
    # the Tree's hard routing is the network's path (z > 0 with the code read-out, unpruned nodes)
    state = fitted.tree_state(X)
    paths = tree.decision_path(X).toarray().astype(bool)
    np.testing.assert_array_equal(state["z"] > 0, paths & (state["a"] > 0)[None, :])
    # leaf values are the training class shares of each leaf (rows sum to one)
    np.testing.assert_allclose(tree.leaf_value[tree.leaves].sum(axis=1), 1.0)


def test_batch_inference_recomputes_pruning_per_batch(cancer, fitted):
    X, _ = cancer
    batch = LatentTreeClassifier(**{**fitted.get_params(), "inference": "batch"})
    back = load_model(zip_bytes(model_bytes(fitted)))
    back.set_params(inference="batch", eval_batch_size=16)
    p_batch = back.predict_proba(X[:64])
    assert p_batch.shape == (64, 2)
    assert batch.get_params()["inference"] == "batch"


def test_warm_start_continues_from_the_current_weights(cancer):
    X, y = cancer
    model = LatentTreeClassifier(depth=2, max_epochs=3, random_state=0).fit(X, y)
    weights = model.net_.splits.linear.weight.detach().clone()
    model.set_params(warm_start=True, prune_strength=5.0, max_epochs=1)
    model.fit(X, y)
    moved = (model.net_.splits.linear.weight.detach() - weights).abs().max()
    assert 0 < float(moved) < 0.5, "one more epoch from the same weights, not a fresh start"
    assert model.net_.prune_strength == 5.0
    cold = LatentTreeClassifier(depth=2, max_epochs=1, random_state=0, prune_strength=5.0).fit(X, y)
    assert not np.allclose(cold.predict_proba(X), model.predict_proba(X))


def test_preprint_formulation_learns_eta(cancer):
    X, y = cancer
    model = LatentTreeClassifier(depth=2, max_epochs=5, formulation="preprint", prune_strength=0.1).fit(X, y)
    eta = model.net_.eta.detach().numpy()
    assert eta.shape == (7,)
    assert model.score(X, y) > 0.8
    assert load_model(zip_bytes(model_bytes(model))).predict(X).tolist() == model.predict(X).tolist()


def test_a_callback_can_cancel_training(cancer):
    X, y = cancer

    class StopAfterTwo(Callback):
        def on_epoch_end(self, estimator, record):
            if record["epoch"] >= 2:
                raise TrainingCancelled

    model = LatentTreeClassifier(depth=2, max_epochs=50).fit(X, y, callbacks=[StopAfterTwo()])
    assert model.stopped_early_ and len(model.history_) == 2
    assert model.predict(X).shape == y.shape


def test_multiclass_and_regression_and_bad_params():
    X, y = load_iris(return_X_y=True)
    model = LatentTreeClassifier(depth=2, max_epochs=40, learning_rate=0.05).fit(X, y)
    assert model.score(X, y) > 0.8
    assert model.to_tree().n_outputs == 3
    reg = LatentTreeRegressor(depth=2, max_epochs=40, learning_rate=0.05).fit(X[:, :3], X[:, 3])
    assert reg.score(X[:, :3], X[:, 3]) > 0.7
    assert reg.to_tree().task == "regression"
    with pytest.raises(ValueError, match="'depth' must be at least 1"):
        LatentTreeClassifier(depth=0).fit(X, y)
    with pytest.raises(ValueError, match="'readout' must be one of"):
        LatentTreeClassifier(readout="soft").fit(X, y)


def test_clustering_reconstructs_held_out_features_and_labels_leaves():
    X, _groups = make_blobs(n_samples=300, centers=4, n_features=3, random_state=0)
    X = StandardScaler().fit_transform(X)
    model = LatentTreeClustering(depth=2, max_epochs=40, target_features="0", learning_rate=0.05).fit(
        X, feature_names=["a", "b", "c"])
    assert model.target_columns_.tolist() == [0]
    assert set(model.labels_) == set(range(model.cluster_leaves_.size))
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    tree = model.to_tree()
    assert (tree.weight[:, 0] == 0).all(), "the held-out feature is not a split input"
    assert tree.task == "clustering"
    recon = model.reconstruct(X)
    assert recon.shape == (300, 1) and np.corrcoef(recon[:, 0], X[:, 0])[0, 1] > 0.5
    with pytest.raises(TreevizError, match="no feature named 'z'"):
        LatentTreeClustering(target_features="z", max_epochs=1).fit(X, feature_names=["a", "b", "c"])
    with pytest.raises(TreevizError, match="At least one feature must remain"):
        LatentTreeClustering(target_features="0,1,2", max_epochs=1).fit(X)


def test_weighted_losses_equal_the_loss_of_repeated_rows():
    rng = torch.Generator().manual_seed(0)
    out2, out3 = torch.randn(4, 1, generator=rng), torch.randn(4, 3, generator=rng)
    yb, yk, yr = torch.tensor([0.0, 1.0, 1.0, 0.0]), torch.tensor([0, 2, 1, 2]), torch.randn(4, 3, generator=rng)
    w = torch.tensor([2.0, 1.0, 3.0, 1.0])
    rep = torch.repeat_interleave(torch.arange(4), w.long())
    for loss, out, y in ((_ce_loss(True), out2, yb), (_ce_loss(False), out3, yk), (_mse_loss, out3, yr)):
        torch.testing.assert_close(loss(out, y, w), loss(out[rep], y[rep], None))
        assert not torch.isclose(loss(out, y, w), loss(out, y, None))


def test_sample_weights_shift_the_decision_towards_the_heavy_class():
    X, y = make_blobs(n_samples=400, centers=[[0, 0], [1.0, 0]], cluster_std=1.0, random_state=0)
    params = dict(depth=2, max_epochs=30, learning_rate=0.05, patience=0, random_state=0)
    plain = LatentTreeClassifier(**params).fit(X, y)
    heavy = LatentTreeClassifier(**params).fit(X, y, sample_weight=np.where(y == 1, 8.0, 1.0))
    share_plain, share_heavy = (plain.predict(X) == 1).mean(), (heavy.predict(X) == 1).mean()
    assert share_heavy > share_plain + 0.15, (share_plain, share_heavy)


def test_rows_of_weight_zero_are_as_if_absent(cancer):
    X, labels = cancer
    y = (labels == "benign").astype(float)
    w = np.ones(len(y))
    w[::3] = 0.0
    params = dict(depth=2, max_epochs=5, batch_size=32, random_state=3)
    with_zeros = LatentTreeRegressor(**params).fit(X, y, sample_weight=w)
    without = LatentTreeRegressor(**params).fit(X[w > 0], y[w > 0], sample_weight=w[w > 0])
    np.testing.assert_allclose(with_zeros.predict(X), without.predict(X), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="non-zero"):
        LatentTreeClassifier(**params).fit(X, labels, sample_weight=np.zeros(len(y)))


def test_depth_auto_gives_every_class_a_leaf_between_3_and_6():
    assert [auto_depth(k) for k in (2, 3, 8, 9, 10, 16, 17, 26, 64, 100)] == [3, 3, 3, 4, 4, 4, 5, 5, 6, 6]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(260, 4))
    y = np.repeat(np.arange(26), 10)
    clf = LatentTreeClassifier(max_epochs=1, device="cpu").fit(X, y)
    assert clf.depth is None and clf.to_tree().n_nodes == 2 ** 6 - 1  # depth 5: 31 splits, 32 leaves
    assert LatentTreeClassifier(depth=2, max_epochs=1, device="cpu").fit(X, y).to_tree().n_nodes == 7
    reg = LatentTreeRegressor(max_epochs=1, device="cpu").fit(X, X[:, 0])
    assert reg.to_tree().n_nodes == 2 ** 4 - 1  # depth 3
