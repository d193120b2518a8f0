"""Grid sweeps (treeviz.services.experiments.grid): the points, the checks' sentences, a local run, a run on a Dask
LocalCluster that stores the same trials with the same metrics, and the command line's grid command."""

from __future__ import annotations

import os
import socket
import sys
import types

import distributed
import pytest
from distributed import LocalCluster

from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import get_family
from treeviz.cli.main import main
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.grid import (
    SCHEDULER_ENV,
    GridJob,
    check_grid,
    default_scheduler,
    grid_points,
    grid_rows,
    grids,
    parse_values,
    run_grid,
    scheduler_address,
)
from treeviz.services.experiments.sweep import sweeps
from treeviz.services.store.runs import RunStore

#: λ × depth × seed for TAO: 8 small fits on iris.
GRID = {"l1_penalty": [0.01, 1.0], "depth": [2, 3], "random_state": [0, 1]}
BASE = {"max_iter": 5}


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_dataset("iris"), PrepConfig(seed=0))


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster: a scheduler in this process, two one-thread worker processes.

    The workers are spawned, and a spawned process re-runs the parent's ``__main__`` from its file
    when it has no module name. Streamlit's AppTest (the app tests, earlier in a full run) leaves
    its page script, a deleted temporary file, as ``__main__``; the workers then die on start. So
    the cluster starts with a plain ``__main__`` (nothing to re-run) and the original comes back
    afterwards.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        with LocalCluster(host="127.0.0.1", n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as local:
            yield local.scheduler_address
    finally:
        sys.modules["__main__"] = main


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_grid_points_are_the_cartesian_product_in_order():
    points = grid_points({"a": [1, 2], "b": ["x", "y", "z"]})
    assert len(points) == 6
    assert points[:4] == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"}, {"a": 2, "b": "x"}]
    with pytest.raises(TreevizError, match="at least one parameter"):
        grid_points({})
    with pytest.raises(TreevizError, match="no values for 'b'"):
        grid_points({"a": [1], "b": []})
    with pytest.raises(TreevizError, match="at most 1,000"):
        grid_points({"a": list(range(100)), "b": list(range(11))})


def test_values_are_parsed_and_checked_against_the_schema():
    tao = get_family("tao")
    assert parse_values(tao.param("l1_penalty", "classification"), "0.01, 0.1,1, 0.1") == [0.01, 0.1, 1.0]
    assert parse_values(tao.param("depth", "classification"), "auto, 3") == [None, 3]
    assert check_grid(tao, "classification", {"depth": "3,4", "random_state": [0, "1"]}) == \
        {"depth": [3, 4], "random_state": [0, 1]}
    with pytest.raises(TreevizError, match="has no parameter 'max_depth' to vary"):
        check_grid(tao, "classification", {"max_depth": [3]})
    with pytest.raises(TreevizError, match="'depth' must be a whole number"):
        check_grid(tao, "classification", {"depth": "3.5"})
    with pytest.raises(TreevizError, match="no values for 'depth'"):
        check_grid(tao, "classification", {"depth": " , "})
    with pytest.raises(TreevizError, match="at least one parameter"):
        check_grid(tao, "classification", {})


def test_scheduler_addresses(monkeypatch):
    assert scheduler_address("127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    assert scheduler_address(" tcp://h:1 ") == "tcp://h:1"
    assert scheduler_address("TLS://dask.example.org:8786") == "tls://dask.example.org:8786"
    assert scheduler_address("tcp://[::1]:8786") == "tcp://[::1]:8786"
    here = f"inproc://10.0.0.1/{os.getpid()}/1"  # a cluster inside this process
    assert scheduler_address(here) == here
    assert scheduler_address("") is None and scheduler_address(None) is None
    for bad in ("my host:8786", "notaurl", "tcp://h", "tcp://:8786", "tcp://h:0", "tcp://h:65536", "http://h:80",
                "tcp://h:1/x", "h:1:2", "inproc://10.0.0.1/1/1", "x" * 500):
        with pytest.raises(TreevizError, match="is not a Dask scheduler address; write it as tcp://HOST:PORT"):
            scheduler_address(bad)
    monkeypatch.setenv(SCHEDULER_ENV, "10.0.0.5:8786")
    assert default_scheduler() == "tcp://10.0.0.5:8786"
    monkeypatch.setenv(SCHEDULER_ENV, "")
    assert default_scheduler() is None


def test_a_local_grid_stores_one_tagged_run_per_point(tmp_path, prepared):
    store = RunStore(tmp_path)
    grid = {"l1_penalty": [0.1, 1.0], "random_state": [0, 1]}
    result = run_grid("tao", "classification", {**BASE, "depth": 2}, prepared, grid, store=store, n_jobs=1)
    assert result.where == "local" and result.size == 4 and result.names == ("l1_penalty", "random_state")
    assert [t.index for t in result.trials] == [0, 1, 2, 3] and not any(t.error for t in result.trials)
    (records,) = grids(store).values()
    assert [r.run_id for r in records] == [t.run_id for t in result.trials]
    for trial, record in zip(result.trials, records):
        assert record.sweep["kind"] == "grid" and record.sweep["id"] == result.grid_id
        assert record.sweep["params"] == trial.params and record.sweep["size"] == 4
        assert record.params["l1_penalty"] == trial.params["l1_penalty"] and record.params["depth"] == 2
        assert record.params["max_iter"] == 5 and record.params["random_state"] == trial.params["random_state"]
        assert record.sweep["param"] == "l1_penalty" and record.sweep["value"] == trial.params["l1_penalty"]
        assert record.metrics == trial.metrics and "test_accuracy" in record.metrics
        assert record.name.endswith(f"l1_penalty={trial.params['l1_penalty']:g}, "
                                    f"random_state={trial.params['random_state']}")
    rows = grid_rows(records)
    assert [(r["trial"], r["l1_penalty"], r["random_state"]) for r in rows] == \
        [(1, "0.1", "0"), (2, "0.1", "1"), (3, "1", "0"), (4, "1", "1")]
    assert sweeps(store) == {}  # the λ path page lists only λ paths, not grids


def test_without_a_store_trials_keep_their_estimators(prepared):
    result = run_grid("cart", "classification", None, prepared, {"max_depth": [1, 2]}, n_jobs=1)
    assert [t.estimator.to_tree().max_depth for t in result.trials] == [1, 2]
    assert all(t.run_id is None and t.metrics["depth"] == t.params["max_depth"] for t in result.trials)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_an_unreachable_scheduler_is_one_sentence(prepared):
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(TreevizError) as err:
        run_grid("cart", "classification", None, prepared, {"max_depth": [2]}, scheduler=address,
                 connect_timeout=1)
    text = str(err.value)
    assert text.startswith(f"Could not reach the Dask scheduler at {address}: ")
    assert text.endswith("Start one with `dask scheduler`, or run the grid on this machine.")


def test_a_malformed_scheduler_is_refused_before_any_connection(prepared, monkeypatch, capsys, tmp_path):
    def no_connection(*args, **kwargs):
        raise AssertionError("a malformed address must not reach distributed.Client")

    monkeypatch.setattr(distributed, "Client", no_connection)
    with pytest.raises(TreevizError, match=r"^'notaurl' is not a Dask scheduler address"):
        run_grid("cart", "classification", None, prepared, {"max_depth": [2]}, scheduler="notaurl")
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    args = ["grid", "--home", str(tmp_path), "--data", "iris", "--family", "cart", "--grid", "max_depth=2"]
    assert main([*args, "--scheduler", "notaurl"]) == 1
    assert "'notaurl' is not a Dask scheduler address" in capsys.readouterr().err
    assert RunStore(tmp_path).list() == []


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_one_thread_cluster_runs_the_trials_on_its_worker(tmp_path, prepared):
    store = RunStore(tmp_path)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as one:
        result = run_grid("cart", "classification", None, prepared, {"max_depth": [1, 2, 3]}, store=store,
                          scheduler=one.scheduler_address)
    assert [t.error for t in result.trials] == [None, None, None]
    (stored,) = grids(store).values()
    assert [r.params["max_depth"] for r in stored] == [1, 2, 3]
    assert {r.sweep["where"] for r in stored} == {one.scheduler_address}


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_a_grid_on_a_dask_cluster_stores_what_the_local_joblib_run_stores(tmp_path, prepared, cluster):
    on_dask, here = RunStore(tmp_path / "dask"), RunStore(tmp_path / "local")
    seen = []
    remote = run_grid("tao", "classification", BASE, prepared, GRID, store=on_dask, scheduler=cluster,
                      on_trial=seen.append)
    local = run_grid("tao", "classification", BASE, prepared, GRID, store=here, n_jobs=2)
    assert remote.where == cluster and local.where == "local"
    assert sorted(t.index for t in seen) == list(range(8))  # each trial reported as it was stored
    (stored,) = grids(on_dask).values()
    points = grid_points(GRID)
    assert len(stored) == 8 and [r.sweep["params"] for r in stored] == points
    for point, record in zip(points, stored):
        assert record.status == "finished" and record.sweep["where"] == cluster
        assert {k: record.params[k] for k in point} == point and record.params["max_iter"] == 5
        assert on_dask.load_model(record.run_id).get_params()["depth"] == point["depth"]
    (local_runs,) = grids(here).values()
    assert [r.metrics for r in stored] == [r.metrics for r in local_runs]  # same seeds, same models
    assert [(r.n_nodes, r.depth) for r in stored] == [(r.n_nodes, r.depth) for r in local_runs]
    assert [t.metrics for t in remote.trials] == [t.metrics for t in local.trials]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("where", ["local", "dask"])
def test_a_cancel_stops_the_grid_and_keeps_the_trials_stored_before(tmp_path, prepared, where, request):
    scheduler = request.getfixturevalue("cluster") if where == "dask" else None
    store = RunStore(tmp_path)

    def stop(trial):
        raise TrainingCancelled()

    with pytest.raises(TrainingCancelled):
        run_grid("cart", "classification", None, prepared, {"max_depth": [1, 2, 3], "random_state": [0, 1]},
                 store=store, scheduler=scheduler, n_jobs=None if where == "dask" else 2, on_trial=stop)
    (stored,) = store.list()
    assert stored.sweep["kind"] == "grid" and stored.sweep["size"] == 6


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_grid_job_runs_on_the_cluster(tmp_path, prepared, cluster, monkeypatch):
    class Handle:  # a job's progress handle
        cancelled = False

        def __init__(self):
            self.records = []

        def stages(self, n):
            self.n = n

        def begin(self, total):
            self.total = total

        def record(self, values):
            self.records.append(values)

    handle = Handle()
    store = RunStore(tmp_path)
    monkeypatch.setenv(SCHEDULER_ENV, cluster)  # the app's configured cluster
    job = GridJob("cart", "classification", {}, prepared, {"max_depth": [2, 3]}, store, on_cluster=True)
    assert job.scheduler == cluster
    grid_id = job(handle)
    assert handle.total == 2 and sorted(r["max_depth"] for r in handle.records) == [2, 3]
    assert [r.sweep["id"] for r in store.list()] == [grid_id, grid_id]


def test_a_grid_job_takes_no_address_only_the_configured_scheduler(tmp_path, prepared, monkeypatch):
    args = ("cart", "classification", {}, prepared, {"max_depth": [2]}, RunStore(tmp_path))
    with pytest.raises(TypeError):
        GridJob(*args, scheduler="tcp://attacker.example:8786")
    monkeypatch.setenv(SCHEDULER_ENV, "")
    assert GridJob(*args).scheduler is None
    with pytest.raises(TreevizError, match=f"No Dask cluster is configured for this app; .* {SCHEDULER_ENV}"):
        GridJob(*args, on_cluster=True)
    monkeypatch.setenv(SCHEDULER_ENV, "10.0.0.5:8786")
    assert GridJob(*args, on_cluster=True).scheduler == "tcp://10.0.0.5:8786"
    assert GridJob(*args, on_cluster=False).scheduler is None
    with pytest.raises(TreevizError, match="this machine or on the configured Dask cluster"):
        GridJob(*args, on_cluster="tcp://attacker.example:8786")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_command_line_runs_a_grid_here_and_on_the_cluster(tmp_path, capsys, monkeypatch, cluster):
    home = str(tmp_path)
    args = ["grid", "--home", home, "--data", "iris", "--family", "tao", "--param", "max_iter=3",
            "--grid", "l1_penalty=0.1,1", "--grid", "depth=2", "--grid", "random_state=0,1"]
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert main([*args, "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "(4 of 4 trials stored, local;" in out
    assert out.splitlines()[1].split()[:4] == ["trial", "l1_penalty", "depth", "random_state"]
    assert len(out.splitlines()) == 6
    monkeypatch.setenv(SCHEDULER_ENV, cluster)  # the default scheduler
    assert main([*args, "-q"]) == 0
    ids = capsys.readouterr().out.split()
    store = RunStore(home)
    assert len(ids) == 4 and {store.get(i).sweep["where"] for i in ids} == {cluster}
    assert main([*args, "--local", "--json", "--grid", "depth=2"]) == 2  # --grid depth twice
    assert "more than once" in capsys.readouterr().err
    assert main([*args, "--local", "-q", "--jobs", "1", "--grid", "leaf=constant"]) == 0
    assert len(grids(store)) == 3
    assert len(capsys.readouterr().out.split()) == 4


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_command_line_refuses_bad_grids_in_one_sentence(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    base = ["grid", "--home", str(tmp_path), "--data", "iris", "--family", "tao"]
    assert main([*base, "--grid", "nodes=1,2"]) == 1
    assert "has no parameter 'nodes' to vary" in capsys.readouterr().err
    assert main([*base, "--grid", "depth=2", "--param", "depth=3"]) == 1
    assert "conflicts with the grid over depth" in capsys.readouterr().err
    assert main(base) == 2
    assert "--grid" in capsys.readouterr().err
    address = f"127.0.0.1:{free_port()}"
    assert main([*base, "--grid", "depth=2", "--scheduler", "my host"]) == 1
    assert "not a Dask scheduler address" in capsys.readouterr().err
    assert main([*base, "--grid", "depth=2", "--scheduler", address, "--local"]) == 2
    assert RunStore(tmp_path).list() == []
