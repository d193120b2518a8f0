"""AppTest helpers. The ``home`` fixture (a private run store and fresh caches per test) lives in
``tests/conftest.py``, so a family's own app tests in ``tests/models/<family>/`` can use it too.

No app test asserts a time: the helpers rerun the page until a state shows (a job ended, a figure
appeared) and give up only after :data:`WAIT_S`, far more than the short trainings here need on a
quiet machine; one run of the app's script may take up to :data:`SCRIPT_S`."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from models.registry import get_family
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.ui.pages import PAGES as PAGE_TABLE
from treeviz.ui.text import WORD_JOINER

APP = str(Path(__file__).resolve().parents[2] / "app.py")
PAGES = {p.key: p.path for p in PAGE_TABLE}  # the app's one pages table
#: Seconds a helper reruns the page waiting for a background job's result before it fails.
WAIT_S = 600.0
#: Seconds one run of the app's script may take (AppTest's limit).
SCRIPT_S = 300


def new_app() -> AppTest:
    return AppTest.from_file(APP, default_timeout=SCRIPT_S)


def open_page(at: AppTest, page: str) -> AppTest:
    return at.switch_page(PAGES[page]).run()


def app_on(page: str, sample: str | None = None) -> AppTest:
    """The app on ``page``, on the built-in data set ``sample`` (the app's default when None), with
    nothing broken."""
    at = new_app().run()
    if sample is not None:
        at.selectbox(key="data.sample").set_value(sample).run()
    open_page(at, page)
    assert_clean(at)
    return at


def run_page(record: RunRecord, page: str) -> AppTest:
    """The app on ``page`` with ``record`` picked in the sidebar, with nothing broken."""
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, page)
    assert_clean(at)
    return at


def stored_run(home: Path, family: str, task: str, sample: str, params: dict) -> RunRecord:
    """A run of ``family`` trained on the built-in data set ``sample`` and stored under ``home``,
    without the app (for a test of what a page shows of such a run)."""
    prepared = prepare(load_dataset(sample), PrepConfig(seed=0))
    return train_run(family, task, params, prepared, store=RunStore(home))


def metric_values(at: AppTest) -> dict[str, str]:
    """The page's metric cards: label -> the value shown."""
    return {m.label: m.value for m in at.metric}


def fill_form(at: AppTest, key: str, family: str, task: str, values: dict) -> AppTest:
    """Type ``values`` into a page's parameter form of ``family`` whose widgets are keyed
    ``{key}.{name}`` (:func:`treeviz.ui.forms.param_form`); None ticks a parameter's "unset" box."""
    spec = get_family(family)
    for name, value in values.items():
        param, widget = spec.param(name, task), f"{key}.{name}"
        if param.optional_label is not None:
            at.checkbox(key=f"{widget}__none").set_value(value is None).run()
            if value is None:
                continue
        if param.kind == "bool":
            at.checkbox(key=widget).set_value(value).run()
        elif param.kind == "text":
            at.text_input(key=widget).set_value(value).run()
        elif param.kind == "choice":
            at.selectbox(key=widget).set_value(value).run()
        else:
            at.number_input(key=widget).set_value(value).run()
    return at


def train_on_page(at: AppTest, home: Path, family: str, task: str, preset: str = "defaults",
                  values: dict | None = None) -> RunRecord:
    """On the Train page: choose ``family`` (which trains for ``task`` on the data set chosen) and
    ``preset``, type ``values`` into the form, train and wait for the job; nothing broken, and the one
    run it stored."""
    at.selectbox(key="train.family").set_value(family).run()
    at.selectbox(key=f"train.preset.{family}").set_value(preset).run()
    fill_form(at, f"train.{family}.{preset}", family, task, values or {})
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    (record,) = RunStore(home).list()
    return record


def shown(markdown: str) -> str:
    """The text a Markdown value shows for what :func:`treeviz.ui.text.md` escaped: its backslash
    escapes read back and its invisible word joiners dropped."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace(WORD_JOINER, "")


def texts(elements) -> list[str]:
    """The text each element shows (names escaped by the page read back, see :func:`shown`)."""
    return [shown(e.value) for e in elements]


def assert_clean(at: AppTest) -> None:
    """No uncaught exception reached the page and no error box is shown."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, texts(at.error)


def wait_for_job(at: AppTest, timeout: float = WAIT_S) -> AppTest:
    """Rerun the page until the training job has ended (success, warning or error shown)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if at.success or at.error or any("cancelled" in w.value for w in at.warning):
            return at
        time.sleep(0.2)
    raise AssertionError("the training job did not finish in time")


def wait_for_sweep(at: AppTest, root: Path, size: int, timeout: float = WAIT_S) -> AppTest:
    """Rerun the λ path page until all ``size`` points of a sweep are stored and shown (or an
    error is shown)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if at.error:
            return at
        stored = [r for r in RunStore(root).list() if r.sweep]
        shown = any(s.key == "pruning.sweep_id" for s in at.selectbox)
        if shown and len(stored) >= size and not any("running" in (p.proto.text or "") for p in at.get("progress")):
            return at.run()
        time.sleep(0.3)
    raise AssertionError("the λ path did not finish in time")


def chart_specs(at: AppTest) -> list[dict]:
    """The plotly figures on the page, as dicts."""
    import json

    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def node_trace(spec: dict) -> dict:
    return next(t for t in spec["data"] if t.get("name") == "nodes")


def figure_with(at: AppTest, key: str) -> dict:
    """The plotly figure on the page whose layout ``meta`` has ``key``."""
    return next(s for s in chart_specs(at) if key in s["layout"].get("meta", {}))


def wait_for_figure(at: AppTest, key: str, timeout: float = WAIT_S) -> AppTest:
    """Rerun the page until a figure whose layout ``meta`` has ``key`` is shown (a view page's
    background job has ended), or an error is."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if at.error or any(key in s["layout"].get("meta", {}) for s in chart_specs(at)):
            return at
        time.sleep(0.5)
        at.run()
    raise AssertionError(f"no figure with {key!r} appeared in time")


@pytest.fixture
def downloads(monkeypatch):
    """The bytes of every file a page hands to a download button, by file name (AppTest keeps only
    the button, whose file lives in a media store that goes with the script run)."""
    files: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        if filename:
            files[filename] = path_or_data.encode() if isinstance(path_or_data, str) else bytes(path_or_data)
        return original(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    return files
