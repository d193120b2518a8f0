"""Open the app in Debian's chromium, pick a sample dataset, train CART, see the tree."""

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.conftest import IDLE, TRAINING_MS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier




def settle(page) -> None:
    """Wait until the app's script is not running (a click during a rerun can land on an element that
    the rerun then replaces, and the click is lost). The short pause lets the rerun an action
    started begin; it is no wait for work: the wait for the app to be idle has the page's generous
    limit, and every test then waits for the state it expects."""
    page.wait_for_timeout(250)
    page.wait_for_function(IDLE)


#: Milliseconds an opened selectbox gets to list the option before it is opened again.
OPTION_MS = 15_000


def pick(page, box, option, typed: str | None = None) -> None:
    """Open the selectbox ``box`` (a locator), optionally type ``typed`` to filter its list, and
    click the first option whose name matches ``option`` (a pattern or a plain text). A list that
    does not show the option, or whose option a rerun detaches while it is clicked (the list
    closed; a CI run once waited out the page's whole limit on it), is closed and opened again,
    three times at most. A locator finds its element anew at each use, so a box a rerun replaced
    is found again."""
    pattern = option if isinstance(option, re.Pattern) else re.compile(re.escape(option))
    settle(page)
    for attempt in range(3):
        field = box.locator("input")
        field.click()
        if typed:
            field.fill("")  # a retry starts from an empty filter
            field.press_sequentially(typed)
        try:
            page.get_by_role("option", name=pattern).first.click(timeout=OPTION_MS)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            settle(page)
    settle(page)


def choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the Streamlit selectbox labelled ``label`` and wait for the rerun to end."""
    box = page.get_by_test_id("stSelectbox").filter(has_text=label).first
    pick(page, box, option)
    expect(box.get_by_role("combobox")).to_have_value(re.compile(re.escape(option)))


def pick_sidebar_run(page, run_name: str, *, anchored: bool = False) -> None:
    """Pick ``run_name`` in the sidebar's Run box; ``anchored`` matches the whole name, so that
    "CART iris" does not pick an imported "CART iris (2)"."""
    pattern = re.compile(rf"^{re.escape(run_name)}( ·| \[|$)" if anchored else re.escape(run_name))
    pick(page, page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Run").first, pattern)


def open_train_page_on_breast_cancer(page, app_url: str) -> None:
    """Pick the breast-cancer sample on the Data page, then open the Train page."""
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    choose(page, "Sample dataset", "Breast cancer")
    page.get_by_test_id("stSidebar").get_by_text("Dataset: breast_cancer").wait_for()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
    page.get_by_role("heading", name="Train", exact=True).wait_for()


def test_pick_a_sample_train_cart_and_see_the_tree(app_url, page):
    open_train_page_on_breast_cancer(page, app_url)
    settle(page)
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as 'CART on breast_cancer #1'")).wait_for(timeout=TRAINING_MS)

    page.get_by_role("button", name="Open in Tree explorer").click()
    page.get_by_role("heading", name="Tree explorer", exact=True).wait_for()
    plot = page.locator(".js-plotly-plot").first
    plot.wait_for()
    # the node markers of the tree diagram are drawn as SVG points
    points = plot.locator("g.scatterlayer .trace .points path.point")
    points.first.wait_for()
    assert points.count() >= 3
    page.get_by_text("Right if").first.wait_for()  # the node panel, drawn after the diagram

    # clicking a node selects it: the node panel follows the click (Streamlit's on_select)
    node_input = page.get_by_role("spinbutton", name="Selected node")
    assert node_input.input_value() == "0"
    traces = plot.locator("g.scatterlayer g.trace")
    counts = [traces.nth(i).locator("path.point").count() for i in range(traces.count())]
    nodes = traces.nth(counts.index(max(counts))).locator("path.point")
    nodes.nth(1).click(force=True)
    page.wait_for_function(
        "() => { const el = [...document.querySelectorAll('input')].find("
        "i => i.getAttribute('aria-label') === 'Selected node'); return el && el.value !== '0'; }",
    )
    assert node_input.input_value() != "0"


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
@pytest.mark.deep(covered_by="tests/models/skinny/test_app.py::test_train_skinny_trees_then_see_the_selected_features")
def test_train_skinny_trees_and_see_the_features_page(app_url, page):
    open_train_page_on_breast_cancer(page, app_url)
    choose(page, "Model family", "Skinny Trees (feature selection)")
    choose(page, "Preset", "quick")
    settle(page)
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_role("heading", name="Skinny Trees (feature selection) on breast_cancer").wait_for()
    page.get_by_text(re.compile(r"Finished: saved as 'Skinny Trees on breast_cancer")).wait_for(timeout=TRAINING_MS)

    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Features").click()
    page.get_by_role("heading", name="Features", exact=True).wait_for()
    page.get_by_text("Features kept during training").first.wait_for()
    page.get_by_text("Selected features, ranked").first.wait_for()
    assert page.locator(".js-plotly-plot").count() >= 2
    assert page.get_by_test_id("stMetricValue").filter(has_text=re.compile(r"^\d+ / 30$")).count() == 1


def train_cart_and_open_explorer(page, url: str) -> None:
    """Train CART on breast_cancer from the Train page and open the run in the Tree explorer."""
    open_train_page_on_breast_cancer(page, url)
    settle(page)
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as 'CART on breast_cancer")).wait_for(timeout=TRAINING_MS)
    page.get_by_role("button", name="Open in Tree explorer").click()
    page.get_by_role("heading", name="Tree explorer", exact=True).wait_for()
    page.locator(".js-plotly-plot").first.wait_for()
    settle(page)


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_download_a_figure_and_a_run_report(app_url, page, tmp_path):
    train_cart_and_open_explorer(page, app_url)

    # the tree diagram's download menu (the first figure's): standalone HTML and a PNG
    page.get_by_test_id("stPopover").first.get_by_role("button").first.click()
    with page.expect_download() as html_download:
        page.get_by_role("button", name="HTML (interactive, offline)").click()
    html_file = tmp_path / html_download.value.suggested_filename
    html_download.value.save_as(html_file)
    assert html_file.name.startswith("cart-on-breast-cancer") and html_file.name.endswith("_tree.html")
    text = html_file.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<script src=" not in text and "Plotly.newPlot" in text
    with page.expect_download() as png_download:
        page.get_by_role("button", name="PNG", exact=True).click()
    png_file = tmp_path / png_download.value.suggested_filename
    png_download.value.save_as(png_file)
    assert png_file.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    page.keyboard.press("Escape")

    # the run's report from the Runs page
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Runs").click()
    page.get_by_role("heading", name="Runs", exact=True).wait_for()
    settle(page)
    with page.expect_download() as report_download:
        page.get_by_role("button", name="Download report (.html)").click()
    report = tmp_path / report_download.value.suggested_filename
    report_download.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "CART on breast_cancer" in text and int(re.search(r'data-figures="(\d+)"', text)[1]) >= 4


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_the_bandit_page_runs_dgt_bandit_against_the_linear_baseline(app_url, page, tmp_path):
    """The Bandit feedback page in chromium: on wine, DGT-Bandit, the linear baseline and the supervised
    tree run in the background, then the three figures and the final table appear."""
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Bandit feedback").click()
    page.get_by_role("heading", name="Bandit feedback", exact=True).wait_for()
    choose(page, "Data set", "Wine")
    settle(page)
    page.get_by_role("button", name="Start", exact=True).click()
    page.get_by_role("heading", name=re.compile(r"DGT-Bandit on wine")).wait_for(timeout=TRAINING_MS)
    page.get_by_test_id("stDataFrame").first.wait_for(timeout=TRAINING_MS)
    settle(page)
    assert page.locator(".js-plotly-plot").count() >= 3
    page.locator(".js-plotly-plot").nth(1).scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "bandit.png"))
