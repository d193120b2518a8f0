"""The Tree explorer's node panel in a real browser: the rule, the top-weight bars, the bias and the
weight image agree (one unit system), the weight images have a scale per node, node ids are drawn.

Two TAO runs are stored before the server starts (breast_cancer and the digits image table); the
test opens each in the explorer, reads the rule text and the figures' data from the DOM, and saves
screenshots to tests/e2e/artifacts/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, serve_store
from tests.e2e.test_browser import pick_sidebar_run, settle
from tests.treeviz.test_node_panel_units import rule_terms
from treeviz.plots import style
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TAO = {"depth": 3, "max_iter": 3}
FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd, i) => ({
    i, type: gd.data && gd.data[0] && gd.data[0].type, meta: gd.layout && gd.layout.meta,
    y: gd.data && gd.data[0] && gd.data[0].y, z: gd.data && gd.data[0] && gd.data[0].z,
    customdata: gd.data && gd.data[0] && gd.data[0].customdata, text: gd.data && gd.data.map(t => t.text),
    names: gd.data && gd.data.map(t => t.name), zmax: gd.data && gd.data.map(t => t.zmax),
    title: JSON.stringify(gd.layout && gd.layout.title)}))"""
BARS_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].some(
    gd => gd.data && gd.data[0] && gd.data[0].type === 'bar' && gd.layout.meta && gd.layout.meta.features)"""
#: One tree diagram is on the page, not counting the previous run's while a rerun replaces it (an
#: element Streamlit marks stale); on a loaded machine it can come after the run's caption and the bars.
TREE_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(
    gd => !gd.closest('[data-stale="true"]') && gd.data && gd.layout && gd.layout.meta
    && gd.layout.meta.node_trace !== undefined && gd.layout.meta.nodes).length === 1"""

#: The grid of every decision node's weight image is drawn.
WEIGHT_GRID_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].some(
    gd => gd.layout && gd.layout.meta && gd.layout.meta.nodes && gd.layout.meta.image_shape)"""


@pytest.fixture(scope="module")
def explorer_url(tmp_path_factory):
    """A server on a private home holding a TAO run on breast_cancer and one on digits."""
    home = tmp_path_factory.mktemp("treeviz-home-explorer")
    store = RunStore(home)
    for key, name in (("breast_cancer", "TAO cancer"), ("digits", "TAO digits")):
        prepared = prepare(load_dataset(key), PrepConfig(scaling="standard"))
        train_run("tao", prepared.dataset.task, TAO, prepared, store=store, name=name)
    yield from serve_store(home)


def open_explorer(page, url: str, run_name: str) -> None:
    page.goto(url)
    nav = page.get_by_test_id("stSidebarNav")
    nav.get_by_role("link", name="Tree explorer").click()
    page.get_by_role("heading", name="Tree explorer", exact=True).wait_for()
    settle(page)
    pick_sidebar_run(page, run_name)
    expect(page.get_by_test_id("stCaptionContainer").filter(has_text=f"{run_name} ·").first).to_be_visible()
    page.get_by_text("Right if").first.wait_for()
    page.wait_for_function(TREE_DRAWN)
    settle(page)


def panel(page) -> tuple[str, dict, list[dict]]:
    """The node's right-branch rule text, its top-weights bar figure, and every figure's data."""
    rule = page.get_by_test_id("stMarkdown").filter(has_text="Right if").first.locator("code").first.inner_text()
    page.get_by_text("Right if").first.scroll_into_view_if_needed()
    page.wait_for_function(BARS_DRAWN)
    page.wait_for_function(TREE_DRAWN)
    figures = page.evaluate(FIGURES)
    bars = next(f for f in figures if f["type"] == "bar" and f["meta"] and "features" in f["meta"])
    return rule, bars, figures


def assert_rule_matches_bars(rule: str, bars: dict) -> list[str]:
    names, const = rule_terms(rule)
    top = list(reversed(bars["y"]))  # plotly draws the first bar at the bottom
    assert names and names == top[: len(names)], (rule, top)
    assert f"bias = {style.fmt_num(const)}" in bars["title"], (rule, bars["title"])
    return top


def test_node_panel_agrees_on_a_tao_run(explorer_url, page):
    open_explorer(page, explorer_url, "TAO cancer")
    rule, bars, figures = panel(page)
    top = assert_rule_matches_bars(rule, bars)
    # the top bar's label is the first feature written in the rule
    assert rule.index(top[0]) == min(rule.index(n) for n in top[:3])
    # the tree diagram writes node ids
    tree = next(f for f in figures if f["names"] and "nodes" in f["names"])
    assert "0" in tree["text"][tree["names"].index("nodes")]
    page.get_by_text("Right if").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "explorer_node_panel_tao.png"), full_page=True)
    # the model's units: the panel follows the switch, still in agreement
    page.get_by_test_id("stCheckbox").filter(has_text="Units: the data's own").first.locator("label").click()
    settle(page)
    code = page.get_by_test_id("stMarkdown").filter(has_text="Right if").first.locator("code").first
    expect(code).not_to_have_text(rule)
    settle(page)
    scaled_rule, scaled_bars, _ = panel(page)
    assert_rule_matches_bars(scaled_rule, scaled_bars)


def test_node_panel_and_weight_images_on_digits(explorer_url, page):
    open_explorer(page, explorer_url, "TAO digits")
    rule, bars, figures = panel(page)
    top = assert_rule_matches_bars(rule, bars)
    image = next(f for f in figures if f["meta"] and f["meta"].get("image_shape") and "node" in f["meta"])
    z = [abs(v) for row in image["z"] for v in row]
    names = [n for row in image["customdata"] for n in row]
    brightest = [names[i] for i in sorted(range(len(z)), key=lambda i: -z[i])[:3]]
    assert brightest == top[:3]
    page.get_by_text("Right if").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "explorer_node_panel_digits.png"), full_page=True)
    # every node's image on its own scale
    page.get_by_text("Weights of all decision nodes").click()
    settle(page)
    page.wait_for_function(WEIGHT_GRID_DRAWN)
    figures = page.evaluate(FIGURES)
    grid = next(f for f in figures if f["meta"] and "nodes" in f["meta"] and f["meta"].get("image_shape"))
    assert len(set(grid["zmax"])) > 1 and grid["meta"]["shared_scale"] is False
    page.locator(".js-plotly-plot").nth(grid["i"]).screenshot(path=str(ARTIFACTS / "weight_images.png"))
