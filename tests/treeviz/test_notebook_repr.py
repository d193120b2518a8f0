"""A fitted model or a Tree at the end of a notebook cell: the Tree explorer's diagram under a header
(class name, size, headline metric), offline; an unfitted model keeps scikit-learn's repr, and a
Tree's text repr is one short line."""

from __future__ import annotations

import copy
import re
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.utils import estimator_html_repr

import treeviz as tv
from models.ground import display
from models.schema import Curves
from tests.notebook_html import figure_traces, header, outside_requests
from tests.treeviz.test_tree import small_tree
from treeviz.plots import NODE_TRACE_NAME
from treeviz.plots.notebook import MAX_LEVELS, card_html


@pytest.fixture(scope="module")
def iris():
    return tv.prepare(tv.load_dataset("iris"), tv.PrepConfig(seed=0))


@pytest.fixture(scope="module")
def cart(iris):
    model = tv.CARTClassifier(max_depth=3)
    return model.fit(iris.X_train, iris.labels("train"), eval_set=(iris.X_val, iris.labels("val")),
                     feature_names=list(iris.dataset.feature_names))


def unnumbered(html: str) -> str:
    """The HTML without the ids that differ from one call to the next (scikit-learn's container
    counter, plotly's random div id)."""
    html = re.sub(r"sk-(?:container-)?id-\d+|sk-estimator-id-\d+", "id", html)
    return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "uuid", html)


def node_ids(html: str) -> list[int]:
    """The node ids that the diagram's node trace draws."""
    nodes = [t for t in figure_traces(html) if t.get("name") == NODE_TRACE_NAME]
    assert len(nodes) == 1, "the diagram has no node trace"
    return [int(row[0]) for row in nodes[0]["customdata"]]


def test_importing_treeviz_registers_the_renderer():
    assert display.html_renderer() is card_html


def test_a_fitted_model_shows_its_tree_size_and_validation_score(cart, iris):
    html = cart._repr_html_()
    tree = cart.to_tree()
    accuracy = cart.score(iris.X_val, iris.labels("val"))
    assert header(html) == (f"CARTClassifier · {tree.n_nodes} nodes, {tree.n_leaves} leaves, depth {tree.max_depth}"
                            f" · 4 features · validation accuracy {accuracy:.3f}")
    assert sorted(node_ids(html)) == list(range(tree.n_nodes))  # every node drawn
    assert "plotly.js v" in html and "Plotly.newPlot" in html  # the library travels with the output
    assert outside_requests(html) == []
    # Jupyter asks for the mime bundle first: it carries the same card
    bundle = cart._repr_mimebundle_()
    assert unnumbered(bundle["text/html"]) == unnumbered(html) and bundle["text/plain"] == repr(cart)


def test_the_check_for_outside_requests_catches_a_cdn(cart):
    fig = tv.plot_tree(cart)
    assert outside_requests(fig.to_html(include_plotlyjs="cdn", full_html=False))
    assert outside_requests(fig.to_html(include_plotlyjs=True, full_html=False)) == []


def test_an_unfitted_model_keeps_scikit_learns_repr():
    model = tv.TAOClassifier(depth=2)
    html = model._repr_html_()
    assert unnumbered(html) == unnumbered(estimator_html_repr(model))
    assert "plotly" not in html.lower() and "treeviz-card" not in html
    assert unnumbered(model._repr_mimebundle_()["text/html"]) == unnumbered(html)


def test_a_tree_shows_its_diagram_and_a_short_text_repr(cart):
    tree = cart.to_tree()
    html = tree._repr_html_()
    assert header(html) == f"Tree · {tree.n_nodes} nodes, {tree.n_leaves} leaves, depth {tree.max_depth} · 4 features"
    assert sorted(node_ids(html)) == list(range(tree.n_nodes)) and outside_requests(html) == []
    assert repr(tree) == (f"Tree(task='classification', nodes={tree.n_nodes}, leaves={tree.n_leaves}, "
                          f"depth={tree.max_depth}, features=4, routing='hard')")
    assert repr(small_tree(routing="soft")) == \
        "Tree(task='classification', nodes=5, leaves=3, depth=2, features=2, routing='soft')"


def test_without_a_renderer_the_plain_reprs_stay(cart):
    display.set_html_renderer(None)
    try:
        assert unnumbered(cart._repr_html_()) == unnumbered(estimator_html_repr(cart))
        assert cart.to_tree()._repr_html_() is None
    finally:
        display.set_html_renderer("treeviz.plots.notebook:card_html")
    assert "treeviz-card" in cart._repr_html_()


def test_a_forest_counts_its_trees_and_draws_the_first(iris):
    forest = tv.TAOForestClassifier(n_trees=2, depth=2, max_iter=3, n_jobs=1, random_state=0)
    forest.fit(iris.X_train, iris.labels("train"))
    trees = forest.to_trees()
    html = forest._repr_html_()
    total = sum(t.n_nodes for t in trees)
    first = trees[0]
    # no metric: a forest's history scores its trees one by one, not the forest
    assert header(html) == (f"TAOForestClassifier · 2 trees ({total} nodes in all) · tree 1 drawn: "
                            f"{first.n_nodes} nodes, {first.n_leaves} leaves, depth {first.max_depth} · 4 features")
    assert sorted(node_ids(html)) == list(range(first.n_nodes))


def test_a_deep_tree_is_drawn_to_a_few_levels():
    X, y = make_classification(n_samples=400, n_features=6, flip_y=0.3, random_state=0)
    model = tv.CARTClassifier().fit(X, y)
    tree = model.to_tree()
    assert tree.max_depth > MAX_LEVELS
    html = model._repr_html_()
    assert f"top {MAX_LEVELS} of {tree.max_depth} levels drawn" in header(html)
    assert "training accuracy 1.000" in header(html)  # no validation set: the training score
    drawn = np.array(node_ids(html))
    assert tree.node_depth[drawn].max() == MAX_LEVELS and drawn.size < tree.n_nodes


def test_the_headline_is_the_score_of_the_record_the_model_keeps(cart):
    """A family whose model keeps its best epoch (lowest ``curves.kept``) is scored at that epoch."""
    model = clone_fitted(cart)
    model.history_ = [{"val_loss": 0.7, "val_score": 0.8}, {"val_loss": 0.5, "val_score": 0.9},
                      {"val_loss": 0.6, "val_score": 0.85, "train_score": 1.0}]
    keeps_best = SimpleNamespace(curves=Curves(x="epoch", panels=(), kept="val_loss"))
    assert model._headline_metric(keeps_best) == ("validation accuracy", 0.9)
    keeps_last = SimpleNamespace(curves=Curves(x="epoch", panels=()))
    assert model._headline_metric(keeps_last) == ("validation accuracy", 0.85)
    per_tree = SimpleNamespace(curves=Curves(x="tree", panels=()))
    assert model._headline_metric(per_tree) is None
    model.history_ = [{"val_score": float("nan"), "train_score": 0.75}]
    assert model._headline_metric(keeps_last) == ("training accuracy", 0.75)


def clone_fitted(model):
    """A shallow copy of a fitted model, so a test may change its history."""
    twin = copy.copy(model)
    twin.history_ = list(model.history_)
    return twin
