"""The tree diagram (treeviz.plots.tree_diagram), checked on ``fig.to_dict()``."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits

from models.cart.estimators import CARTClassifier, CARTRegressor
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.plots import NODE_TRACE_NAME, TreeFigureOptions, node_from_selection, tree_figure
from treeviz.plots.style import CLASS_PALETTE, NEUTRAL, class_color, plot_text
from treeviz.readers.layout import tidy_layout
from treeviz.readers.rules import node_rule


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    est = CARTClassifier(max_depth=6).fit(X, y)
    return est, est.to_tree(), X, y


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits(return_X_y=True)
    return CARTClassifier(max_depth=4).fit(X, y).to_tree(), X, y


@pytest.fixture(scope="module")
def pruned_tree(digits):
    """The digits tree with node 1's left subtree pruned (active 0) and the root's right child
    half active."""
    tree, X, y = digits
    active = np.ones(tree.n_nodes)
    dead = tree.subtree_nodes(int(tree.children_left[1]))
    active[dead] = 0.0
    active[tree.children_right[0]] = 0.5
    data = tree.to_dict()
    data["active"] = active.tolist()
    return Tree.from_dict(data), set(dead.tolist()), X, y


def node_trace(fig_dict):
    traces = [t for t in fig_dict["data"] if t.get("name") == NODE_TRACE_NAME]
    assert len(traces) == 1
    assert fig_dict["data"].index(traces[0]) == fig_dict["layout"]["meta"]["node_trace"]
    return traces[0]


def node_ids(trace):
    return [int(row[0]) for row in trace["customdata"]]


def edge_children(fig_dict, trace, pos_to_node):
    """Child node of each segment [parent, child, None] of a line trace."""
    xs, ys = trace["x"], trace["y"]
    out = []
    for i in range(0, len(xs), 3):
        out.append(pos_to_node[(round(xs[i + 1], 9), round(ys[i + 1], 9))])
    return out


def edge_traces(fig_dict):
    return [fig_dict["data"][i] for i in fig_dict["layout"]["meta"]["edge_traces"]]


# --------------------------------------------------------------------------- required test (a)


def test_breast_cancer_depth6_counts_match_sklearn(cancer):
    est, tree, X, y = cancer
    assert tree.max_depth == 6
    d = tree_figure(tree, X=X, y=y).to_dict()
    nt = node_trace(d)
    assert len(nt["x"]) == len(nt["y"]) == tree.n_nodes
    ids = node_ids(nt)
    assert sorted(ids) == list(range(tree.n_nodes))
    ys = np.asarray(nt["y"])
    assert sorted(set((-ys).tolist())) == list(range(7))  # 7 levels
    assert np.array_equal(-ys, tree.node_depth[ids])
    sk_counts = est.estimator_.tree_.n_node_samples
    counts = [row[2] for row in nt["customdata"]]
    assert counts == [int(sk_counts[v]) for v in ids]
    for v, text in zip(ids, nt["hovertext"]):
        assert f"samples: {sk_counts[v]:,}" in text
    assert [row[1] for row in nt["customdata"]] == tree.node_depth[ids].tolist()


def test_positions_match_the_layout(cancer):
    _, tree, X, y = cancer
    d = tree_figure(tree, X=X, y=y).to_dict()
    nt = node_trace(d)
    pos = tidy_layout(tree)
    for v, x, yy in zip(node_ids(nt), nt["x"], nt["y"]):
        assert (x, yy) == pytest.approx(pos[v])


def test_hover_shows_rule_prediction_and_class_counts(cancer):
    _, tree, X, y = cancer
    d = tree_figure(tree, X=X, y=y).to_dict()
    nt = node_trace(d)
    assert "%{customdata[0]}" in nt["hovertemplate"] and "depth %{customdata[1]}" in nt["hovertemplate"]
    hover = dict(zip(node_ids(nt), nt["hovertext"]))
    stats = tree.node_stats(X, y)
    for v in range(tree.n_nodes):
        if tree.is_leaf[v]:
            k = int(np.argmax(tree.leaf_value[v]))
            assert f"predicts <b>{tree.output_names[k]}</b>" in hover[v]
        else:
            assert plot_text(node_rule(tree, v)) in hover[v]  # as Plotly text: '>' is '&gt;'
        for k in np.flatnonzero(stats.class_counts[v]):
            assert f"{tree.output_names[k]}: {int(stats.class_counts[v, k]):,}" in hover[v]
    assert "0: 212" in hover[0] and "1: 357" in hover[0]


def test_class_colours_are_majority_classes(cancer):
    _, tree, X, y = cancer
    nt = node_trace(tree_figure(tree, X=X, y=y).to_dict())
    stats = tree.node_stats(X, y)
    for v, col in zip(node_ids(nt), nt["marker"]["color"]):
        assert col == class_color(int(np.argmax(stats.class_counts[v])))


# --------------------------------------------------------------------------- edges


def test_edge_widths_increase_with_sample_counts(cancer):
    _, tree, X, y = cancer
    d = tree_figure(tree, X=X, y=y).to_dict()
    nt = node_trace(d)
    pos_to_node = {(round(x, 9), round(yy, 9)): v for v, x, yy in zip(node_ids(nt), nt["x"], nt["y"])}
    traces = edge_traces(d)
    assert 1 <= len(traces) <= 8
    width_of = {}
    for t in traces:
        assert t["mode"] == "lines" and t["hoverinfo"] == "skip"
        for child in edge_children(d, t, pos_to_node):
            width_of[child] = t["line"]["width"]
    assert set(width_of) == set(range(1, tree.n_nodes))  # every edge drawn exactly once
    counts = tree.node_stats(X, y).count
    kids = sorted(width_of, key=lambda c: counts[c])
    widths = [width_of[c] for c in kids]
    assert all(a <= b for a, b in itertools.pairwise(widths))
    assert widths[-1] > widths[0]


def test_without_data_one_uniform_edge_trace_and_leaf_colours(digits):
    tree, _, _ = digits
    d = tree_figure(tree).to_dict()
    nt = node_trace(d)
    assert len(edge_traces(d)) == 1
    assert all(row[2] is None for row in nt["customdata"])
    for v, col in zip(node_ids(nt), nt["marker"]["color"]):
        expected = class_color(int(np.argmax(tree.leaf_value[v]))) if tree.is_leaf[v] else NEUTRAL
        assert col == expected


# --------------------------------------------------------------------------- pruning


def test_pruned_nodes_dashed(pruned_tree):
    tree, dead, X, y = pruned_tree
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(pruned="dashed")).to_dict()
    nt = node_trace(d)
    assert len(nt["x"]) == tree.n_nodes
    pos_to_node = {(round(x, 9), round(yy, 9)): v for v, x, yy in zip(node_ids(nt), nt["x"], nt["y"])}
    dashed = [t for t in edge_traces(d) if t["line"].get("dash") == "dash"]
    assert len(dashed) == 1
    assert set(edge_children(d, dashed[0], pos_to_node)) == dead
    solid = [t for t in edge_traces(d) if t["line"].get("dash") != "dash"]
    assert not dead & {c for t in solid for c in edge_children(d, t, pos_to_node)}
    for v, col, lc in zip(node_ids(nt), nt["marker"]["color"], nt["marker"]["line"]["color"]):
        if v in dead:  # hollow and grey
            assert col == "white" and lc != "white"
        else:
            assert col != "white"
    assert any(t.get("name", "").startswith("pruned") for t in d["data"])


def test_pruned_nodes_hidden(pruned_tree):
    tree, dead, X, y = pruned_tree
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(pruned="hidden")).to_dict()
    nt = node_trace(d)
    assert set(node_ids(nt)) == set(range(tree.n_nodes)) - dead
    assert not [t for t in edge_traces(d) if t["line"].get("dash") == "dash"]
    assert "hidden" in d["layout"]["title"]["subtitle"]["text"]


def test_active_colouring_has_a_colour_bar(pruned_tree):
    tree, dead, X, y = pruned_tree
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(color_by="active")).to_dict()
    nt = node_trace(d)
    cols = dict(zip(node_ids(nt), nt["marker"]["color"]))
    half = int(tree.children_right[0])
    assert cols[half] != cols[0]  # half active vs fully active
    bars = [t for t in d["data"] if t.get("marker", {}).get("showscale")]
    assert len(bars) == 1 and bars[0]["marker"]["cmin"] == 0 and bars[0]["marker"]["cmax"] == 1
    assert "active: 0.5" in dict(zip(node_ids(nt), nt["hovertext"]))[half]
    assert "pruned" in dict(zip(node_ids(nt), nt["hovertext"]))[min(dead)]


# --------------------------------------------------------------------------- highlight, selection


def test_highlight_follows_the_path(cancer):
    _, tree, X, y = cancer
    path = [int(v) for v in tree.paths(X[:1])[0] if v >= 0]
    options = TreeFigureOptions(highlight=tree.paths(X[:1])[0], selected=path[1])
    d = tree_figure(tree, X=X, y=y, options=options).to_dict()
    hl = [t for t in d["data"] if t.get("name") == "sample path"]
    assert len(hl) == 1
    pos = tidy_layout(tree)
    assert hl[0]["x"] == pytest.approx([pos[v][0] for v in path])
    assert hl[0]["y"] == pytest.approx([pos[v][1] for v in path])
    assert hl[0]["line"]["width"] >= 4
    nt = node_trace(d)
    widths = dict(zip(node_ids(nt), nt["marker"]["line"]["width"]))
    assert all(widths[v] > widths[w] for v in path for w in set(range(tree.n_nodes)) - set(path))
    ring = [t for t in d["data"] if t.get("name") == "selected"]
    assert len(ring) == 1 and (ring[0]["x"][0], ring[0]["y"][0]) == pytest.approx(pos[path[1]])
    assert "customdata" not in ring[0] and "customdata" not in hl[0]


def test_highlight_from_sample_path_steps(cancer):
    _, tree, X, _y = cancer
    steps = [s.node for s in tree.sample_path(X[5])] + [int(tree.apply(X[5:6])[0])]
    d = tree_figure(tree, options=TreeFigureOptions(highlight=steps)).to_dict()
    hl = next(t for t in d["data"] if t.get("name") == "sample path")
    assert len(hl["x"]) == len(steps)


def test_node_from_selection():
    sel = {"points": [{"curve_number": 0, "x": 1}, {"curve_number": 5, "customdata": [7, 2, 30]}],
           "point_indices": [], "box": [], "lasso": []}
    assert node_from_selection(sel) == 7

    class Event:
        selection = sel

    assert node_from_selection(Event()) == 7
    assert node_from_selection({"selection": sel}) == 7
    assert node_from_selection({"points": []}) is None
    assert node_from_selection(None) is None


# --------------------------------------------------------------------------- depth window


def test_depth_window_restricts_nodes(digits):
    tree, X, y = digits
    root = int(tree.children_right[0])
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(root=root, max_levels=2)).to_dict()
    nt = node_trace(d)
    assert sorted(node_ids(nt)) == tree.subtree_nodes(root, 2).tolist()
    assert (nt["x"][0], nt["y"][0]) == (0.0, 0.0)
    sub = d["layout"]["title"]["subtitle"]["text"]
    d0 = tree.node_depth[root]
    assert f"subtree of node {root}" in sub and f"depths {d0}–{d0 + 2}" in sub
    # nodes on the last level whose subtree continues are triangles, with a note in the hover
    for v, sym, text in zip(node_ids(nt), nt["marker"]["symbol"], nt["hovertext"]):
        continues = tree.node_depth[v] == d0 + 2 and not tree.is_leaf[v]
        assert (sym == "triangle-down") == continues
        assert ("more nodes below" in text) == continues
    # edge widths are relative to the window root's samples
    stats = tree.node_stats(X, y)
    assert f"samples: {int(stats.count[root]):,} (100.0% of window)" in nt["hovertext"][0]


def test_whole_tree_title(digits):
    tree, X, y = digits
    d = tree_figure(tree, X=X, y=y).to_dict()
    assert f"all {tree.n_nodes} nodes" in d["layout"]["title"]["subtitle"]["text"]
    assert d["layout"]["dragmode"] == "pan"
    assert d["layout"]["xaxis"]["visible"] is False and d["layout"]["yaxis"]["visible"] is False
    assert "scaleanchor" not in d["layout"]["yaxis"]


def test_bad_window_root(digits):
    tree, _, _ = digits
    with pytest.raises(TreevizError):
        tree_figure(tree, options=TreeFigureOptions(root=tree.n_nodes + 3))


# --------------------------------------------------------------------------- class mix, labels, colour modes


def test_class_mix_bars(cancer):
    _, tree, X, y = cancer
    d = tree_figure(tree, X=X, y=y).to_dict()
    stats = tree.node_stats(X, y)
    expected = int(np.count_nonzero(stats.class_counts[stats.count > 0]))
    shapes = d["layout"]["shapes"]
    assert len(shapes) == expected
    assert {s["fillcolor"] for s in shapes} <= set(CLASS_PALETTE)
    # each node's bar spans 0.7 of the sibling separation
    root_bars = [s for s in shapes if s["yanchor"] == 0]
    assert sum(s["x1"] - s["x0"] for s in root_bars) == pytest.approx(0.7)
    assert not tree_figure(tree, X=X, y=y, options=TreeFigureOptions(show_mix=False)).to_dict()["layout"].get("shapes")


def test_no_mix_bars_for_large_trees():
    X, y = load_digits(return_X_y=True)
    tree = CARTClassifier().fit(X, y).to_tree()
    assert tree.n_nodes > 100
    d = tree_figure(tree, X=X, y=y).to_dict()
    assert not d["layout"].get("shapes")
    assert not d["layout"].get("annotations")  # too many leaves to label
    assert len(node_trace(d)["x"]) == tree.n_nodes
    assert len(edge_traces(d)) <= 8


def test_leaf_labels(digits):
    tree, X, y = digits
    d = tree_figure(tree, X=X, y=y).to_dict()
    labels = [a["text"] for a in d["layout"]["annotations"]]
    assert len(labels) == tree.n_leaves
    assert labels[0] in tree.output_names


def test_class_legend_entries(digits):
    tree, X, y = digits
    d = tree_figure(tree, X=X, y=y).to_dict()
    names = {t["name"] for t in d["data"] if t.get("showlegend") is not False and t["x"] == [None]}
    assert names and names <= set(tree.output_names)


def test_regression_value_colouring():
    X, y = load_diabetes(return_X_y=True)
    tree = CARTRegressor(max_depth=3).fit(X, y).to_tree()
    d = tree_figure(tree, X=X, y=y).to_dict()
    assert d["layout"]["meta"]["color_by"] == "value"
    nt = node_trace(d)
    assert "mean y = " in nt["hovertext"][0]
    bar = next(t for t in d["data"] if t.get("marker", {}).get("showscale"))
    stats = tree.node_stats(X, y)
    assert bar["marker"]["cmin"] == pytest.approx(np.nanmin(stats.value_mean))
    assert bar["marker"]["cmax"] == pytest.approx(np.nanmax(stats.value_mean))
    with pytest.raises(TreevizError):
        tree_figure(tree, options=TreeFigureOptions(color_by="class"))


def test_labels_given_as_class_names(cancer):
    _, tree, X, y = cancer
    names = np.asarray(tree.output_names)[y]
    a = node_trace(tree_figure(tree, X=X, y=y).to_dict())
    b = node_trace(tree_figure(tree, X=X, y=names).to_dict())
    assert a["customdata"] == b["customdata"] and a["hovertext"] == b["hovertext"]


def test_soft_tree_counts(digits):
    tree, X, y = digits
    data = tree.to_dict()
    data["routing"] = "soft"
    soft = Tree.from_dict(data)
    nt = node_trace(tree_figure(soft, X=X, y=y).to_dict())
    assert nt["customdata"][0][2] == len(y)
    assert sum(row[2] for row in nt["customdata"][1:3]) == pytest.approx(len(y))


def test_bad_options(digits):
    tree, _, _ = digits
    with pytest.raises(TreevizError):
        tree_figure(tree, options=TreeFigureOptions(color_by="rainbow"))
    with pytest.raises(TreevizError):
        tree_figure(tree, options=TreeFigureOptions(pruned="gone"))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_plots_import_neither_torch_nor_streamlit():
    code = ("import sys, treeviz.plots, treeviz.readers.layout; "
            "bad = [m for m in ('torch', 'streamlit') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib").Path(__file__)
                                                                       .resolve().parents[2]))
