"""Latent trees in a real browser: the explorer shows pruned leaves as pruned with no class, says
the head decides in the diagram and the rules (each rule with its agreement with the model), and
Compare ranks the latent run with its head's weights counted. The SQL download takes a row key.

A latent run (pruned at depth 4 on xor) and a CART run are stored before the server starts;
screenshots go to tests/e2e/artifacts/.
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import ARTIFACTS, WAIT_MS, serve_store
from tests.e2e.test_browser import settle
from tests.e2e.test_explorer_truth import open_explorer
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].map((gd, i) => ({
    i, names: gd.data.map(t => t.name), x: gd.data.map(t => t.x), text: gd.data.map(t => t.text),
    meta: gd.layout.meta || null, annotations: (gd.layout.annotations || []).map(a => a.text),
    subtitle: gd.layout.title && gd.layout.title.subtitle ? gd.layout.title.subtitle.text : ''}))"""

#: Compare's size-vs-accuracy chart holds the latent run's point.
PARETO_DRAWN = """() => [...document.querySelectorAll('.js-plotly-plot')].some(
    gd => gd.data && gd.data.some(t => Array.isArray(t.text) && t.text.includes('Latent xor')))"""


@pytest.fixture(scope="module")
def latent_store(tmp_path_factory):
    home = tmp_path_factory.mktemp("treeviz-home-latent")
    store = RunStore(home)
    prepared = prepare(load_dataset("xor"), PrepConfig(seed=0))
    latent = train_run("latent", "classification", {"depth": 4, "max_epochs": 60, "prune_strength": 5.0},
                       prepared, store=store, name="Latent xor")
    train_run("cart", "classification", {"max_depth": 3}, prepared, store=store, name="CART xor")
    tree = store.load_model(latent.run_id).to_tree()
    pruned = [int(v) for v in tree.leaves if tree.active[v] == 0]
    assert pruned, "the run must prune some leaves for this test to mean anything"
    return home, store, latent, tree, pruned


@pytest.fixture(scope="module")
def latent_url(latent_store):
    yield from serve_store(latent_store[0])


def test_the_explorer_shows_pruned_leaves_and_says_the_head_decides(latent_store, latent_url, page):
    _, _, _, tree, pruned = latent_store
    open_explorer(page, latent_url, "Latent xor")
    expect(page.get_by_text("A head on the inputs and the path through the tree predicts").first).to_be_visible()
    # the diagram of this run (the chart of the run shown before may still be on screen for a moment)
    page.wait_for_function(f"() => ({FIGURES})().some(f => f.subtitle.includes('all {tree.n_nodes} nodes'))")
    figures = page.evaluate(FIGURES)
    diagram = next(f for f in figures if "nodes" in f["names"] and f"all {tree.n_nodes} nodes" in f["subtitle"])
    assert "a head predicts; leaves describe their rows" in diagram["subtitle"]
    labels = diagram["annotations"]
    assert labels.count("pruned") == len(pruned), labels  # one per pruned leaf, and no class on it
    assert len(labels) == tree.n_leaves
    chart = page.locator(".js-plotly-plot").filter(has_text="a head predicts").first
    chart.scroll_into_view_if_needed()
    chart.screenshot(path=str(ARTIFACTS / "explorer_latent_diagram.png"))
    page.get_by_text(f"All {tree.n_leaves} rules").click()
    settle(page)
    text = page.get_by_test_id("stCode").filter(has_text="IF ").first.inner_text()
    assert "THEN class =" not in text
    assert "THEN the head decides (leaf" in text and "[the model predicts this class for" in text
    for leaf in pruned:
        assert f"THEN no class: leaf {leaf} is pruned" in text
    page.screenshot(path=str(ARTIFACTS / "explorer_latent.png"), full_page=True)


def test_compare_counts_the_latent_heads_weights(latent_store, latent_url, page):
    _, _, latent, tree, _ = latent_store
    page.goto(latent_url)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Compare").click()
    page.get_by_role("heading", name=re.compile("Leaderboard")).wait_for()
    settle(page)
    expect(page.get_by_text("a head on top of the tree included").first).to_be_visible()
    # the size-vs-accuracy chart with the latent run's point (on a loaded machine it comes after the others)
    page.wait_for_function(PARETO_DRAWN)
    figures = page.evaluate(FIGURES)
    pareto = next(f for f in figures if any(isinstance(t, list) and "Latent xor" in t for t in f["text"]))
    i = next(k for k, t in enumerate(pareto["text"]) if isinstance(t, list) and "Latent xor" in t)
    x = pareto["x"][i][pareto["text"][i].index("Latent xor")]
    head = tree.meta["head"]["nonzero_weights"]
    assert x == latent.metrics["n_nonzero_weights"] == tree.n_nonzero_weights()
    assert x >= head > 0  # the head's weights are in the size Compare ranks by
    assert latent.metrics["n_decision_nodes"] == int((tree.active[tree.decision_nodes] > 0).sum())  # no pruned
    page.screenshot(path=str(ARTIFACTS / "compare_latent.png"), full_page=True)


def test_the_sql_download_selects_the_row_key_first(latent_url, page, tmp_path):
    open_explorer(page, latent_url, "CART xor")
    page.get_by_text("All ").filter(has_text="rules").first.click()
    settle(page)
    box = page.get_by_test_id("stTextInput").filter(has_text="SQL: row key column").first.locator("input")
    box.fill("row_id")
    box.press("Enter")
    expect(box).to_have_value("row_id")
    # the button holds the file its last rerun wrote: download again until the rerun the key starts
    # has written the new one (or the page's usual limit has passed; the assertion then shows the file)
    body, attempt, deadline = "", 0, time.monotonic() + WAIT_MS / 1000
    while True:
        settle(page)
        with page.expect_download() as info:
            page.get_by_role("button", name="SQL CASE (.sql)").first.click()
        sql = tmp_path / f"tree{attempt}.sql"
        info.value.save_as(sql)
        body = sql.read_text(encoding="utf-8")
        attempt += 1
        if '"row_id"' in body or time.monotonic() > deadline:
            break
        page.wait_for_timeout(500)  # a poll's pause, not a wait for the rerun
    assert re.search(r'SELECT\n  "row_id",\n  CASE', body), body[-400:]
    assert body.rstrip().endswith('FROM "data";')
