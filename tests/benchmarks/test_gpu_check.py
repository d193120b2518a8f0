"""benchmarks/gpu_check.sh and its device_scale benchmark, on a machine without a GPU: the dry run
(GPU_CHECK_DRY_RUN=1) goes through the script and the Python it calls on the CPU and writes rows
with their card and the crossovers; the crossover reading, the workloads and the budget guard are
checked on their own. No timing is asserted."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks import device_timing
from benchmarks.speed import device_scale
from models.devices import CROSSOVERS, STALE_CROSSOVERS, step_size
from tests.benchmarks.helpers import without_optional_packages

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def _rows(family, points, card="NVIDIA H200"):
    return [{"family": family, "step_size": s, "ratio_cpu_over_device": r, "device_name": card} for s, r in points]


def test_crossover_is_the_smallest_step_from_which_every_larger_one_won():
    rows = (_rows("dgt", [(8192, 2.0), (256, 0.8), (1024, 1.2)])
            + _rows("latent", [(32768, 0.3), (1_048_576, 3.2), (16_777_216, 1.55)])
            + _rows("skinny", [(5120, 0.4), (20480, 0.55)])
            + _rows("noisy", [(256, 1.5), (1024, 0.9), (8192, 2.0)])
            + [{"family": "dgt", "step_size": 64, "ratio_cpu_over_device": None, "error": "TimeoutError: skipped"}])
    found = device_scale.crossovers(rows)
    assert found["dgt"]["min_size"] == 1024 and found["dgt"]["cards"] == ["NVIDIA H200"]
    assert found["latent"]["min_size"] == 1_048_576 == STALE_CROSSOVERS["latent"]  # the H200's measurement
    assert found["skinny"]["min_size"] is None and CROSSOVERS["skinny"].min_size is None
    assert found["noisy"]["min_size"] == 8192  # a loss at 1 024 rules out everything below it
    text = device_scale.crossover_text(found)
    assert "skinny: never" in text and "dgt: 1,024" in text


def test_the_full_run_times_every_torch_family_at_100000_rows_and_their_ladders():
    work = device_scale.device_workloads(False, "cuda")
    scale = [o for _, _, o in work if o["kind"] == "scale"]
    assert {o["family"] for o in scale} == {"latent", "skinny", "dgt", "dgt_forest", "tao"}
    assert all(o["n"] >= 100_000 for o in scale)
    ladders = [o for _, _, o in work if o["kind"] == "crossover"]
    for family in ("latent", "dgt", "skinny"):
        sizes = [o["step_size"] for o in ladders if o["family"] == family]
        assert len(sizes) >= 3 and sizes == sorted(sizes) and len(set(sizes)) == len(sizes), family
    # each row's step is the size models.devices judges a fit by
    dgt = next(o for o in scale if o["family"] == "dgt")
    assert dgt["step_size"] == step_size(rows=100_000, batch=128, depth=6)
    assert all(o["cpu_warmup"] == 0 and o["warmup"] == 1 for o in scale)


def test_workloads_past_the_budget_become_skipped_rows():
    work = device_scale.within_budget(device_scale.device_workloads(True, "cpu")[:2], budget_s=-1.0)
    rows = device_timing.time_workloads(work, "cpu")
    assert [r["error"].split(":")[0] for r in rows] == ["TimeoutError", "TimeoutError"]
    assert "budget" in rows[0]["error"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_without_a_gpu_the_check_refuses_and_names_the_reason(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("checks the machine without a GPU")
    env = {**os.environ, "PYTHON": sys.executable, "TREEVIZ_BENCH_RESULTS": str(tmp_path)}
    env.pop("OUT", None)
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "torch sees no GPU here" in proc.stdout


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_the_dry_run_goes_through_the_script_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_DRY_RUN": "1", "OUT": str(out),
           "TREEVIZ_BENCH_RESULTS": str(tmp_path / "results")}
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "device_scale: ok" in proc.stdout and "crossovers (smallest step" in proc.stdout
    payload = json.loads((tmp_path / "results" / "device_scale.json").read_text())
    section = payload["results"][device_timing.SECTION]
    assert section["device"] == "cpu" and not section["failed"] and "smoke run" in section["notes"]
    rows = section["rows"]
    assert {r["family"] for r in rows} == {"latent", "skinny", "dgt", "dgt_forest", "tao"}
    assert all(r["device_name"] and r["cpu_s"] > 0 and r["device_s"] > 0 and r["step_size"] for r in rows)
    assert set(section["crossovers"]) == {"latent", "skinny", "dgt", "dgt_forest", "tao"}
    assert (out / "device_scale.json").is_file() and (out / "gpu_check.log").is_file()


def test_a_smoke_run_keeps_the_gpu_measurements(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    gpu = {"rows": [{"workload": "w", "device": "cuda"}], "device": "cuda", "device_name": "NVIDIA H100"}
    (tmp_path / "device_scale.json").write_text(json.dumps(
        {"benchmark": "device_scale", "quick": False, "results": {device_timing.SECTION: gpu}}))
    monkeypatch.setattr(device_scale, "warm_up", lambda device: None)
    monkeypatch.setattr(device_scale, "device_workloads", lambda quick, device: [])
    results = device_scale.run(quick=False, device="cpu")["results"]
    assert results[device_timing.SECTION] == gpu and results["last_smoke_run"]["device"] == "cpu"


@pytest.mark.slow  # minutes-scale; the full tier runs it, the fast one leaves it out
def test_device_scale_needs_no_optional_package():
    """What a bare GPU machine lacks (cvxpy, XGBoost, LightGBM, UMAP, Streamlit, plotly) is never imported."""
    proc = without_optional_packages(
        "from benchmarks.speed import device_scale\n"
        "device_scale.warm_up('cpu')\n"
        "print(len(device_scale.device_workloads(False, 'cpu')))\n", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
