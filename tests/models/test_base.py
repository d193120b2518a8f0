"""Shared estimator machinery: device choice, seeds, history records."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from models import devices
from models.base import TreeEstimator, seed_everything
from models.devices import CROSSOVERS, DeviceChoice, available_devices, device_choice, resolve_device, step_size
from models.ground.errors import TreevizError
from models.ground.jsonio import plain


def test_auto_device_without_a_problem_is_cuda_only_when_a_gpu_is_visible():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == expected
    assert resolve_device(None) == expected
    assert resolve_device(" CPU ") == "cpu"
    assert available_devices()[:2] == ["auto", "cpu"]


@pytest.fixture
def gpu_visible(monkeypatch):
    """Pretend torch sees one GPU (nothing is put on it: the tests only resolve names)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


@pytest.fixture
def measured(monkeypatch):
    """A crossover table as a GPU loan would leave it (the sizes where the GPU won on an H200 before
    the CPU paths were compiled), to test the rule itself."""
    table = dict(devices.CROSSOVERS)
    for family, size in (("latent", devices.STALE_CROSSOVERS["latent"]), ("dgt", devices.STALE_CROSSOVERS["dgt"]),
                         ("dgt_forest", devices.STALE_CROSSOVERS["dgt"])):
        table[family] = devices.Crossover(size, f"measured for {family}")
    monkeypatch.setattr(devices, "CROSSOVERS", table)
    return table


def test_auto_today_never_picks_cuda_the_crossovers_predate_the_compiled_cpu_steps(gpu_visible):
    huge = step_size(rows=10**7, batch=10**6, depth=12, trees=100)
    assert all(c.min_size is None for c in CROSSOVERS.values())
    for family in ("latent", "dgt", "dgt_forest"):
        choice = device_choice("auto", work=(family, huge))
        assert choice.device == "cpu" and "gpu_check.sh measures it again" in choice.reason, family


def test_auto_is_cpu_first_small_steps_stay_on_the_cpu(gpu_visible, measured):
    for family, rows, batch, depth in (("dgt", 100, 128, 6),       # fewer rows than a batch
                                       ("dgt", 10_000, 64, 6),     # 64 x 64 below 128 x 64
                                       ("latent", 100_000, 512, 6),  # measured 0.30x on an H200
                                       ("latent", 100_000, 64, 3)):  # the app defaults
        size = step_size(rows=rows, batch=batch, depth=depth)
        assert resolve_device("auto", work=(family, size)) == "cpu", (family, rows, batch, depth)
    choice = device_choice("auto", work=("dgt", step_size(rows=100, batch=128, depth=6)))
    assert choice.device == "cpu" and "below dgt's measured crossover" in choice.reason


def test_auto_picks_cuda_at_and_above_the_crossover_for_families_that_win(gpu_visible, measured):
    assert measured["dgt"].min_size == step_size(rows=2088, batch=128, depth=6)  # measured 2.0x
    for family, batch, depth in (("dgt", 128, 6), ("dgt", 128, 10), ("dgt_forest", 512, 8),
                                 ("latent", 4096, 8), ("latent", 16384, 10)):
        size = step_size(rows=200_000, batch=batch, depth=depth)
        assert resolve_device("auto", work=(family, size)) == "cuda", (family, batch, depth)
    assert "at least latent's measured crossover" in device_choice(
        "auto", work=("latent", step_size(rows=200_000, batch=4096, depth=8))).reason


def test_auto_never_picks_cuda_where_the_gpu_was_not_measured_to_win(gpu_visible):
    huge = step_size(rows=10**7, batch=10**6, depth=12, trees=100)
    for family in ("tao", "tao_forest", "skinny", "dgt_bandit", "tree_embedding", "cart", None):
        choice = device_choice("auto", work=(family, huge))
        assert choice.device == "cpu" and "not measured to win" in choice.reason, family
    assert "torch node solver" in device_choice("auto", work=("tao", huge)).reason
    # a family that wins, with no size known, stays on the CPU too
    assert resolve_device("auto", work=("dgt", None)) == "cpu"
    # asked for, CUDA is honoured whatever the size
    assert resolve_device("cuda", work=("tao", 1.0)) == "cuda"
    assert resolve_device("cuda:0", work=("skinny", 1.0)) == "cuda:0"


def test_without_a_gpu_auto_is_always_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    huge = step_size(rows=10**7, batch=10**6, depth=12)
    for family in ("dgt", "latent", "tao", "skinny"):
        choice = device_choice("auto", work=(family, huge))
        assert choice == DeviceChoice("cpu", "auto: no GPU visible")
    assert resolve_device("auto") == "cpu"
    with pytest.raises(TreevizError, match="no CUDA GPU is available; choose 'cpu' or 'auto'"):
        resolve_device("cuda", work=("dgt", huge))


def test_step_size_counts_rows_per_step_times_leaves_times_trees():
    assert step_size(rows=1000, batch=128, depth=6) == 128 * 64
    assert step_size(rows=100, batch=128, depth=6) == 100 * 64
    assert step_size(rows=500) == 500
    assert step_size(rows=1000, batch=16, depth=4, trees=20) == 16 * 16 * 20
    assert step_size() is None


def test_a_fit_records_its_device_and_why(gpu_visible, measured):
    from models.dgt.estimators import DGTClassifier

    est = DGTClassifier(depth=6, batch_size=128)
    assert est._fit_device(rows=50, batch=128, depth=6) == "cpu"
    assert "below dgt's measured crossover" in est.device_reason_
    assert est._fit_device(rows=50_000, batch=128, depth=6) == "cuda"
    assert "at least dgt's" in est.device_reason_
    est.set_params(device="cpu")
    assert est._fit_device(rows=50_000, batch=128, depth=6) == "cpu" and est.device_reason_ == "asked for"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown on a machine without a GPU")
def test_asking_for_cuda_without_a_gpu_is_a_sentence():
    with pytest.raises(TreevizError, match="no CUDA GPU is available; choose 'cpu' or 'auto'"):
        resolve_device("cuda")
    assert available_devices() == ["auto", "cpu"]


def test_unknown_device_is_refused():
    with pytest.raises(TreevizError, match="Unknown device 'tpu'"):
        resolve_device("tpu")


def test_seeds_make_torch_and_numpy_reproducible():
    g1 = seed_everything(7)
    a = torch.rand(3)
    g2 = seed_everything(7)
    b = torch.rand(3)
    assert torch.equal(a, b)
    assert g1.random() == g2.random()
    assert isinstance(seed_everything(None), np.random.Generator)
    assert isinstance(seed_everything(np.random.RandomState(0)), np.random.Generator)
    with pytest.raises(TreevizError, match="random_state must be"):
        seed_everything("seven")


def test_history_records_hold_plain_numbers():
    est = TreeEstimator()
    est._begin_training([], total=2)
    assert est._record(epoch=np.int64(1), loss=torch.tensor(0.5), sizes=(np.float32(1.5),))
    est._end_training()
    (rec,) = est.history_
    assert rec == {"epoch": 1, "loss": 0.5, "sizes": [1.5]}
    assert type(rec["epoch"]) is int and type(rec["loss"]) is float
    assert plain("x") == "x"


@pytest.mark.parametrize("family_key", ["latent", "skinny", "dgt", "dgt_forest", "tao", "tao_forest", "dgt_bandit",
                                        "tree_embedding"])
def test_every_torch_fit_asks_for_its_device_with_its_problem(family_key, monkeypatch):
    """Each torch family's fit resolves its device through the one rule, passing its family and,
    where the GPU can win, the size of its step; the fitted estimator says which device and why."""
    from sklearn.datasets import load_iris

    from models.registry import get_family

    asked = []

    def record(family, size):
        asked.append((family, size))
        return DeviceChoice("cpu", "recorded by the test")

    monkeypatch.setattr(devices, "choose_device", record)
    X, y = load_iris(return_X_y=True)
    family = get_family(family_key)
    task = "embedding" if family_key == "tree_embedding" else "classification"
    est = family.make(task, {**family.test_params, "device": "auto"})
    if "max_epochs" in est.get_params():
        est.set_params(max_epochs=2)
    if family_key == "tree_embedding":
        est.fit(X[:60])
    else:
        est.fit(X, y)
    if family_key == "dgt_forest":  # its trees decide, each as the DGT tree it is
        assert asked and {f for f, _ in asked} <= {"dgt_forest", "dgt"}
        est = est.estimators_[0]
    else:
        assert {f for f, _ in asked} == {family_key}
    if family_key in ("latent", "skinny", "dgt", "dgt_forest"):
        assert all(size is not None and size > 0 for _, size in asked)
    assert est.device_reason_ == "recorded by the test" and est.device_ == "cpu"


def test_without_an_nvidia_driver_the_device_list_does_not_import_torch(tmp_path, monkeypatch):
    """Every page's sidebar asks for the devices: on a machine without an NVIDIA driver the answer
    must not cost a torch import (the app's first page would wait over a second for it)."""
    if any(os.path.exists(f) for f in devices.NVIDIA_DRIVER_FILES):
        pytest.skip("this machine has an NVIDIA driver")
    code = ("import sys; from models.devices import available_devices; "
            "print(available_devices(), 'torch' in sys.modules, 'sklearn' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "['auto', 'cpu'] False False"  # nor scikit-learn's
    # with a driver present, torch is asked (here it finds no GPU, so the answer is the same)
    driver = tmp_path / "version"
    driver.write_text("NVRM version: test")
    monkeypatch.setattr(devices, "NVIDIA_DRIVER_FILES", (str(driver),))
    gpus = ["cuda", *(f"cuda:{i}" for i in range(torch.cuda.device_count()))] if torch.cuda.is_available() else []
    assert available_devices() == ["auto", "cpu", *gpus]
