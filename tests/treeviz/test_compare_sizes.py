"""What Compare says of the two trees it draws side by side (issue 52, view defect 8), and the leaderboard's
run-name column (defect 6): which tree of an ensemble is drawn, sizes as the leaderboard counts them,
inactive decision nodes explained, leaf labels only where they fit at the width given."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from treeviz.plots import TreeFigureOptions, tree_figure
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.ui.run_tables import INACTIVE_NOTE, decision_nodes_text, leaderboard_widths, side_caption


@pytest.fixture(scope="module")
def cart_tree():
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    model, _ = train_run("cart", "classification", {"max_depth": 5}, iris)
    return model.to_tree()


def test_the_caption_gives_the_leaderboards_sizes_and_says_which_tree(cart_tree):
    tree = cart_tree
    active = int(np.count_nonzero(tree.active[tree.decision_nodes] > 0))
    one = side_caption(tree, {}, 1, "test")
    assert one == f"depth {tree.max_depth} · {active} decision nodes, {tree.n_nonzero_weights()} nonzero weights · " \
                  "test split routed"
    ensemble = side_caption(tree, {"n_decision_nodes": 300, "n_nonzero_weights": 19200}, 20, "test")
    assert ensemble.startswith("Drawn: tree 1 of 20 · this tree: depth")
    assert "the ensemble, as in the leaderboard: 300 decision nodes, 19 200 nonzero weights" in ensemble


def test_inactive_decision_nodes_are_counted_apart_and_explained(cart_tree):
    active = cart_tree.active.copy()
    active[cart_tree.subtree_nodes(int(cart_tree.parent[cart_tree.leaves[-1]]))] = 0.0  # as DGT marks unreached nodes
    tree = dataclasses.replace(cart_tree, active=active)
    active = int(np.count_nonzero(tree.active[tree.decision_nodes] > 0))
    total = int(tree.decision_nodes.size)
    assert active < total
    caption = side_caption(tree, {}, 1, "train")
    assert f"{active} of {total} decision nodes active" in caption and INACTIVE_NOTE in caption
    assert decision_nodes_text(7, 7) == "7 decision nodes"


def test_the_run_column_is_as_wide_as_its_longest_name():
    rows = [{"run": "CART", "family": "CART"}, {"run": "x" * 80, "family": "TAO forest"}]
    widths = leaderboard_widths(rows)
    assert widths["run"] >= 8 * 80 and widths["family"] >= 80


def test_one_tree_of_an_ensemble_is_named_in_the_title(cart_tree):
    fig = tree_figure(cart_tree, options=TreeFigureOptions(family_label="TAO forest", member=(1, 3)))
    assert fig.layout.title.text == f"TAO forest · tree 1 of 3 · depth {cart_tree.max_depth}"
    alone = tree_figure(cart_tree, options=TreeFigureOptions(family_label="CART"))
    assert alone.layout.title.text == f"CART tree · depth {cart_tree.max_depth}"


def test_leaf_labels_are_written_as_they_fit_the_width(cart_tree):
    n_leaves = int(cart_tree.n_leaves)
    plain = tree_figure(cart_tree).layout.annotations
    assert len(plain) == n_leaves and {a.textangle for a in plain} == {0 if n_leaves <= 12 else -90}
    wide = tree_figure(cart_tree, options=TreeFigureOptions(width=4000)).layout.annotations
    assert len(wide) == n_leaves and {a.textangle for a in wide} == {0}  # room to write them across
    narrow = tree_figure(cart_tree, options=TreeFigureOptions(width=260))
    assert not narrow.layout.annotations  # too close to write even upwards: none, and the subtitle says so
    assert "no leaf labels: too many leaves for this width" in narrow.layout.title.subtitle.text
