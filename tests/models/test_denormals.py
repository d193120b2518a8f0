"""DGT and Skinny Trees train with subnormal floats flushed to zero, and only while they train.

With momentum 0.8 DGT's optimiser state passed through the subnormal range (epochs 21x slower),
and Skinny Trees' saturated sigmoid routing on unscaled features fed subnormals through every
step (3x slower); ``benchmarks/speed/denormals.py`` measures both."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models import denormals
from models.base import Callback
from models.dgt.estimators import DGTClassifier, DGTRegressor
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor

SUBNORMAL = 1e-39  # below float32's smallest normal number, 1.18e-38

ESTIMATORS = {
    DGTClassifier: dict(depth=2, min_steps=0, momentum=0.8, l1_penalty=0.0),
    DGTRegressor: dict(depth=2, min_steps=0, momentum=0.8, l1_penalty=0.0),
    SkinnyTreesClassifier: dict(n_trees=2, depth=2),
    SkinnyTreesRegressor: dict(n_trees=2, depth=2),
}


def _subnormal_survives() -> bool:
    return float((torch.tensor([SUBNORMAL], dtype=torch.float32) * 1.0)[0]) != 0.0


class _Probe(Callback):
    def __init__(self) -> None:
        self.seen: list[bool] = []

    def on_epoch_end(self, estimator, **kwargs) -> None:
        self.seen.append(_subnormal_survives())


def _fit(cls: type, epochs: int) -> list[bool]:
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    assert _subnormal_survives()
    X = np.random.default_rng(0).normal(size=(64, 3))
    y = (X[:, 0] > 0).astype(int) if "Classifier" in cls.__name__ else X[:, 0]
    probe = _Probe()
    cls(**ESTIMATORS[cls], max_epochs=epochs, device="cpu", random_state=0).fit(X, y, callbacks=[probe])
    return probe.seen


@pytest.mark.parametrize("cls", list(ESTIMATORS), ids=lambda c: c.__name__)
def test_a_fit_flushes_subnormals_while_it_trains_and_restores_them_after(cls):
    assert _fit(cls, 2) == [False, False]  # flushed inside every epoch
    assert _subnormal_survives()  # and the caller's handling is back afterwards


@pytest.mark.parametrize("cls", [DGTRegressor, SkinnyTreesRegressor], ids=lambda c: c.__name__)
def test_the_switch_turns_flushing_off_for_the_benchmark_baseline(cls, monkeypatch):
    monkeypatch.setattr(denormals, "ENABLED", False)
    assert _fit(cls, 1) == [True]
