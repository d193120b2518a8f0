"""Two of issue 52's new views in chromium: the Tree explorer's node and leaf browser (the rows of the
training split that reach a leaf, as many as the leaf's count, their images, and the misclassified ones
marked exactly where the model's prediction differs from the truth), and Compare's black-box ceiling
(HistGradientBoosting on the runs' split, the score a HistGradientBoosting trained here on that split with
that seed gets, a reference line in both Pareto plots, never a tree or a run).

The runs are trained before the server starts: CART of depth 3 on digits, and two CART runs on wine
(the group Compare opens on: it has the most runs), a few seconds in all.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect
from sklearn.ensemble import HistGradientBoostingClassifier

from tests.e2e.conftest import ARTIFACTS, DRAWN, TRAINING_MS, serve_store
from tests.e2e.test_browser import settle
from tests.e2e.test_explorer_truth import open_explorer
from tests.e2e.test_views_agree import download, open_page, table_cells
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.run_view import RunView

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

#: Every plotly figure's meta and layout shapes.
FIGURES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(gd => !gd.closest('[data-stale="true"]'))
    .map(gd => ({meta: (gd.layout && gd.layout.meta) || null, shapes: ((gd.layout && gd.layout.shapes) || [])
        .map(s => ({name: s.name || null, y0: s.y0, y1: s.y1, dash: s.line && s.line.dash}))}))"""

#: The node browser's expander is on the page once (while a rerun redraws the page, a second one can show).
ONE_BROWSER = """() => [...document.querySelectorAll('[data-testid=stExpander]')].filter(
    e => e.innerText.includes('Rows that reach this node')).length === 1"""


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("treeviz-home-browser-ceiling")
    store = RunStore(home)
    digits = prepare(load_dataset("digits"), PrepConfig(scaling="standard"))
    train_run("cart", "classification", {"max_depth": 3}, digits, store=store, name="CART digits")
    wine = prepare(load_dataset("wine"), PrepConfig(scaling="standard", seed=2))
    for depth in (2, 3):
        train_run("cart", "classification", {"max_depth": depth}, wine, store=store, name=f"CART wine {depth}")
    return home


@pytest.fixture(scope="module")
def url(home):
    yield from serve_store(home)


def download_rows(page) -> bytes:
    """The node browser's CSV. The file is written when the button is clicked; a click that lands while
    the page redraws can be lost, so click again (up to three times) until the download starts."""
    settle(page)
    button = page.get_by_role("button", name="Download these rows (CSV)")
    for _ in range(2):
        try:
            with page.expect_download(timeout=60_000) as event:
                button.click()
            return event.value.path().read_bytes()
        except PlaywrightTimeout:
            settle(page)
    return download(page, button)


def _run(home, name: str):
    store = RunStore(home)
    [record] = [r for r in store.list() if r.name == name]
    return store, record


def test_the_node_browser_lists_the_rows_of_a_leaf_and_marks_the_misclassified(home, url, page):
    store, record = _run(home, "CART digits")
    model, prepared = store.load_model(record.run_id), store.load_prepared(record.run_id)
    view = RunView.build(model, prepared, "train")
    wrong = np.asarray(model.predict(view.X)).astype(str) != np.asarray(view.labels).astype(str)
    leaf_of = view.tree.apply(view.X)
    # the leaf with the most misclassified training rows: the marks are about something
    leaf = int(max(view.tree.leaves, key=lambda v: int(wrong[leaf_of == v].sum())))
    assert wrong[leaf_of == leaf].any() and not wrong[leaf_of == leaf].all()
    count = int((leaf_of == leaf).sum())

    open_explorer(page, url, "CART digits")
    box = page.get_by_role("spinbutton", name="Selected node")
    box.fill(str(leaf))
    box.press("Enter")
    settle(page)
    page.wait_for_function(ONE_BROWSER)  # the rerun for the new node has replaced the old page
    page.get_by_text("Rows that reach this node", exact=True).click()
    settle(page)
    summary = page.get_by_text(re.compile(rf"train rows reach leaf {leaf}\b")).first
    summary.wait_for()
    listed = int(re.search(r"([\d,]+) train rows reach leaf", summary.inner_text()).group(1).replace(",", ""))
    assert listed == count
    # the node panel says the same, once it shows the leaf (the count as it writes it: "1,258")
    shown = None
    for _ in range(60):
        cells = table_cells(page)
        shown = float(cells[cells.index("train samples") + 1].replace(",", "")) if "train samples" in cells else None
        if shown == count:
            break
        page.wait_for_timeout(1000)
    assert shown == count

    csv = download_rows(page)
    table = pd.read_csv(io.BytesIO(csv), dtype={"true": str, "predicted": str})
    assert len(table) == count
    positions = table["row of the split"].to_numpy()
    assert (leaf_of[positions] == leaf).all()
    assert table["misclassified"].tolist() == (table["predicted"] != table["true"]).tolist()
    assert table["misclassified"].tolist() == wrong[positions].tolist()  # the model's own predictions
    assert table["predicted"].tolist() == np.asarray(model.predict(view.X[positions])).astype(str).tolist()
    assert np.array_equal(table[list(prepared.dataset.feature_names)].to_numpy(),
                          prepared.dataset.X[table["row"].to_numpy()])  # the data's own values

    page.wait_for_function(DRAWN)
    [grid] = [f["meta"] for f in page.evaluate(FIGURES) if f["meta"] and "image_shape" in f["meta"]
              and "wrong" in f["meta"]]
    shown = len(grid["rows"])
    assert shown == min(48, len(table)) and grid["total"] == len(table)
    assert grid["rows"] == table["row"].tolist()[:shown]
    assert grid["wrong"] == table["misclassified"].tolist()[:shown]
    browser = page.get_by_test_id("stExpander").filter(has_text="Rows that reach this node").first
    browser.screenshot(path=str(ARTIFACTS / "node_browser.png"))  # for a person to look at


def test_the_black_box_ceiling_is_a_reference_line_never_a_tree(home, url, page):
    store, record = _run(home, "CART wine 3")
    prepared = store.load_prepared(record.run_id)
    ours = HistGradientBoostingClassifier(random_state=prepared.config.seed).fit(prepared.X_train,
                                                                                 prepared.labels("train"))
    expected = float(np.mean(ours.predict(prepared.X_test) == prepared.labels("test")))

    open_page(page, url, "Compare", "Compare")
    expect(page.get_by_test_id("stSelectbox").filter(has_text="Data set").first.get_by_role("combobox")) \
        .to_have_value(re.compile("wine"))
    page.get_by_role("button", name=re.compile("Train a black-box ceiling")).click()
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text="Reference, not a tree").first
    caption.wait_for(timeout=TRAINING_MS)
    settle(page)
    score = float(re.search(r"test accuracy (\d\.\d+)", caption.inner_text()).group(1))
    assert score == round(expected, 4)

    page.wait_for_function(DRAWN)
    paretos = [f for f in page.evaluate(FIGURES) if f["meta"] and "front" in f["meta"]]
    assert len(paretos) == 2
    for fig in paretos:
        assert fig["meta"]["reference"]["score"] == expected
        [line] = [s for s in fig["shapes"] if s["name"] == "reference"]
        assert line["y0"] == line["y1"] == expected and line["dash"] == "dash"

    # the tree choosers offer the two runs only, and the store holds no new run
    page.get_by_role("heading", name="Two runs side by side").scroll_into_view_if_needed()
    for side in ("Left", "Right"):
        page.get_by_test_id("stSelectbox").filter(has_text=side).first.locator("input").click()
        options = page.get_by_role("option")
        options.first.wait_for()
        labels = [o.inner_text() for o in options.all()]
        page.keyboard.press("Escape")
        assert sorted(label.split(" · ")[0] for label in labels) == ["CART wine 2", "CART wine 3"], labels
    assert sorted(r.name for r in RunStore(home).list()) == ["CART digits", "CART wine 2", "CART wine 3"]
    page.screenshot(path=str(ARTIFACTS / "compare_ceiling.png"), full_page=True)
