"""In chromium: the λ path and the Bandit page start from the families' declared defaults, and the
Semi-supervised page's caption under the error curve describes the run on screen, attributing the
thesis's finding to the thesis."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TRAINING_MS
from tests.e2e.test_browser import choose, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier


def open_page(page, app_url: str, title: str) -> None:
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settle(page)  # a click during the first rerun can be lost
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()
    settle(page)


@pytest.mark.deep(covered_by="tests/app/test_page_defaults.py::test_tao_on_the_lambda_path_trains_at_auto_depth_and_20_iterations")
def test_the_lambda_path_trains_tao_at_its_declared_defaults(app_url, page):
    open_page(page, app_url, "Pruning / λ path")
    choose(page, "Model family", "TAO sparse oblique tree")
    page.get_by_text("Other parameters (shared by every point)").click()
    settle(page)
    page.get_by_text("Every parameter starts at the family's defaults").first.wait_for()
    # TAO's declared defaults: depth auto and 20 iterations (the page used to start at 3 and 10)
    expect(page.get_by_role("checkbox", name="depth: auto").first).to_be_checked()
    expect(page.get_by_role("spinbutton", name="max iter").first).to_have_value("20")


@pytest.mark.deep(covered_by="tests/app/test_page_defaults.py::test_the_bandit_page_starts_from_the_declared_defaults")
def test_the_bandit_page_starts_from_the_familys_rounds(app_url, page):
    open_page(page, app_url, "Bandit feedback")
    start_from = page.get_by_test_id("stSelectbox").filter(has_text="Start from").first.get_by_role("combobox")
    expect(start_from).to_have_value(re.compile(re.escape("the family's defaults (as on the Train page)")))
    # the family's 10 passes (at least 20 000 rounds), not the page's own 10 000
    expect(page.get_by_role("checkbox", name="n rounds: 10 passes").first).to_be_checked()


@pytest.mark.deep(covered_by="tests/app/test_captions_truth.py::test_the_caption_says_supervised_tao_is_lower_where_it_is")
def test_the_semi_supervised_caption_describes_the_run(app_url, page):
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    choose(page, "Sample dataset", "Two moons")
    settle(page)  # the data set's rerun must end before the page switch, or the click is lost
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
    page.get_by_role("heading", name="Train", exact=True).wait_for()
    choose(page, "Model family", "LapTAO")
    choose(page, "Preset", "quick, 10 % labelled")
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as 'LapTAO")).wait_for(timeout=TRAINING_MS)
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Semi-supervised").click()
    page.get_by_role("heading", name="Semi-supervised", exact=True).wait_for()
    settle(page)
    page.get_by_role("spinbutton", name="Labelled subsets").fill("1")
    page.keyboard.press("Enter")
    settle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    caption = page.get_by_text(re.compile(r"The thesis reports that the semi-supervised tree beats"))
    caption.first.wait_for(timeout=TRAINING_MS)
    text = caption.first.inner_text()
    assert re.search(r"At 1 % labels the test error is [\d.]+ for LapTAO and [\d.]+ for supervised TAO", text)
    assert re.search(r"on this run LapTAO is lower at \d of 3 labelled fractions", text)
    assert page.get_by_text("The thesis's finding:").count() == 0
