"""Long jobs in the browser: a minutes-long setting is warned about before training, the running job
shows the time left, and Cancel shows that the stop was heard ("cancelling…"), then "cancelled"
once the fit stops, without any further click.

No check is timed: each waits for a state, with the generous limits of ``tests/e2e/conftest.py``."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TRAINING_MS
from tests.e2e.test_browser import choose, open_train_page_on_breast_cancer, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

TIME_LEFT = re.compile(r"about \d+(\.\d)? (s|min|h) left")
CANCEL_SHOWN = re.compile(r"cancelling…|Training was cancelled")


@pytest.mark.deep(covered_by="tests/app/test_long_jobs_page.py::test_the_train_page_shows_the_time_left_then_cancelling_then_cancelled")
def test_a_long_dgt_training_warns_shows_its_time_left_and_cancels_at_once(app_url, page):
    open_train_page_on_breast_cancer(page, app_url)
    choose(page, "Model family", "DGT (quantised gradient descent)")
    choose(page, "Preset", "paper (h = 6, L = 3)")  # three layers: tens of milliseconds a step
    settle(page)
    epochs = page.get_by_label("max epochs", exact=True)
    # while Streamlit redraws the form after the preset, the old input can linger beside the new one
    expect(epochs).to_have_count(1)
    epochs.fill("2000")  # minutes of epochs: the page must say so before training
    epochs.press("Enter")
    settle(page)
    warning = page.get_by_text(re.compile(r"DGT \(quantised gradient descent\) with these settings may take about"))
    warning.wait_for()
    assert "rough estimate" in warning.inner_text() and "'max epochs'" in warning.inner_text()

    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_role("heading", name="DGT (quantised gradient descent) on breast_cancer").wait_for()
    bar = page.get_by_test_id("stProgress").first
    expect(bar).to_contain_text(TIME_LEFT)  # a few epochs in, the estimate appears
    assert "running" in bar.inner_text()

    page.get_by_role("button", name="Cancel", exact=True).click()
    # the page shows the stop was heard (or already done); that the click's own rerun shows it, with
    # no wait for a poll, is tests/app/test_long_jobs_page.py's check
    expect(page.get_by_text(CANCEL_SHOWN).first).to_be_visible()
    # and the end, with no further click: the panel keeps polling until the worker stopped
    page.get_by_text(re.compile(r"Training was cancelled")).first.wait_for(timeout=TRAINING_MS)
    expect(page.get_by_role("button", name="Cancel", exact=True)).to_have_count(0)
    expect(page.get_by_text("cancelling…")).to_have_count(0)


@pytest.mark.deep(covered_by="tests/app/test_long_jobs_page.py::test_the_train_page_warns_before_the_tree_embedding_defaults_on_digits")
def test_the_tree_embedding_defaults_on_digits_are_warned_about_and_the_quick_preset_is_not(app_url, page):
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    choose(page, "Sample dataset", "Handwritten digits")
    page.get_by_test_id("stSidebar").get_by_text("Dataset: digits").wait_for()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
    page.get_by_role("heading", name="Train", exact=True).wait_for()
    choose(page, "Model family", "Tree embedding (t-SNE")  # a "/" in the name upsets playwright's regex
    warning = page.get_by_text(re.compile(r"Tree embedding \(t-SNE / EE\) with these settings may take about \d+ min"))
    warning.wait_for()
    assert "'quick' preset" in warning.inner_text()
    choose(page, "Preset", "quick")
    expect(page.get_by_text(re.compile(r"with these settings may take"))).to_have_count(0)
