"""Shared estimator machinery: device choice, seeds, history records."""

import numpy as np
import pytest
import torch

from models.base import TreeEstimator, available_devices, resolve_device, seed_everything
from treeviz.errors import TreevizError
from treeviz.jsonio import plain


def test_auto_device_is_cuda_only_when_a_gpu_is_visible():
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == expected
    assert resolve_device(None) == expected
    assert resolve_device(" CPU ") == "cpu"
    assert available_devices()[:2] == ["auto", "cpu"]


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
