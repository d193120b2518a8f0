"""Which kernels the pruning layer runs: NumPy on the CPU, torch elsewhere.

Performance notes (CPU). Tensors from :func:`path_rewards` are node-major (an ``(n, |T|)``
transposed view of a ``(|T|, n)`` buffer) so that per-node work is contiguous; the CPU kernels
of the three layers run on NumPy views of the tensors' memory where torch's CPU kernels are slow
at these sizes (sorting, boolean masks, many small calls). Other devices use the same algorithms
written with torch operations (what a GPU runs); the tests check both back-ends agree.

:func:`on_numpy` is the one switch between the two (a test turns it off to compare them).
"""

from __future__ import annotations

import torch
from torch import Tensor


def on_numpy(x: Tensor) -> bool:
    """Whether to run the elementwise kernels with NumPy: CPU float32/float64 tensors.

    On CPU, NumPy's per-call overhead is a few times lower than torch's and its sort is ~30x
    faster, which matters at these sizes (a few hundred thousand entries per batch). Other
    devices and dtypes use the same algorithm written with torch ops.
    """
    return x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
