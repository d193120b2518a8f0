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
    from treeviz.services.runs import RunStore

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
