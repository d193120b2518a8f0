"""The grid (λ × depth × seed) on the λ path page: a tiny grid runs as a background job on this
machine, every trial lands in the run store, and the page lists the grid's trials."""

from __future__ import annotations

import socket
import time

import pandas as pd
import pytest
from distributed import LocalCluster

from tests.app.conftest import WAIT_S, assert_clean, new_app, open_page, shown, texts
from treeviz.services.experiments.grid import SCHEDULER_ENV, grids
from treeviz.services.store.runs import RunStore


def wait_for_grid(at, root, size: int, timeout: float = WAIT_S):
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_no_address_field(at) -> None:
    """The grid's only text fields are its values: no place to type a scheduler address."""
    grid_fields = [t.key for t in at.text_input if t.key.startswith("grid.")]
    assert grid_fields and all(k.split(".")[1] in ("lambda", "depth", "seed") for k in grid_fields), grid_fields


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_tiny_grid_runs_from_the_lambda_path_page(home, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "")
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("iris").run()
    open_page(at, "lambda_path")
    assert_clean(at)
    at.selectbox(key="grid.family").set_value("tao").run()
    assert_no_address_field(at)
    assert not any(r.key == "grid.where" for r in at.radio)  # no cluster configured: nothing to choose
    at.text_input(key="grid.lambda.tao").set_value("0.1, 1").run()
    at.text_input(key="grid.depth.tao").set_value("2").run()
    at.text_input(key="grid.seed.tao").set_value("0").run()
    for key in ("grid.scheduler", "grid.address", "grid.where"):  # what a crafted session could send
        at.session_state[key] = f"tcp://127.0.0.1:{free_port()}"
    at.button(key="grid.start").click().run()
    wait_for_grid(at, home, 2)
    assert_clean(at)
    (records,) = grids(RunStore(home)).values()
    assert {r.sweep["where"] for r in records} == {"local"}
    assert [r.sweep["params"] for r in records] == [{"l1_penalty": 0.1, "depth": 2, "random_state": 0},
                                                    {"l1_penalty": 1.0, "depth": 2, "random_state": 0}]
    assert all(r.family == "tao" and r.params["max_iter"] == 20 for r in records)  # the family's default
    table = next(pd.DataFrame(d.value) for d in at.dataframe if "l1_penalty" in pd.DataFrame(d.value).columns)
    assert list(table["run_id"]) == [r.run_id for r in records]
    assert table["test_accuracy"].notna().all()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_bad_value_is_a_sentence(home, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://10.0.0.9:8786")
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("iris").run()
    open_page(at, "lambda_path")
    at.selectbox(key="grid.family").set_value("tao").run()
    assert_no_address_field(at)
    where = at.radio(key="grid.where")  # the configured cluster, shown read-only, or this machine
    assert where.value == "cluster" and "tcp://10.0.0.9:8786" in shown(where.format_func("cluster"))
    at.text_input(key="grid.depth.tao").set_value("two").run()
    at.button(key="grid.start").click().run()
    assert any("'depth' must be a whole number" in e for e in texts(at.error))
    assert RunStore(home).list() == []


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_malformed_configured_scheduler_is_a_sentence_and_the_grid_runs_here(home, monkeypatch):
    monkeypatch.setenv(SCHEDULER_ENV, "notaurl")
    at = new_app().run()
    open_page(at, "lambda_path")
    assert texts(at.error) == ["'notaurl' is not a Dask scheduler address; write it as tcp://HOST:PORT, "
                                           "for example tcp://127.0.0.1:8786."]
    assert not any(r.key == "grid.where" for r in at.radio)


@pytest.mark.slow
def test_the_grid_runs_on_the_configured_cluster_whatever_the_session_holds(home, monkeypatch):
    # a cluster in this process (threads, over TCP on loopback), which the app's job process reaches
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        monkeypatch.setenv(SCHEDULER_ENV, cluster.scheduler_address)
        at = new_app().run()
        at.selectbox(key="data.sample").set_value("iris").run()
        open_page(at, "lambda_path")
        at.selectbox(key="grid.family").set_value("tao").run()
        at.text_input(key="grid.lambda.tao").set_value("1").run()
        at.text_input(key="grid.depth.tao").set_value("2").run()
        at.text_input(key="grid.seed.tao").set_value("0").run()
        at.session_state["grid.scheduler"] = f"tcp://127.0.0.1:{free_port()}"  # the old address field's key
        at.button(key="grid.start").click().run()
        wait_for_grid(at, home, 1)
        assert_clean(at)
    (records,) = grids(RunStore(home)).values()
    assert [r.sweep["where"] for r in records] == [cluster.scheduler_address]
