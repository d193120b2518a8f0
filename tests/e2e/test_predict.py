"""In chromium: open the Predict page, upload penguins without their species, see the preview and
download the predictions with the rows' id and the class probabilities."""

import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.e2e.conftest import ARTIFACTS, ROOT, serve_store
from tests.e2e.test_browser import choose, settle
from treeviz.services.data import PrepConfig, TableOptions, prepare, read_table, table_to_dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

PENGUINS = ROOT / "sample_data" / "penguins.csv"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A CART run on penguins stored before the server starts, then `streamlit run app.py` on that store
    (as `app_url` does, with this store); yields the URL."""
    home = tmp_path_factory.mktemp("treeviz-home")
    df = read_table(PENGUINS.name, PENGUINS.read_bytes())
    prepared = prepare(table_to_dataset(df, PENGUINS.name, TableOptions(target="species")), PrepConfig())
    train_run("cart", "classification", {"max_depth": 3}, prepared, store=RunStore(home),
                       name="penguin tree")
    yield from serve_store(home)


def test_upload_rows_without_labels_and_download_predictions(served, page, tmp_path):
    url = served
    rows = pd.read_csv(PENGUINS).drop(columns="species").head(25)
    rows.insert(0, "penguin_id", [f"p{i:03d}" for i in range(len(rows))])
    path = tmp_path / "new_penguins.csv"
    rows.to_csv(path, index=False)

    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    more = page.get_by_test_id("stSidebarNavViewButton")  # past twelve pages Streamlit folds the last ones
    if more.count() and "more" in more.inner_text():
        more.click()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Predict").click()
    page.get_by_role("heading", name="Predict", exact=True).wait_for()
    settle(page)
    run_box = page.get_by_test_id("stSelectbox").filter(has_text="Run").first.get_by_role("combobox")
    assert "penguin tree" in run_box.input_value()  # the sidebar's run
    page.locator("input[type=file]").first.set_input_files(str(path))
    page.get_by_text(re.compile(r"25 row\(s\) predicted by penguin tree")).wait_for()
    settle(page)
    id_box = page.get_by_test_id("stSelectbox").filter(has_text="Id column").first.get_by_role("combobox")
    assert id_box.input_value() == "penguin_id"  # named like an id: taken without asking
    page.get_by_test_id("stDataFrame").first.wait_for()
    page.set_viewport_size({"width": 1400, "height": 1500})  # the page's main area scrolls: show it whole
    settle(page)
    assert page.get_by_text("Ignored column(s)").count() == 0  # the id is kept, not ignored
    page.screenshot(path=str(ARTIFACTS / "predict_page.png"), full_page=True)

    with page.expect_download() as download:
        page.get_by_role("button", name="Download the predictions (CSV)").click()
    assert download.value.suggested_filename == "new_penguins_predictions.csv"
    saved = tmp_path / "predictions.csv"
    download.value.save_as(saved)
    table = pd.read_csv(saved)
    classes = ["Adelie", "Chinstrap", "Gentoo"]
    assert list(table.columns) == ["penguin_id", "prediction", *[f"proba_{c}" for c in classes]]
    assert table["penguin_id"].tolist() == rows["penguin_id"].tolist()
    np.testing.assert_allclose(table[[f"proba_{c}" for c in classes]].sum(axis=1), 1.0)
    truth = pd.read_csv(PENGUINS)["species"].head(25)
    assert (table["prediction"] == truth).mean() > 0.8  # a depth-3 tree knows its penguins

    # another id column, chosen by hand, is what the download keeps
    choose(page, "Id column", "island")
    page.get_by_text(re.compile(r"25 row\(s\) predicted")).wait_for()


def _open(page, url: str, name: str) -> None:
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    more = page.get_by_test_id("stSidebarNavViewButton")
    if more.count() and "more" in more.inner_text():
        more.click()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
    page.get_by_role("heading", name=name, exact=True).wait_for()
    settle(page)


def test_a_downloaded_model_predicts_the_raw_file_in_a_fresh_process_as_the_predict_page(served, page, tmp_path):
    """The Runs page's model file, loaded by a fresh Python with no run store, predicts the raw uploaded
    file (penguins with its text columns and gaps) as the Predict page's download does, row for row."""
    url = served
    _open(page, url, "Runs")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download model (.zip)").click()
    model_path = tmp_path / "model.zip"
    download.value.save_as(model_path)

    rows = pd.read_csv(PENGUINS)
    raw = tmp_path / "penguins.csv"
    rows.to_csv(raw, index=False)
    _open(page, url, "Predict")
    page.locator("input[type=file]").first.set_input_files(str(raw))
    page.get_by_text(re.compile(rf"{len(rows)} row\(s\) predicted by penguin tree")).wait_for()
    settle(page)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the predictions (CSV)").click()
    from_page = tmp_path / "page.csv"
    download.value.save_as(from_page)

    work = tmp_path / "elsewhere"
    work.mkdir()
    code = ("import sys, pandas as pd, treeviz as tv\n"
            "m = tv.load_model(sys.argv[1]); rows = pd.read_csv(sys.argv[2])\n"
            "out = pd.DataFrame(m.predict_proba(rows), columns=[f'proba_{c}' for c in m.classes_])\n"
            "out.insert(0, 'prediction', m.predict(rows)); out.to_csv(sys.argv[3], index=False)\n")
    env = {"PYTHONPATH": str(ROOT), "TREEVIZ_HOME": str(tmp_path / "no-store"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", code, str(model_path), str(raw), str(tmp_path / "fresh.csv")],
                          cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    fresh, shown = pd.read_csv(tmp_path / "fresh.csv"), pd.read_csv(from_page)
    assert len(fresh) == len(shown) == len(rows)
    assert fresh["prediction"].tolist() == shown["prediction"].tolist()
    probabilities = [c for c in shown.columns if c.startswith("proba_")]
    np.testing.assert_allclose(fresh[probabilities].to_numpy(), shown[probabilities].to_numpy(), rtol=0, atol=1e-12)
    assert not (tmp_path / "no-store").exists()
