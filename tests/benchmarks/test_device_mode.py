"""The benchmarks' device mode (``python -m benchmarks.report.run --device cuda``), exercised on the CPU:
the runner hands ``device`` only to the benchmarks that take it and refuses CUDA without a GPU,
each torch family's device workloads run (tiny, ``device="cpu"``) and give rows with the expected
keys, and a device run keeps the CPU results already in the JSON (numbers are not asserted)."""

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch

from benchmarks import device_timing
from benchmarks.common import write_results
from benchmarks.report import run
from tests.benchmarks.helpers import without_optional_packages

TORCH_FAMILIES = ("dgt", "latent_pruning", "latent_train", "skinny")
ROOT = Path(__file__).resolve().parents[2]


def test_the_torch_families_have_a_device_mode_and_the_others_do_not():
    assert set(TORCH_FAMILIES) <= set(run.DEVICE_BENCHMARKS) <= set(run.BENCHMARKS)
    assert "cart_tree" not in run.DEVICE_BENCHMARKS and "embeddings" not in run.DEVICE_BENCHMARKS


def test_declares_device_reads_the_run_signature_without_importing(tmp_path):
    cases = {"kw": "def run(quick=False, device='cpu'):\n    pass\n",
             "kwonly": "def run(quick=False, *, device='cpu'):\n    pass\n",
             "varkw": "def run(quick=False, **options):\n    pass\n",
             "plain": "def run(quick=False):\n    pass\n",
             "helper_only": "def helper(device):\n    pass\ndef run(quick=False):\n    pass\n"}
    for stem, body in cases.items():
        (tmp_path / f"{stem}.py").write_text(f"import not_installed_anywhere\nNAME = {stem!r}\n{body}")
    got = {stem: run._declares_device(tmp_path / f"{stem}.py") for stem in cases}
    assert got == {"kw": True, "kwonly": True, "varkw": True, "plain": False, "helper_only": False}
    (tmp_path / "no_name.py").write_text("def run(quick=False, device='cpu'):\n    pass\n")
    assert not run._declares_device(tmp_path / "no_name.py")


def test_run_kwargs_pass_device_only_where_run_accepts_it():
    def with_device(quick=False, device="cpu"):
        pass

    def with_kwargs(quick=False, **kw):
        pass

    def without(quick=False):
        pass

    def positional_only(quick=False, device="cpu", /):
        pass

    assert run.run_kwargs(with_device, True, "cuda") == {"quick": True, "device": "cuda"}
    assert run.run_kwargs(with_kwargs, False, "cuda") == {"quick": False, "device": "cuda"}
    assert run.run_kwargs(without, True, "cuda") == {"quick": True}
    assert run.run_kwargs(positional_only, True, "cuda") == {"quick": True}


@pytest.fixture
def fake_benchmarks(monkeypatch):
    """Two fake benchmarks (one with a device mode), the runner's JSON writer replaced by a recorder."""
    calls, written = [], []

    def dev_run(quick=False, device="cpu"):
        calls.append(("fake_dev", quick, device))
        return {"rows": [{"device": device}], "results": {"device": device}}

    def plain_run(quick=False):
        calls.append(("fake_plain", quick, None))
        return {"rows": [{"a": 1}], "results": {"a": 1}}

    for name, fn in (("fake_dev", dev_run), ("fake_plain", plain_run)):
        monkeypatch.setitem(sys.modules, f"benchmarks.speed.{name}", types.SimpleNamespace(NAME=name, run=fn))
    monkeypatch.setattr(run, "MODULES", {name: run.ROOT / "speed" / f"{name}.py" for name in ("fake_dev",
                                                                                          "fake_plain")})
    monkeypatch.setattr(run, "BENCHMARKS", ("fake_dev", "fake_plain"))
    monkeypatch.setattr(run, "DEVICE_BENCHMARKS", ("fake_dev",))
    monkeypatch.setattr(run, "write_results", lambda name, results, quick: written.append((name, results, quick))
                        or Path(f"/nowhere/{name}.json"))
    return calls, written


def test_runner_passes_the_device_only_to_benchmarks_that_accept_it(fake_benchmarks, capsys):
    calls, written = fake_benchmarks
    assert run.main(["--quick"]) == 0  # default: cpu, every benchmark, as before
    assert calls == [("fake_dev", True, "cpu"), ("fake_plain", True, None)]
    assert [w[0] for w in written] == ["fake_dev", "fake_plain"] and all(w[2] for w in written)
    calls.clear()
    assert run.main(["fake_plain", "fake_dev", "--device", "cpu"]) == 0
    assert calls == [("fake_plain", False, None), ("fake_dev", False, "cpu")]
    assert "no device mode" not in capsys.readouterr().out


def test_runner_with_cuda_runs_only_the_device_benchmarks_unless_named(fake_benchmarks, monkeypatch, capsys):
    calls, written = fake_benchmarks
    monkeypatch.setattr(run.torch.cuda, "is_available", lambda: True)  # a GPU, as far as the runner knows
    assert run.main(["--device", "cuda"]) == 0
    assert calls == [("fake_dev", False, "cuda")] and written[0][1] == {"device": "cuda"}
    out = capsys.readouterr().out
    assert "skipped (CPU only): fake_plain" in out and "== fake_dev (cuda)" in out
    calls.clear()
    assert run.main(["fake_plain", "fake_dev", "--device", "auto", "--quick"]) == 0
    assert calls == [("fake_plain", True, None), ("fake_dev", True, "cuda")]
    out = capsys.readouterr().out
    assert "note: fake_plain has no device mode" in out and "== fake_dev (quick, cuda)" in out


def test_cuda_without_a_gpu_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setattr(run.torch.cuda, "is_available", lambda: False)
    for argv in (["--device", "cuda"], ["dgt", "--device", "cuda", "--quick"]):
        with pytest.raises(SystemExit) as exc:
            run.main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "--device cuda needs a GPU, but torch sees none" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        run.main(["--device", "tpu"])
    assert "invalid choice" in capsys.readouterr().err


def test_auto_without_a_gpu_is_the_usual_cpu_run(fake_benchmarks, monkeypatch):
    calls, _ = fake_benchmarks
    monkeypatch.setattr(run.torch.cuda, "is_available", lambda: False)
    assert run.main(["--device", "auto"]) == 0
    assert calls == [("fake_dev", False, "cpu"), ("fake_plain", False, None)]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("name", TORCH_FAMILIES)
def test_device_workloads_run_on_the_cpu_and_give_rows(name, monkeypatch):
    module = __import__(run.module_name(name), fromlist=["device_workloads"])
    rows = device_timing.time_workloads(module.device_workloads(True, "cpu"), "cpu")
    assert len(rows) >= 2
    for r in rows:
        assert set(device_timing.ROW_KEYS) <= set(r), r["workload"]
        assert r["device"] == "cpu" and r["cpu_s"] > 0 and r["device_s"] > 0 and r["data"]
        assert r["ratio_cpu_over_device"] == pytest.approx(r["cpu_s"] / r["device_s"])
        assert len(r["cpu_rounds_s"]) == len(r["device_rounds_s"]) == r["repeat"] >= 2
        assert r["cpu_threads"] == 1  # quick mode keeps to one thread
        json.dumps(r)  # the row goes into the results JSON as it is
    table = device_timing.table(rows)
    assert {"CPU time", "CPU again time", "CPU / CPU again"} <= set(table[0])


def test_device_functions_refuse_cuda_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device_timing.resolve_device("auto") == "cpu"
    with pytest.raises(ValueError, match="no GPU"):
        device_timing.resolve_device("cuda")
    from benchmarks.paper import latent_pruning
    with pytest.raises(ValueError, match="no GPU"):
        latent_pruning.run(quick=True, device="cuda")


def test_measure_excludes_warm_up_and_times_each_round(monkeypatch):
    calls = []
    rounds = device_timing.measure(lambda: calls.append(1), "cpu", repeat=3, warmup=2)
    assert len(rounds) == 3 and len(calls) == 5 and all(t >= 0 for t in rounds)
    with pytest.raises(ValueError):
        device_timing.measure(lambda: None, "cpu", repeat=0)
    # a slow workload stops adding rounds once they took max_seconds (one round always runs); the
    # clock is a fake one that each call moves on by exactly 0.02 s, so the machine's speed does not count
    now = [0.0]
    monkeypatch.setattr(device_timing, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))

    def slow():
        now[0] += 0.02

    assert len(device_timing.measure(slow, "cpu", repeat=5, warmup=0, max_seconds=0.01)) == 1
    assert len(device_timing.measure(slow, "cpu", repeat=5, warmup=0, max_seconds=0.03)) == 2
    assert device_timing.measure(slow, "cpu", repeat=2, warmup=0) == [pytest.approx(0.02)] * 2


def _one_workload(quick, device):
    def build(dev):
        x = torch.ones(8, device=dev)
        return lambda: x.sum()
    return [("sum of 8", build, {"data": "ones", "repeat": 2})]


def test_device_run_keeps_the_cpu_results_and_a_cpu_run_keeps_the_device_section(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    write_results("fake", {"sizes": {"d6": 1.0}, "rows": [1, 2]}, quick=True)
    cpu_machine = json.loads((tmp_path / "fake.json").read_text())["machine"]

    out = device_timing.device_run("fake", _one_workload, "cpu", quick=True)
    results = out["results"]
    assert results["sizes"] == {"d6": 1.0} and results["rows"] == [1, 2]
    assert results[device_timing.EARLIER_MACHINE] == cpu_machine
    section = results["device_timing"]
    assert section["device"] == "cpu" and section["quick"] is True and section["rows"][0]["workload"] == "sum of 8"
    assert out["rows"][0]["workload"] == "sum of 8" and "CPU time" in out["rows"][0]
    write_results("fake", results, quick=True)

    # a second device run replaces the section and keeps the first machine of the CPU results
    again = device_timing.device_run("fake", _one_workload, "cpu", quick=True)["results"]
    assert again[device_timing.EARLIER_MACHINE] == cpu_machine and again["sizes"] == {"d6": 1.0}
    write_results("fake", again, quick=True)

    # a later CPU run carries the device section over, but not in the other mode
    fresh = device_timing.carry_device_section("fake", {"sizes": {"d6": 2.0}}, quick=True)
    assert fresh["sizes"] == {"d6": 2.0} and fresh["device_timing"] == again["device_timing"]
    assert device_timing.EARLIER_MACHINE not in fresh
    assert "device_timing" not in device_timing.carry_device_section("fake", {"x": 1}, quick=False)
    # a device run in the other mode starts afresh rather than mixing modes
    assert set(device_timing.device_run("fake", _one_workload, "cpu", quick=False)["results"]) == {"device_timing"}
    assert "sum of 8" in device_timing.summary(["fake"])


def test_uci_or_synthetic_falls_back_to_data_of_the_same_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_SHARED_DATA", str(tmp_path))  # a folder without uci/
    X, y, source = device_timing.uci_or_synthetic("letter", 300, 16, 26)
    assert X.shape == (300, 16) and y.shape == (300,) and set(np.unique(y)) <= set(range(26))
    assert source.startswith("synthetic")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_device_mode_needs_no_optional_package():
    """What a bare GPU machine lacks (cvxpy, XGBoost, LightGBM, UMAP, Streamlit, plotly) is never imported."""
    proc = without_optional_packages(
        "from benchmarks.report import run\n"
        "from benchmarks.paper import latent_pruning, dgt, skinny\n"
        "from benchmarks.speed import latent_train\n"
        "latent_pruning.device_workloads(True, 'cpu')\n"
        "print('device benchmarks:', *run.DEVICE_BENCHMARKS)\n", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "latent_pruning" in proc.stdout


def test_a_failing_workload_becomes_a_row_and_the_others_still_run(capsys):
    def broken(dev):
        raise RuntimeError(f"no kernel for {dev}")

    workloads = [("broken", broken, {"data": "none", "unit": "epoch"}), *_one_workload(True, "cpu")]
    rows = device_timing.time_workloads(workloads, "cpu")
    assert rows[0]["error"] == "RuntimeError: no kernel for cpu" and rows[0]["cpu_s"] is None
    assert rows[1]["cpu_s"] > 0 and "error" not in rows[1]
    table = device_timing.table(rows)
    assert table[0]["CPU time"] == "FAILED" and table[1]["CPU time"] != "FAILED"
    assert "broken: FAILED" in capsys.readouterr().out
