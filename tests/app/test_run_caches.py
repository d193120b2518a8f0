"""What the app caches per run follows the run's files, not its id alone; and a page rerun reads each
run record at most once, none when nothing changed.

A run deleted and another imported under its id (the same server process) must show the new model:
every cache of a run is keyed by the identity of its files (``state.run_identity``).
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from tests.app.conftest import assert_clean, new_app, open_page
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore
from treeviz.ui import state


def with_run_id(archive: bytes, run_id: str) -> bytes:
    """The run zip ``archive`` with its run.json naming ``run_id`` (another run's id)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "run.json":
                record = json.loads(data)
                record["run_id"] = run_id
                data = json.dumps(record).encode()
            dst.writestr(info, data)
    return out.getvalue()


def shown_nodes(at) -> str:
    return next(m.value for m in at.metric if m.label == "Nodes")


@pytest.mark.slow  # several app reruns and an import: seconds
def test_a_run_imported_under_a_deleted_runs_id_shows_its_own_model(home):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    old = train_run("cart", "classification", {"max_depth": 1}, iris, store=store, name="small")
    new = train_run("cart", "classification", {"max_depth": 4}, iris, store=store, name="large")
    assert old.n_nodes != new.n_nodes
    archive = with_run_id(export_zip(store, new.run_id), old.run_id)
    at = new_app().run()
    at.session_state[state.RUN_ID] = old.run_id
    open_page(at, "explorer")
    assert_clean(at)
    assert shown_nodes(at) == str(old.n_nodes)  # the old model is now in every cache
    open_page(at, "runs")
    at.selectbox(key="runs.chosen").set_value(old.run_id).run()
    at.checkbox(key=f"runs.confirm.{old.run_id}").check().run()
    at.button(key="runs.delete").click().run()
    assert_clean(at)
    at.file_uploader(key="runs.import").set_value(("large.zip", archive, "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert_clean(at)
    imported = RunStore(home).get(old.run_id)  # the deleted run's id, now another model
    assert imported.n_nodes == new.n_nodes
    assert at.session_state[state.RUN_ID] == old.run_id
    open_page(at, "explorer")
    assert_clean(at)
    assert shown_nodes(at) == str(new.n_nodes)


def test_view_results_of_a_deleted_run_are_dropped(home):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    run = train_run("cart", "classification", {"max_depth": 1}, iris, store=store)
    results = state.view_results()
    results[f"semi:{run.run_id}"] = "a result of this run"
    results["other:not a run"] = "kept"
    assert state.view_results()[f"semi:{run.run_id}"] == "a result of this run"
    store.delete(run.run_id)
    assert f"semi:{run.run_id}" not in state.view_results()
    assert state.view_results()["other:not a run"] == "kept"


@pytest.mark.slow  # a λ path and a few app reruns: seconds
@pytest.mark.parametrize("page", ["runs", "compare", "lambda_path", "explorer"])
def test_a_page_rerun_parses_each_run_record_at_most_once(home, parsed, page):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    for depth in (1, 2, 3):
        train_run("cart", "classification", {"max_depth": depth}, iris, store=store)
    run_sweep("tao", "classification", {"depth": 2, "max_iter": 2}, iris, [0.01, 1.0], store=store)
    ids = {r.run_id for r in store.list()}
    at = new_app()
    parsed.clear()
    at.run()
    open_page(at, page)
    assert_clean(at)
    assert at.get("plotly_chart")  # the page shows its runs (the λ path page: the path's figure)
    assert sorted(parsed) == sorted(ids)  # the first reruns: each record once, in all
    parsed.clear()
    at.run()
    assert parsed == []  # nothing changed: nothing parsed
    added = train_run("cart", "classification", {"max_depth": 4}, iris, store=store, name="added")
    store.rename(min(ids), "renamed")
    parsed.clear()
    at.run()
    assert_clean(at)
    assert sorted(parsed) == sorted([added.run_id, min(ids)])  # only what changed, once each
