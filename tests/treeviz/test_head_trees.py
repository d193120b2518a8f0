"""Trees whose model predicts from a head (latent trees): what their rules, diagrams and counts say.

The leaves of such a tree describe the training rows that reach them; a pruned leaf or one no
training row reached has no class at all; the head's parameters and FLOPs count in the size.
"""

import numpy as np
import pytest

from models.latent.estimators import LatentTreeClassifier, LatentTreeRegressor
from models.latent.layers import count_parameters
from models.persist import load_model, save_model
from tests.treeviz.test_tree import small_tree
from treeviz.plots import style, tree_figure
from treeviz.readers.rules import leaf_agreement, leaf_label, leaf_state, leaf_summary, rules
from treeviz.services.experiments.training import model_cost

HEAD = {"inputs": "[x; z]", "parameters": 40, "nonzero_weights": 30, "flops": 30}


def head_tree(**kw):
    """The 5-node tree (leaves 1, 3, 4) with a head: leaf 3 pruned, leaf 4 empty."""
    args = {"active": [1, 1, 1, 0, 1], "meta": {"prediction": "head", "head": HEAD, "empty_leaves": [4]}, **kw}
    return small_tree(**args)


def test_leaf_states_and_summaries_where_a_head_decides():
    t = head_tree()
    assert [leaf_state(t, v) for v in (1, 3, 4)] == ["head", "pruned", "empty"]
    assert [leaf_label(t, v) for v in (1, 3, 4)] == ["no", "pruned", "no train rows"]
    assert leaf_summary(t, 1) == "the head decides (leaf 1: 100% of its training rows are class no)"
    assert leaf_summary(t, 3).startswith("no class: leaf 3 is pruned (activity 0)")
    assert leaf_summary(t, 4).startswith("no class: no training row reaches leaf 4")
    assert not any("class = " in r for r in rules(t))
    plain = small_tree()  # a tree that predicts from its leaves keeps its classes
    assert [leaf_state(plain, v) for v in (1, 3, 4)] == ["value"] * 3
    assert leaf_summary(plain, 3) == "class = yes (score 1, leaf 3)"


def test_leaf_agreement_counts_the_models_own_predictions_per_leaf():
    t = head_tree(active=[1, 1, 1, 1, 1], meta={"prediction": "head", "head": HEAD})
    X = np.array([[0.1, 0.0], [0.2, 0.0], [0.3, 0.0], [0.9, 0.1], [0.9, 0.2], [0.9, 0.9]])
    # leaves: 1, 1, 1, 3, 3, 4; leaf classes: no, yes, yes
    pred = np.array(["no", "yes", "no", "yes", "no", "no"])
    agree = leaf_agreement(t, X, pred, split="test")
    assert {v: (a.n_rows, a.share) for v, a in agree.items()} == {1: (3, pytest.approx(2 / 3)), 3: (2, 0.5),
                                                                 4: (1, 0.0)}
    text = rules(t, agreement=agree)[0]
    assert text.endswith("[the model predicts this class for 67% of the 3 test rows here]")
    reg = small_tree(leaf_value=[[np.nan], [1.0], [np.nan], [2.0], [4.0]], output_names=("v",),
                     task="regression", meta={"prediction": "head", "head": HEAD})
    gaps = leaf_agreement(reg, X, np.array([1.5, 0.5, 1.0, 2.0, 2.0, 3.0]), split="test")
    assert gaps[1].mean_gap == pytest.approx(1 / 3) and gaps[4].mean_gap == pytest.approx(1.0)
    assert "differ from this mean by 0.333" in gaps[1].text()


def test_a_heads_parameters_and_flops_count_and_its_leaf_values_do_not():
    plain, head = small_tree(), small_tree(meta={"prediction": "head", "head": HEAD})
    # plain: 2 axis-aligned splits (1 weight + 1 bias each) + 3 leaves x 2 outputs
    assert plain.n_params() == 4 + 6 and plain.n_nonzero_weights() == 2
    assert head.n_params() == 4 + 40 and head.n_nonzero_weights() == 2 + 30
    X = np.array([[0.1, 0.0], [0.9, 0.9]])
    assert head.flops(X) == pytest.approx(plain.flops(X) + 30)


def test_the_diagram_labels_pruned_and_empty_leaves_and_says_a_head_predicts():
    fig = tree_figure(head_tree())
    labels = [a.text for a in fig.layout.annotations]
    assert labels == ["no", "pruned", "no train rows"]
    # no colour or class mix from a placeholder value: the empty leaf is grey without data
    colours = fig.data[fig.layout.meta["node_trace"]].marker.color
    assert colours[fig.layout.meta["nodes"].index(4)] == style.NEUTRAL
    assert "a head predicts; leaves describe their rows" in fig.layout.title.subtitle.text
    hover = dict(zip(fig.layout.meta["nodes"], fig.data[fig.layout.meta["node_trace"]].hovertext, strict=True))
    assert "pruned: no prediction" in hover[3] and "the head decides" in hover[1]


@pytest.fixture(scope="module")
def latent_fit():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    model = LatentTreeClassifier(depth=3, max_epochs=5, prune_strength=2.0, random_state=0).fit(X, y)
    return model, X


def test_a_latent_tree_describes_its_head_and_its_empty_leaves(latent_fit, tmp_path):
    model, X = latent_fit
    tree = model.to_tree()
    head = model.net_.head
    assert tree.meta["head"]["parameters"] == count_parameters(head) == (5 + tree.n_nodes) * 3 + 3
    assert tree.meta["head"]["nonzero_weights"] == int(np.count_nonzero(head.weight.detach().numpy()))
    reached = np.bincount(tree.apply(X), minlength=tree.n_nodes)
    assert tree.meta["empty_leaves"] == [int(v) for v in tree.leaves if reached[v] == 0]
    assert tree.n_params() >= count_parameters(head)
    cost = model_cost(model, X)  # what a run stores and Compare ranks: the head is counted
    assert cost["n_params"] == tree.n_params() and cost["n_nonzero_weights"] >= tree.meta["head"]["nonzero_weights"]
    assert cost["flops"] >= tree.meta["head"]["flops"]
    path = tmp_path / "latent.treeviz"
    save_model(model, path)
    again = load_model(path).to_tree()
    assert again.meta["empty_leaves"] == tree.meta["empty_leaves"] and again.meta["head"] == tree.meta["head"]


def test_a_model_file_without_leaf_counts_still_loads(latent_fit):
    model, _ = latent_fit
    learned, arrays = model._get_model_state()
    arrays.pop("leaf_rows_")
    other = LatentTreeClassifier(depth=3, max_epochs=5, prune_strength=2.0, random_state=0)
    other.n_features_in_, other.classes_ = model.n_features_in_, model.classes_
    other.feature_names_ = model.feature_names_
    other._set_model_state(learned, arrays)
    assert other.to_tree().meta["empty_leaves"] == []


def test_latent_regression_rules_say_the_head_decides():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    model = LatentTreeRegressor(depth=2, max_epochs=3, random_state=0).fit(X, X[:, 0] * 2)
    tree = model.to_tree()
    agree = leaf_agreement(tree, X, model.predict(X), split="training")
    lines = rules(tree, agreement=agree)
    assert all("the head decides" in r or "no value" in r for r in lines)
    assert any("differ from this mean by" in r for r in lines)
