"""The grid (λ × depth × seed) on the λ path page: a tiny grid runs as a background job on this
machine, every trial lands in the run store, and the page lists the grid's trials."""

from __future__ import annotations

import time

import pandas as pd

from tests.app.conftest import assert_clean, new_app, open_page
from treeviz.grid import SCHEDULER_ENV, grids
from treeviz.runs import RunStore


def wait_for_grid(at, root, size: int, timeout: float = 180.0):
    """Rerun the page until the grid's ``size`` trials are stored and its table is shown."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if at.error:
            return at
        stored = [r for r in RunStore(root).list() if r.sweep and r.sweep.get("kind") == "grid"]
        if len(stored) >= size and any(s.key == "grid.grid_id" for s in at.selectbox):
            return at.run()
        time.sleep(0.3)
    raise AssertionError("the grid did not finish in time")


def test_a_tiny_grid_runs_from_the_lambda_path_page(home, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "")
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("iris").run()
    open_page(at, "lambda_path")
    assert_clean(at)
    at.selectbox(key="grid.family").set_value("tao").run()
    assert at.text_input(key="grid.scheduler").value == ""  # no $TREEVIZ_DASK_SCHEDULER: run here
    at.text_input(key="grid.lambda.tao").set_value("0.1, 1").run()
    at.text_input(key="grid.depth.tao").set_value("2").run()
    at.text_input(key="grid.seed.tao").set_value("0").run()
    at.button(key="grid.start").click().run()
    wait_for_grid(at, home, 2)
    assert_clean(at)
    (records,) = grids(RunStore(home)).values()
    assert [r.sweep["params"] for r in records] == [{"l1_penalty": 0.1, "depth": 2, "random_state": 0},
                                                    {"l1_penalty": 1.0, "depth": 2, "random_state": 0}]
    assert all(r.family == "tao" and r.params["max_iter"] == 10 for r in records)  # the quick preset's
    table = next(pd.DataFrame(d.value) for d in at.dataframe if "l1_penalty" in pd.DataFrame(d.value).columns)
    assert list(table["run_id"]) == [r.run_id for r in records]
    assert table["test_accuracy"].notna().all()


def test_a_bad_value_or_scheduler_is_a_sentence(home, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://10.0.0.9:8786")
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("iris").run()
    open_page(at, "lambda_path")
    at.selectbox(key="grid.family").set_value("tao").run()
    assert at.text_input(key="grid.scheduler").value == "tcp://10.0.0.9:8786"  # from the environment
    at.text_input(key="grid.depth.tao").set_value("two").run()
    at.button(key="grid.start").click().run()
    assert any("'depth' must be a whole number" in e.value for e in at.error)
    assert RunStore(home).list() == []
