"""Skinny Trees train with subnormal floats flushed to zero, and only while they train: saturated
sigmoid routing (unscaled features) fed subnormal values through every step, 3x slower."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from models.base import Callback
from models.skinny.estimators import SkinnyTreesClassifier, SkinnyTreesRegressor


def _subnormal_survives() -> bool:
    return float((torch.tensor([1e-39], dtype=torch.float32) * 1.0)[0]) != 0.0


class _Probe(Callback):
    def __init__(self) -> None:
        self.seen: list[bool] = []

    def on_epoch_end(self, estimator, **kwargs) -> None:
        self.seen.append(_subnormal_survives())


@pytest.mark.parametrize("cls", [SkinnyTreesClassifier, SkinnyTreesRegressor])
def test_a_skinny_fit_flushes_subnormals_while_it_trains_and_restores_them_after(cls):
    if not torch.set_flush_denormal(False):
        pytest.skip("this CPU cannot flush subnormal floats")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(64, 4))
    y = (X[:, 0] > 0).astype(int) if cls is SkinnyTreesClassifier else X[:, 0]
    probe = _Probe()
    cls(n_trees=2, depth=2, max_epochs=2, device="cpu", random_state=0).fit(X, y, callbacks=[probe])
    assert probe.seen == [False, False]
    assert _subnormal_survives()
