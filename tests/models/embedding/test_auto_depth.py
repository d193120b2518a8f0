"""The tree embedding's depth and ℓ1 penalty are chosen from the data (issue 52): the depth grows with
the rows and, when the data has classes, with the classes as far as the rows allow, within bounds; a
fitted model uses the rule's values, in the estimator, in the app's training path and in its model file."""

import numpy as np
import pytest

from models.embedding.defaults import AUTO_DEPTH_MAX, AUTO_DEPTH_MIN, auto_depth, auto_l1_penalty
from models.embedding.tree_embedding import TreeEmbedding
from models.persist import load_model, save_model
from models.registry import get_family
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run

#: The shortest schedule: the depth is chosen before any of it runs.
TINY = {"perplexity": 5.0, "n_mu": 1, "free_iter": 30, "z_iter": 5, "tao_iter": 2, "device": "cpu"}


def test_the_depth_grows_with_the_rows_within_its_bounds():
    rows = [2, 10, 100, 455, 1257, 5000, 60_000, 10**7, 10**12]
    depths = [auto_depth(n) for n in rows]
    assert depths == sorted(depths)
    assert depths[0] == AUTO_DEPTH_MIN and depths[-1] == AUTO_DEPTH_MAX
    assert auto_depth(100) < auto_depth(1257) < auto_depth(60_000)
    assert auto_depth(1257) == 5  # about √N = 35 leaves: 32


def test_the_classes_choose_the_depth_as_far_as_the_rows_allow():
    by_classes = [auto_depth(1257, k) for k in (2, 3, 6, 10, 26)]
    assert by_classes == sorted(by_classes) and by_classes[0] < by_classes[-1]
    assert auto_depth(1257, 2) == 2 and auto_depth(1257, 6) == 4 and auto_depth(1257, 10) == 5
    assert auto_depth(1257, 26) == auto_depth(1257) == auto_depth(1257, 1)  # capped by the rows; one class: none
    assert auto_depth(10, 100) == AUTO_DEPTH_MIN and auto_depth(10**12, 10**6) == AUTO_DEPTH_MAX


def test_the_penalty_grows_with_the_rows():
    assert auto_l1_penalty(1000) > 0
    assert auto_l1_penalty(2000) == pytest.approx(2 * auto_l1_penalty(1000))


def test_the_schema_declares_both_automatic():
    defaults = get_family("tree_embedding").defaults("embedding")
    assert defaults["depth"] is None and defaults["l1_penalty"] is None
    assert TreeEmbedding().get_params()["depth"] is None


def _X(n, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(2, 5))
    y = np.arange(n) % 2
    return centres[y] + rng.normal(size=(n, 5)), y


@pytest.mark.slow  # a few seconds: two tiny fits and a model file
def test_a_fitted_model_uses_the_rules_depth_and_penalty(tmp_path):
    X, y = _X(200)
    unlabelled = TreeEmbedding(**TINY).fit(X)
    assert unlabelled.depth_ == auto_depth(200) == 4
    assert unlabelled.l1_penalty_ == pytest.approx(auto_l1_penalty(200))
    assert unlabelled.to_tree().max_depth <= unlabelled.depth_
    labelled = TreeEmbedding(**TINY).fit(X, y)
    assert labelled.depth_ == auto_depth(200, 2) == 2
    assert labelled.to_tree().max_depth <= 2 < unlabelled.depth_
    assert TreeEmbedding(**TINY, depth=3, l1_penalty=0.5).fit(X, y).depth_ == 3
    save_model(labelled, tmp_path / "m.zip")
    loaded = load_model(tmp_path / "m.zip")
    assert (loaded.depth_, loaded.l1_penalty_) == (labelled.depth_, labelled.l1_penalty_)
    np.testing.assert_array_equal(loaded.transform(X), labelled.transform(X))


@pytest.mark.slow  # seconds: one tiny fit on breast cancer's 398 training rows
def test_the_app_gives_the_fit_the_classes_that_choose_the_depth():
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    estimator, _ = train_run("tree_embedding", "embedding", {k: v for k, v in TINY.items() if k != "device"},
                             prepared, device="cpu")
    n = prepared.X_train.shape[0]
    assert estimator.depth_ == auto_depth(n, 2) < auto_depth(n)
