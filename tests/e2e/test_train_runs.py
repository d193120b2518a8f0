"""Browser checks of the Train and Runs pages: the split's warnings before training, metric cards
after it, a DGT-Bandit run that leaves the page answering, and Rename that says so and updates the
sidebar's run chooser at once (in the rerun of the click, with no later rerun to wait for).

No check here is timed: each waits for a state (``tests/e2e/conftest.py`` sets generous limits)."""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TRAINING_MS
from tests.e2e.test_browser import IDLE, choose, settle

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier


def open_train_page(page, app_url: str, sample: str, dataset_key: str) -> None:
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    choose(page, "Sample dataset", sample)
    page.get_by_test_id("stSidebar").get_by_text(f"Dataset: {dataset_key}").wait_for()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
    page.get_by_role("heading", name="Train", exact=True).wait_for()
    settle(page)


@pytest.mark.deep(covered_by="tests/e2e/test_bandit_freeze.py::test_the_train_page_answers_after_a_bandit_runs_finish")
def test_dgt_bandit_run_leaves_the_train_page_answering(app_url, page):
    """After a DGT-Bandit run the page shows metric cards and still answers its widgets: a run name
    typed in stays in the field after the rerun, and another family can be chosen."""
    open_train_page(page, app_url, "Iris", "iris")
    choose(page, "Model family", "DGT-Bandit")
    choose(page, "Preset", "quick")  # 5 000 rounds: a short job
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as ")).wait_for(timeout=TRAINING_MS)
    # metric cards, not a collapsed JSON
    expect(page.get_by_test_id("stMetric").filter(has_text="Test accuracy")).to_be_visible()
    expect(page.get_by_test_id("stMetric").filter(has_text="Leaves")).to_be_visible()
    # the page answers a widget: a run name typed in shows in the field after the rerun
    name = page.get_by_role("textbox", name="Run name (optional)")
    name.fill("bandit answered")
    name.press("Enter")
    page.wait_for_function(IDLE)
    expect(name).to_have_value("bandit answered")
    choose(page, "Model family", "CART")


@pytest.mark.deep(covered_by="tests/app/test_train_page_truth.py::test_iris_shows_counts_and_no_split_warning")
def test_split_warnings_show_before_training(app_url, page):
    open_train_page(page, app_url, "Iris", "iris")
    expect(page.get_by_text(re.compile(r"Rows per class and split \(3 classes\)"))).to_be_visible()
    expect(page.get_by_role("button", name="Train", exact=True)).to_be_enabled()


@pytest.mark.deep(covered_by="tests/app/test_train_page_truth.py::test_train_page_warns_of_a_split_that_cannot_score")
def test_a_twelve_row_twelve_class_upload_warns_before_training(app_url, page, tmp_path):
    rows = "\n".join(f"{i},{i * 0.5},class{i}" for i in range(12))
    csv = tmp_path / "twelve.csv"
    csv.write_text(f"a,b,label\n{rows}\n")
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settle(page)
    page.get_by_text("Upload a file").click()
    settle(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(csv))
    page.get_by_test_id("stSidebar").get_by_text("Dataset: twelve").wait_for()
    settle(page)
    expect(page.get_by_text(re.compile("absent from the test split")).first).to_be_visible()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Train").click()
    page.get_by_role("heading", name="Train", exact=True).wait_for()
    expect(page.get_by_text(re.compile("single row")).first).to_be_visible()
    expect(page.get_by_text(re.compile("absent from the validation split")).first).to_be_visible()
    expect(page.get_by_role("button", name="Train", exact=True)).to_be_enabled()  # still allowed


@pytest.mark.deep(covered_by="tests/app/test_runs_page_truth.py::test_rename_and_delete_say_so_and_update_the_sidebar")
def test_rename_says_so_and_updates_the_sidebar(app_url, page):
    open_train_page(page, app_url, "Iris", "iris")
    choose(page, "Model family", "CART")
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as ")).wait_for(timeout=TRAINING_MS)
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Runs").click()
    page.get_by_role("heading", name="Runs", exact=True).wait_for()
    settle(page)
    page.get_by_role("button", name="Rename or delete").click()
    box = page.get_by_label("New name")
    box.fill("renamed in the browser")
    box.press("Enter")
    settle(page)
    page.get_by_role("button", name="Rename", exact=True).click()
    expect(page.get_by_text(re.compile(r"Renamed '.*' to 'renamed in the browser'"))).to_be_visible()
    # the sidebar's run chooser, drawn before the page, lists the new name in the same rerun (the
    # page is idle after it: no later rerun could bring the name)
    settle(page)
    page.get_by_test_id("stSidebar").get_by_role("combobox", name="Run", exact=True).click()
    expect(page.get_by_role("option", name=re.compile("renamed in the browser"))).to_be_visible()
