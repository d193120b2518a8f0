"""The Data page: samples, uploads, and every bad input shown as a sentence with the app usable."""

import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, shown, texts
from tests.bad_inputs import BAD_INPUT_ENV, BAD_INPUTS, FATAL, NOTE_ONLY


def upload(at, filename, data):
    at.radio(key="data.source").set_value("Upload a file").run()
    at.file_uploader(key="data.upload").set_value((filename, data, "application/octet-stream")).run()
    return at


def set_options(at, options):
    if not _has(at, "data.target"):  # the file was refused before its columns were known
        return at
    target = options.get("target")
    box = at.selectbox(key="data.target")
    if target in box.options and box.value != target:
        box.set_value(target).run()
    if "task" in options:
        at.selectbox(key="data.task").set_value(options["task"]).run()
    if options.get("drop_missing_target"):
        at.checkbox(key="data.drop_missing").check().run()
    return at


def _has(at, key):
    try:
        at.selectbox(key=key)
    except KeyError:
        return False
    return True


def sidebar_dataset(at):
    return shown(at.sidebar.markdown[0].value)  # the name as the page shows it (escaped in the Markdown)


def still_usable(at):
    """After a bad upload the app goes on: a sample can be chosen and the Train page opens."""
    at.radio(key="data.source").set_value("Sample dataset").run()
    at.selectbox(key="data.sample").set_value("wine").run()
    assert_clean(at)
    assert at.metric[0].value == "178"
    at.switch_page("app_pages/train.py").run()
    assert_clean(at)
    assert texts(at.title) == ["Train"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_every_bad_input_gets_a_sentence_and_the_app_stays_usable(home, monkeypatch, name):
    for key, value in BAD_INPUT_ENV.get(name, {}).items():
        monkeypatch.setenv(key, value)
    filename, data, options, expected = BAD_INPUTS[name]
    at = new_app().run()
    before = sidebar_dataset(at)
    if name == "missing_target_column":
        # the target chosen for a previous file is remembered by name; this file lacks it
        good = "a,b,label\n" + "".join(f"{i},{i % 3},{'x' if i % 2 else 'z'}\n" for i in range(20))
        upload(at, "first.csv", good.encode())
        at.selectbox(key="data.target").set_value("label").run()
        assert_clean(at)
        before = sidebar_dataset(at)
        upload(at, filename, data)
    else:
        upload(at, filename, data)
        set_options(at, options)
    assert not at.exception
    shown = texts(at.error) + texts(at.warning) + texts(at.info)
    assert all("Traceback" not in m and "Exception" not in m for m in shown)
    if name in FATAL:
        messages = texts(at.error) + (texts(at.warning) if name == "missing_target_column" else [])
        assert any(expected in m for m in messages), (expected, shown)
        if name != "missing_target_column" and set(options) == {"target"}:
            assert sidebar_dataset(at) == before, "a rejected file must not replace the dataset"
    else:
        assert name in NOTE_ONLY
        assert not at.error, texts(at.error)
        assert any(expected in m for m in texts(at.info)), (expected, shown)
        assert filename in sidebar_dataset(at)
    still_usable(at)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_sample_datasets_and_their_figures(home):
    at = new_app().run()
    assert_clean(at)
    assert "iris" in at.sidebar.markdown[0].value
    at.selectbox(key="data.sample").set_value("digits").run()
    assert_clean(at)
    titles = [s["layout"]["title"]["text"] for s in chart_specs(at)]
    assert "Rows per class" in titles and "Sample images" in titles
    at.selectbox(key="data.sample").set_value("diabetes").run()
    assert_clean(at)
    assert any("Distribution of" in s["layout"]["title"]["text"] for s in chart_specs(at))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_uploaded_csv_is_used_and_saved(home):
    from pathlib import Path

    data = (Path(__file__).resolve().parents[2] / "sample_data" / "penguins.csv").read_bytes()
    at = upload(new_app().run(), "penguins.csv", data)
    assert_clean(at)
    assert at.selectbox(key="data.target").value == "species"
    assert "penguins.csv" in sidebar_dataset(at)
    assert any("Using penguins.csv" in s for s in texts(at.success))
    # the upload is kept in the store and can be reopened as a saved dataset
    at.radio(key="data.source").set_value("Saved dataset").run()
    assert_clean(at)
    assert "penguins.csv" in at.selectbox(key="data.saved").format_func(at.selectbox(key="data.saved").value)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_preprocessing_choices_are_kept(home):
    at = new_app().run()
    at.selectbox(key="data.scaling").set_value("quantile").run()
    at.slider(key="data.test_size").set_value(0.3).run()
    assert_clean(at)
    assert at.session_state["treeviz.prep"].scaling == "quantile"
    assert at.session_state["treeviz.prep"].test_size == 0.3
    # leaving the page and coming back keeps the choices
    at.switch_page("app_pages/train.py").run()
    at.switch_page("app_pages/data.py").run()
    assert at.selectbox(key="data.scaling").value == "quantile"
