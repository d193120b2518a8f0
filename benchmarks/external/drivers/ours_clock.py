"""What the treeviz side of every pair shares: torch on one thread, and a callback that marks the
wall and process-CPU time at the start of training and at the end of every epoch (so an epoch is
treeviz's whole epoch: the training steps, the validation pass, keeping the best state).

Runs with the project's python and the measured treeviz source on ``PYTHONPATH``; the driver
calls ``shared.one_thread()`` before importing this.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from models.base import Callback


def torch_one_thread() -> None:
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)


class Clock(Callback):
    """(wall, cpu) marks: one at the start of training, one at the end of every epoch."""

    def __init__(self) -> None:
        self.marks: list[tuple[float, float]] = []

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        self.marks = [(time.perf_counter(), time.process_time())]

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        self.marks.append((time.perf_counter(), time.process_time()))


def fit_timed(model: Any, X: Any, y: Any, eval_set: tuple[Any, Any]) -> tuple[Clock, float, float]:
    """Fit ``model`` with a :class:`Clock`; the clock, and the fit's wall and CPU seconds."""
    clock = Clock()
    start, start_cpu = time.perf_counter(), time.process_time()
    model.fit(X, y, eval_set=eval_set, callbacks=[clock])
    return clock, time.perf_counter() - start, time.process_time() - start_cpu
