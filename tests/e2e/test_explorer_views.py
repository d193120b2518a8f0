"""Issue 52's new Tree explorer views in chromium: a decision node's split histogram (its bars sum to
the node's rows, each side of the threshold to a child's), the highlighted sample's own picture for
an image table, and decision regions over two chosen features whose colour at a grid point is the
model's prediction for that row. Each figure has the page's download menu.

Two small CART runs (iris, digits) are stored before the server starts.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import serve_store
from tests.e2e.test_browser import choose, settle
from tests.e2e.test_figure_defects import open_with_run
from treeviz.plots import style
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.run_view import RunView

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: The figure on screen (not a stale one) whose title starts with the argument, as drawn.
FIGURE = """(start) => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find(g =>
    !g.closest('[data-stale="true"]') && g.querySelector('.main-svg .gtitle')
    && g.querySelector('.gtitle').textContent.startsWith(start));
  if (!gd) return null;
  return {title: gd.querySelector('.gtitle').textContent, subtitle: (gd.layout.title.subtitle || {}).text || '',
          xtitle: gd._fullLayout.xaxis.title.text, colorscale: gd._fullData[0].colorscale || null,
          data: gd.data.map(d => ({type: d.type, name: d.name, x: d.x, y: d.y, z: d.z}))}; }"""

#: The index among the page's download menus of the one drawn right after the figure titled ``start``.
MENU_AFTER = """(start) => { let menus = 0, seen = false;
  for (const e of document.querySelectorAll('[data-testid="stPlotlyChart"], [data-testid="stPopover"]')) {
    if (e.closest('[data-stale="true"]')) continue;
    if (e.dataset.testid === 'stPopover') { if (seen) return menus; menus++; continue; }
    const t = e.querySelector('.gtitle'); seen = !!(t && t.textContent.startsWith(start)); }
  return -1; }"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    home = tmp_path_factory.mktemp("treeviz-home-explorer-views")
    store = RunStore(home)
    views = {}
    for data, name in (("iris", "CART iris"), ("digits", "CART digits")):
        prepared = prepare(load_dataset(data), PrepConfig(seed=0))
        record = train_run("cart", "classification", {"max_depth": 3}, prepared, store=store, name=name)
        model = store.load_model(record.run_id)
        views[name] = {part: RunView.build(model, prepared, part) for part in ("train", "test")}
    return home, views


@pytest.fixture(scope="module")
def url(runs):
    yield from serve_store(runs[0])


def figure(page, start: str) -> dict:
    """Wait for the figure titled ``start...`` and return what it draws."""
    page.wait_for_function(f"({FIGURE})({start!r}) !== null")
    return page.evaluate(FIGURE, start)


def set_number(page, label: str, value: int) -> None:
    box = page.get_by_test_id("stNumberInput").filter(has_text=label).first.locator("input")
    box.fill(str(value))
    box.press("Enter")
    # a click away: else the next click on a select box only takes the focus from the input
    page.get_by_role("heading", name="Tree explorer", exact=True).click()
    settle(page)


def check_split(fig: dict, view: RunView, node: int) -> None:
    """The bars hold every row reaching ``node``; those right of the threshold are its right child's."""
    tree, count = view.tree, view.stats.count
    threshold = float(re.search(r"threshold ([−\-0-9.e]+)\)", fig["xtitle"]).group(1).replace("−", "-"))
    bars = [(x, c) for d in fig["data"] for x, c in zip(d["x"], d["y"], strict=True)]
    assert sum(c for _, c in bars) == count[node]
    assert sum(c for x, c in bars if x > threshold) == count[tree.children_right[node]]
    assert sum(c for x, c in bars if x <= threshold) == count[tree.children_left[node]]
    left, right = int(count[tree.children_left[node]]), int(count[tree.children_right[node]])
    assert f"{int(count[node])} {view.part} rows reach node {node}: {left} go left, {right} go right" in fig["subtitle"]


def split_figure(page, node: int, part: str) -> dict:
    return figure(page, f"Node {node}: how it splits the {part} rows")


def test_a_nodes_split_histogram_counts_its_rows_and_each_childs(url, runs, page, tmp_path):
    views = runs[1]["CART iris"]
    tree = views["train"].tree
    open_with_run(page, url, "Tree explorer", "CART iris")
    check_split(split_figure(page, 0, "train"), views["train"], 0)
    node = int(next(n for n in tree.decision_nodes if n != 0))
    set_number(page, "Selected node", node)
    check_split(split_figure(page, node, "train"), views["train"], node)
    choose(page, "Data for statistics", "test")
    check_split(split_figure(page, node, "test"), views["test"], node)
    # exported with the page's other figures: its own download menu gives the figure's HTML
    menu = page.evaluate(MENU_AFTER, f"Node {node}: how it splits")
    assert menu >= 0
    page.get_by_test_id("stPopover").nth(menu).get_by_role("button").first.click()
    with page.expect_download() as download:
        page.get_by_role("button", name="HTML (interactive, offline)").click()
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    assert path.name.endswith(f"_node-{node}-split.html")
    assert f"Node {node}: how it splits the test rows" in path.read_text(encoding="utf-8")
    page.keyboard.press("Escape")


def check_regions(fig: dict, view: RunView, features: tuple[int, int], held: np.ndarray) -> None:
    """At grid points across the figure, the region's class is the model's prediction for the row
    made of the point's two values and ``held`` elsewhere, and its colour is that class's."""
    heat = fig["data"][0]
    x, y, z = np.asarray(heat["x"]), np.asarray(heat["y"]), np.asarray(heat["z"])
    mean, scale = view.prepared.affine_scaling()
    names = list(view.tree.output_names)
    steps = {round(v, 9): c for v, c in fig["colorscale"][::2]}
    points = [(i, j) for i in range(0, y.size, 7) for j in range(0, x.size, 7)]
    rows = np.repeat(held[None, :], len(points), axis=0)
    for r, (i, j) in enumerate(points):
        rows[r, features[0]] = (x[j] - mean[features[0]]) / scale[features[0]]
        rows[r, features[1]] = (y[i] - mean[features[1]]) / scale[features[1]]
    predicted = [names.index(str(p)) for p in view.model.predict(rows)]
    assert [int(z[i, j]) for i, j in points] == predicted
    assert len(set(predicted)) >= 2  # the grid crosses a boundary
    for code in set(predicted):
        assert steps[round(code / len(names), 9)] == style.class_color(code)


def test_decision_regions_are_the_models_predictions_on_the_grid(url, runs, page):
    view = runs[1]["CART iris"]["train"]
    names = view.tree.feature_names
    open_with_run(page, url, "Tree explorer", "CART iris")
    page.get_by_role("heading", name="Decision regions", exact=True).scroll_into_view_if_needed()
    choose(page, "Feature across", names[2])  # petal length, then petal width: the tree splits both
    choose(page, "Feature up", names[3])
    fig = figure(page, "Decision regions")
    assert "the training rows' median" in fig["subtitle"]
    check_regions(fig, view, (2, 3), np.nanmedian(view.prepared.X_train, axis=0))
    assert fig["data"][0]["type"] == "heatmap" and {d["name"] for d in fig["data"][1:]} <= set(view.tree.output_names)
    # the other features held at the row chosen for the path instead
    set_number(page, "Row of the train split", 7)
    page.get_by_test_id("stRadio").filter(has_text="Other features held at").get_by_text(
        "the row chosen above").click()
    settle(page)
    page.wait_for_function(f"(() => {{ const f = ({FIGURE})('Decision regions'); "
                           "return f && f.subtitle.includes('train row 7'); })()")
    check_regions(figure(page, "Decision regions"), view, (2, 3), view.X[7])


def test_the_highlighted_sample_is_drawn_as_its_image(url, runs, page):
    view = runs[1]["CART digits"]["train"]
    open_with_run(page, url, "Tree explorer", "CART digits")
    page.get_by_test_id("stCheckbox").filter(has_text="Highlight a sample's path").locator("label").click()
    settle(page)
    set_number(page, "Row of the train split", 4)
    expect(page.get_by_role("heading", name="Path of train row 4")).to_be_visible()
    fig = figure(page, "train row 4")
    raw = view.prepared.dataset.X[view.prepared.train_idx[4]].reshape(8, 8)
    np.testing.assert_array_equal(np.asarray(fig["data"][0]["z"]), raw)
    assert f"true {view.true_label(4)}" in fig["subtitle"] and f"predicted {view.predicted_label(4)}" in fig["subtitle"]
    assert page.evaluate(MENU_AFTER, "train row 4") >= 0  # its own download menu
