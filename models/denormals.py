"""Training loops run with subnormal ("denormal") CPU floats flushed to zero.

A float32 below 1.2e-38 is stored as a subnormal number, and x86 CPUs compute with those through a
slow microcode path, tens of times slower than with normal numbers. An optimiser state that decays
geometrically for parameters with no gradient, such as RMSprop's momentum buffer at momentum 0.8,
passes through that range and keeps being fed tiny values, and a whole epoch then crawls. Measured on
this project's 2-core CPU machine (DGT, PenDigits, height 8, λ1 0, momentum 0.8, one thread): 12.4 s
an epoch without flushing, 0.38 s with it (``python -m benchmarks.run dgt_denormals``). A subnormal
contributes nothing a float32 optimiser step could use, so flushing it to zero changes no fit beyond
the last bits.

:func:`flush_denormals` wraps a training function: the calling thread computes with subnormals
flushed to zero (``torch.set_flush_denormal``, which also covers compiled numba code on that thread)
for the call, and normal handling returns after it. :data:`ENABLED` turns it off, for the benchmark
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
