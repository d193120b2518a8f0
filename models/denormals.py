"""Training loops run with subnormal ("denormal") CPU floats flushed to zero.

A float32 below 1.2e-38 is stored as a subnormal number, and x86 CPUs compute with those through a
slow microcode path, tens of times slower than with normal numbers. Two cases met in this project,
measured on its 2-core CPU machine, one thread (``python -m benchmarks.report.run denormals``):

* DGT at momentum 0.8: RMSprop's momentum buffer passes through that range, and a PenDigits epoch
  (height 8, λ1 0) took 11.3 s instead of 0.52 s (21.6×);
* Skinny Trees on unscaled features: the sigmoid routing saturates and feeds subnormal values
  through every step; a SatImage epoch with the defaults took 0.114 s instead of 0.038 s (3.0×).

A subnormal contributes nothing a float32 optimiser step could use: both fits ended with the same
training loss in either mode.

:func:`flush_denormals` wraps a training function: the calling thread computes with subnormals
flushed to zero (``torch.set_flush_denormal``, which also covers compiled numba code on that thread)
for the call, and normal handling returns after it. DGT's ``fit_stack`` and ``fit_network`` and
Skinny Trees' ``train`` and ``fit_ensemble`` are wrapped. :data:`ENABLED` turns it off, for the benchmark
that measures the difference.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import torch

F = TypeVar("F", bound=Callable[..., Any])

#: False runs the wrapped loops with the CPU's default handling (benchmarks only).
ENABLED = True


def flush_denormals(fn: F) -> F:
    """``fn`` run with subnormal CPU floats flushed to zero on the calling thread."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        changed = ENABLED and torch.set_flush_denormal(True)
        try:
            return fn(*args, **kwargs)
        finally:
            if changed:
                torch.set_flush_denormal(False)

    return wrapper  # type: ignore[return-value]
