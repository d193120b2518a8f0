"""Small things in the browser: the upload widget states treeviz's own limit, every download of a
run is named in one style, and a PDF of a figure carries the figure's name as its title."""

import re

import pytest

from tests.e2e.test_browser import settle, train_cart_and_open_explorer
from treeviz.services.data.upload import MAX_UPLOAD_MB

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

STYLE = re.compile(r"^[a-z0-9.-]+(_[a-z0-9.-]+)*\.[a-z]+$")  # export_name's style: lower case, dashes, "_" parts


def download(page, tmp_path, button):
    # a download button reruns the script when clicked: a click during the previous one's rerun
    # can land on a button the rerun replaces, and no download comes
    settle(page)
    with page.expect_download() as event:
        button.click()
    path = tmp_path / event.value.suggested_filename
    event.value.save_as(path)
    return path


@pytest.mark.deep(covered_by="tests/app/test_predict_page.py::test_the_upload_widgets_state_the_apps_own_limit")
def test_the_upload_widget_states_the_data_pages_limit(app_url, page):
    page.goto(app_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    page.get_by_text("Upload a file", exact=True).click()
    settle(page)
    dropzone = page.get_by_test_id("stFileUploaderDropzoneInstructions").first
    dropzone.wait_for()
    text = " ".join(dropzone.inner_text().split())
    assert f"{MAX_UPLOAD_MB}MB per file" in text and "1GB" not in text, text


@pytest.mark.deep(covered_by="tests/treeviz/test_small_things.py::test_every_download_name_has_one_style")
def test_downloads_share_one_name_style_and_a_pdf_is_titled(app_url, page, tmp_path):
    train_cart_and_open_explorer(page, app_url)

    page.get_by_test_id("stPopover").first.get_by_role("button").first.click()
    pdf = download(page, tmp_path, page.get_by_role("button", name="PDF", exact=True))
    data = pdf.read_bytes()
    assert STYLE.match(pdf.name) and pdf.name.endswith("_tree.pdf"), pdf.name
    [*_, title] = re.findall(rb"/Title\s*<FEFF([0-9A-F]*)>", data)
    assert bytes.fromhex(title.decode()).decode("utf-16-be").startswith("CART on breast_cancer")
    page.keyboard.press("Escape")

    page.goto(f"{app_url}/runs")  # the Runs page reads the store on disk: a fresh session sees the run
    page.get_by_role("heading", name="Runs", exact=True).wait_for()
    settle(page)
    report = download(page, tmp_path, page.get_by_role("button", name="Download report (.html)"))
    archive = download(page, tmp_path, page.get_by_role("button", name="Download run (.zip)"))
    assert STYLE.match(report.name) and STYLE.match(archive.name), (report.name, archive.name)
    assert report.name.removesuffix("_report.html") == archive.name.removesuffix(".zip")
