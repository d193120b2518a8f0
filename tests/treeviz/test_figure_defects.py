"""Figure-level checks of the view defects of issue 52 that the figure builders own: titles that
repeat no word, a class legend that names every colour drawn, a path highlight no class has (for
colour-blind eyes too) and a ring that leaves the node's id free, log axes labelled in full
numbers, and a Sankey in tree order with every node labelled. The browser tests in
tests/e2e/test_figure_defects.py check the same on the app's pages."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from models.cart.estimators import CARTClassifier
from models.registry import families
from tests.treeviz.figure_checks import MIN_DELTA_E, branch_code, nearest_class_difference
from treeviz.plots import TreeFigureOptions, class_flow_figure, label_fraction_figure, pareto_figure, style, tree_figure
from treeviz.plots.tree_diagram import RING_GAP, RING_WIDTH, tree_title

# ----------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def digits_tree():
    X, y = load_digits(return_X_y=True)
    return CARTClassifier(max_depth=3, random_state=0).fit(X, y).to_tree(), X, y


def _words(text: str) -> list[str]:
    return [w.strip("·,()").lower() for w in text.split() if w.strip("·,()")]


# ----------------------------------------------------------------------- 1. titles


def test_no_family_title_repeats_a_word():
    for family in families().values():
        for label in (family.short_label, family.label, family.key):
            title = tree_title(label)
            words = _words(title)
            assert len(words) == len(set(words)), title
            assert "tree" in title.lower(), title


@pytest.mark.parametrize(("label", "title"), [
    ("TAO sparse oblique tree", "TAO sparse oblique tree"), ("Latent trees", "Latent trees"),
    ("Tree embedding", "Tree embedding"), ("CART", "CART tree"), ("TAO forest", "TAO forest tree"),
    ("", "Tree"), ("a<b", "a&lt;b tree"),
])
def test_tree_title(label, title):
    assert tree_title(label) == title


def test_the_diagram_title_says_the_family_once(digits_tree):
    tree, X, y = digits_tree
    fig = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(family_label="TAO sparse oblique tree"))
    assert fig.layout.title.text == f"TAO sparse oblique tree · depth {tree.max_depth}"


# ----------------------------------------------------------------------- 2. legend


def _legend_colors(d: dict) -> dict[str, str]:
    return {t["name"]: t["marker"]["color"] for t in d["data"] if t.get("x") == [None]
            and t.get("showlegend") is not False and t.get("marker", {}).get("symbol") == "square"}


def test_the_legend_names_every_class_in_the_bars(digits_tree):
    tree, X, y = digits_tree  # 8 leaves, 10 classes: some classes lead no node, yet show in the bars
    d = tree_figure(tree, X=X, y=y).to_dict()
    legend = _legend_colors(d)
    bar_colors = {s["fillcolor"] for s in d["layout"]["shapes"]}
    node_colors = set(next(t for t in d["data"] if t["name"] == "nodes")["marker"]["color"])
    assert bar_colors | node_colors <= set(legend.values())
    assert sorted(legend) == sorted(tree.output_names)  # every digit reaches some node
    for name, color in legend.items():
        assert color == style.class_color(list(tree.output_names).index(name))


def test_without_bars_the_legend_names_the_node_colours(digits_tree):
    tree, X, y = digits_tree
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(show_mix=False)).to_dict()
    legend = _legend_colors(d)
    node_colors = set(next(t for t in d["data"] if t["name"] == "nodes")["marker"]["color"])
    assert set(legend.values()) == node_colors


# ----------------------------------------------------------------------- 3. highlight and ring


def test_the_highlight_is_no_class_colour_for_any_vision():
    assert style.HIGHLIGHT.upper() not in {c.upper() for c in style.CLASS_PALETTE}
    assert nearest_class_difference(style.HIGHLIGHT) >= MIN_DELTA_E
    assert nearest_class_difference("#FFB000") < MIN_DELTA_E  # the old highlight: class 1's orange


def test_the_path_uses_the_highlight_and_the_ring_stays_clear_of_the_id(digits_tree):
    tree, X, y = digits_tree
    path = tree.paths(X[:1])[0]
    d = tree_figure(tree, X=X, y=y, options=TreeFigureOptions(highlight=path, selected=0)).to_dict()
    line = next(t for t in d["data"] if t["name"] == "sample path")["line"]
    assert line["color"] == style.HIGHLIGHT
    nodes = next(t for t in d["data"] if t["name"] == "nodes")
    ring = next(t for t in d["data"] if t["name"] == "selected")
    msize = nodes["marker"]["size"]
    outer = ring["marker"]["size"] / 2 + ring["marker"]["line"]["width"] / 2
    assert ring["marker"]["size"] == msize + 2 * RING_GAP and ring["marker"]["line"]["width"] == RING_WIDTH
    assert outer == msize / 2 + RING_GAP + RING_WIDTH / 2
    # plotly starts a "top right" text (msize / 2) / 0.8 + 1 px right of and above the marker's
    # centre (measured in chromium: the text box's nearest corner); the ring ends before it for
    # every marker size that has ids written (up to 127 nodes: 9 px and more)
    for size in np.linspace(9, 20, 23):
        assert size / 2 + RING_GAP + RING_WIDTH / 2 < ((size / 2) / 0.8 + 1) * np.sqrt(2) - 1
    assert nodes["textposition"] == "top right"
    names = [t["name"] for t in d["data"]]
    assert names.index("selected") < names.index("nodes")  # under the ids


# ----------------------------------------------------------------------- 7. log axes


def _assert_full_numbers(axis: dict) -> None:
    vals, text = axis["tickvals"], axis["ticktext"]
    assert len(vals) >= 2 and list(vals) == sorted(vals)
    for v, t in zip(vals, text):
        assert float(t.replace(",", "").replace("−", "-")) == pytest.approx(v), (v, t)


@pytest.mark.parametrize(("lo", "hi", "expected"), [
    (3, 80, ["2", "5", "10", "20", "50", "100"]),  # Compare's decision nodes ("5 10 2 5 100 2" before)
    (1, 20, ["0.5", "1", "2", "5", "10", "20", "50"]),  # labelled % on Semi-supervised
    (10, 19200, ["1", "10", "100", "1,000", "10,000", "100,000"]),
    (9, 20, ["7", "10", "20", "30"]),
])
def test_log_ticks_read_as_full_numbers(lo, hi, expected):
    ticks = style.log_axis_ticks([lo, hi])
    assert ticks["ticktext"] == expected
    _assert_full_numbers(ticks)
    assert style.log_axis_ticks([0, -1]) == {}


def test_the_pareto_and_label_curve_axes_use_full_numbers():
    points = [{"size": s, "score": 0.5 + s / 1000, "family": "f", "name": f"r{s}", "front": True}
              for s in (3, 7, 40, 80)]
    d = pareto_figure(points, size_label="decision nodes", score_label="accuracy").to_dict()
    assert d["layout"]["xaxis"]["type"] == "log"
    _assert_full_numbers(d["layout"]["xaxis"])
    rows = [{"method": m, "fraction": f, "error": 0.1, "n_labelled": 3} for m in ("a", "b") for f in (0.01, 0.05, 0.2)]
    d = label_fraction_figure(rows).to_dict()
    _assert_full_numbers(d["layout"]["xaxis"])
    assert {"1", "5", "10", "20"} <= set(d["layout"]["xaxis"]["ticktext"])


# ----------------------------------------------------------------------- 11. Sankey


def test_the_sankey_follows_tree_order_and_labels_every_node():
    X, y = load_digits(return_X_y=True)
    tree = CARTClassifier(max_depth=4, random_state=0).fit(X, y).to_tree()
    d = class_flow_figure(tree, X, y, max_levels=4).to_dict()
    node = d["data"][0]["node"]
    ids = node["customdata"]
    assert node["label"] == [f"node {v}" for v in ids]  # the deepest level's too
    assert node["sort"] == "input" and d["data"][0]["link"]["sort"] == "input"
    depth = [int(tree.node_depth[v]) for v in ids]
    assert depth == sorted(depth) and max(depth) == 4
    for level in range(5):
        column = [i for i, dep in enumerate(depth) if dep == level]
        codes = [branch_code(tree, ids[i]) for i in column]
        assert codes == sorted(codes)  # given in tree order
        ys = [node["y"][i] for i in column]
        assert ys == sorted(ys) and all(0 < v <= 1 for v in ys)  # placed top to bottom in that order
        assert len({node["x"][i] for i in column}) == 1
    xs = [node["x"][depth.index(level)] for level in range(5)]
    assert xs == sorted(xs) and xs[-1] == 1.0
    # the bands leave each node in the order of its children, top first
    link = d["data"][0]["link"]
    for s in set(link["source"]):
        targets = [t for src, t in zip(link["source"], link["target"]) if src == s]
        assert targets == sorted(targets, key=lambda t: branch_code(tree, ids[t]))
