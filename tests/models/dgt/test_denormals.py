"""DGT training computes with subnormal floats flushed to zero, and only while it trains: with
momentum 0.8 the optimiser state passed through the subnormal range and epochs ran 30x slower."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import denormals
from models.base import Callback
from models.dgt.estimators import DGTClassifier, DGTRegressor

SUBNORMAL = 1e-39  # below float32's smallest normal number, 1.18e-38


def _subnormal_survives() -> bool:
    return float((torch.tensor([SUBNORMAL], dtype=torch.float32) * 1.0)[0]) != 0.0


class _Probe(Callback):
    def __init__(self) -> None:
        self.seen: list[bool] = []

    def on_epoch_end(self, estimator, **kwargs) -> None:
        self.seen.append(_subnormal_survives())


@pytest.mark.parametrize("cls", [DGTClassifier, DGTRegressor])
def test_a_fit_flushes_subnormals_while_it_trains_and_restores_them_after(cls):
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    assert _subnormal_survives()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 3))
    y = (X[:, 0] > 0).astype(int) if cls is DGTClassifier else X[:, 0]
    probe = _Probe()
    cls(depth=2, max_epochs=2, min_steps=0, momentum=0.8, l1_penalty=0.0, device="cpu", random_state=0).fit(
        X, y, callbacks=[probe])
    assert probe.seen == [False, False]  # flushed inside every epoch
    assert _subnormal_survives()  # and the caller's handling is back afterwards


def test_the_switch_turns_flushing_off_for_the_benchmark_baseline(monkeypatch):
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    monkeypatch.setattr(denormals, "ENABLED", False)
    probe = _Probe()
    X = np.random.default_rng(0).normal(size=(32, 2))
    DGTRegressor(depth=2, max_epochs=1, min_steps=0, device="cpu", random_state=0).fit(X, X[:, 0], callbacks=[probe])
    assert probe.seen == [True]
