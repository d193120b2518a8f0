"""The explorer's node panel reads its rule, bias, bars and weight image from one tree, in one unit system.

A TAO node on breast_cancer once showed its rule in the data's own units ("146.6·x4 − 121.6·x17 …
+ 49.52") beside bars in the model's scaled units (no x4 in the top 10, bias −2.064); on digits the
image (data units) and the bars (scaled) led with different pixels. These tests build what the page
builds (:func:`treeviz.plots.node_info.node_panel` on ``RunView.rules_tree``) and check the pieces agree.
"""

import json
import re

import numpy as np
import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, open_page, texts
from tests.treeviz.test_tree import small_tree
from treeviz.plots import style, tree_figure
from treeviz.plots.node_info import node_panel
from treeviz.plots.weights import weight_images_grid
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.export import ALL_TERMS
from treeviz.services.views.run_view import RunView

TAO = {"depth": 2, "max_iter": 3}


def rule_terms(rule: str) -> tuple[list[str], float]:
    """The feature names of an oblique rule's terms, in written order, and its constant (0 if none)."""
    body = re.sub(r" (>|≤) 0$", "", rule)
    chunks = re.split(r" (?=[+−] )", body)
    names = [c.split("·", 1)[1] for c in chunks if "·" in c]
    const = [c for c in chunks if "·" not in c and "more)" not in c]
    value = 0.0
    if const:
        sign, number = const[-1].split(" ", 1)
        value = float(number) * (-1.0 if sign == "−" else 1.0)
    return names, value


def trained(key: str):
    prepared = prepare(load_dataset(key), PrepConfig(scaling="standard"))
    model, _ = train_run("tao", prepared.dataset.task, TAO, prepared)
    return RunView.build(model, prepared, "train"), prepared


@pytest.fixture(scope="module")
def cancer():
    return trained("breast_cancer")


@pytest.fixture(scope="module")
def digits():
    return trained("digits")


def assert_panel_agrees(panel, k: int = 4) -> None:
    names, const = rule_terms(node_panel(panel.tree, panel.node, max_terms=ALL_TERMS).right_rule)
    top = [panel.tree.feature_names[j] for j in panel.top_features]
    # the bars top-down are the rule's largest terms, in the same order
    assert names[:k] == top[:k]
    assert rule_terms(panel.right_rule)[0] == top[: len(rule_terms(panel.right_rule)[0])]
    # the bias the bars' subtitle gives is the rule's constant
    assert const == pytest.approx(panel.bias, rel=1e-3)
    title = json.dumps(panel.bars.to_dict()["layout"]["title"], ensure_ascii=False)
    assert f"bias = {style.fmt_num(panel.bias)}" in title


@pytest.mark.slow  # trains a small TAO tree (about a second)
@pytest.mark.parametrize("original_units", [True, False])
def test_panel_rule_bars_and_bias_agree_on_breast_cancer(cancer, original_units):
    view, _ = cancer
    shown = view.rules_tree(original_units)
    for node in shown.decision_nodes:
        assert_panel_agrees(node_panel(shown, int(node)))


@pytest.mark.slow
def test_units_really_differ_so_mixing_them_would_show(cancer):
    view, _ = cancer
    data_units, model_units = node_panel(view.rules_tree(True), 0), node_panel(view.rules_tree(False), 0)
    assert data_units.bias != pytest.approx(model_units.bias)
    assert data_units.top_features != model_units.top_features


@pytest.mark.slow
@pytest.mark.parametrize("original_units", [True, False])
def test_panel_image_brightest_pixels_are_the_top_weights(digits, original_units):
    view, prepared = digits
    shown = view.rules_tree(original_units)
    for node in shown.decision_nodes:
        panel = node_panel(shown, int(node), prepared.dataset.image_shape)
        assert_panel_agrees(panel)
        z = np.abs(np.asarray(panel.image.to_dict()["data"][0]["z"], dtype=float)).reshape(-1)
        brightest = np.argsort(-z, kind="stable")[:5]
        assert brightest.tolist() == panel.top_features[:5]


@pytest.mark.slow
def test_weight_images_scale_per_node_or_shared(digits):
    view, prepared = digits
    tree = view.rules_tree(False)
    per_node = weight_images_grid(tree, prepared.dataset.image_shape).to_dict()
    zmax = [t["zmax"] for t in per_node["data"]]
    assert len(set(zmax)) > 1, "each node has its own scale"
    for t, v in zip(per_node["data"], per_node["layout"]["meta"]["nodes"], strict=True):
        assert t["zmid"] == 0 and t["zmin"] == -t["zmax"]
        assert t["zmax"] == pytest.approx(np.abs(tree.weight[v]).max())
    shared = weight_images_grid(tree, prepared.dataset.image_shape, shared_scale=True).to_dict()
    assert all(t.get("coloraxis") == "coloraxis" and "zmax" not in t for t in shared["data"])
    ca = shared["layout"]["coloraxis"]
    assert ca["cmin"] == -ca["cmax"] and ca["cmax"] == pytest.approx(max(zmax))


@pytest.mark.slow  # an AppTest run of the explorer on a stored TAO run
@pytest.mark.parametrize("units", ["data", "model"])
def test_explorer_page_panel_agrees(home, units):
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(scaling="standard"))
    train_run("tao", prepared.dataset.task, TAO, prepared, store=RunStore(home))
    at = open_page(new_app().run(), "explorer")
    if units == "model":
        at.checkbox(key="explorer.units").uncheck().run()
    assert_clean(at)
    rule = next(m for m in texts(at.markdown) if m.startswith("**Right if**"))
    rule = rule.split("`")[1]
    bars = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("features") is not None
                and s["data"][0].get("type") == "bar")
    top_names = list(reversed(bars["data"][0]["y"]))  # plotly draws the first bar at the bottom
    names, const = rule_terms(rule)
    assert names == top_names[: len(names)]
    assert f"bias = {style.fmt_num(const)}" in json.dumps(bars["layout"]["title"], ensure_ascii=False)


def test_tree_diagram_names_every_node_in_labels_and_hover():
    tree = small_tree()
    d = tree_figure(tree).to_dict()
    nodes = next(t for t in d["data"] if t.get("name") == "nodes")
    ids = [int(c[0]) for c in nodes["customdata"]]
    assert sorted(ids) == list(range(tree.n_nodes))
    assert nodes["text"] == [str(v) for v in ids] and "text" in nodes["mode"]
    assert nodes["hovertemplate"].startswith("<b>node %{customdata[0]}</b>")
