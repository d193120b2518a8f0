"""Shared fixtures of the tree-embedding tests."""

import pytest
import torch
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """Small problems: one intra-op thread (torch) and one BLAS thread avoid OpenMP and OpenBLAS
    barrier waits on a busy machine (SciPy's eigh of a 600 × 600 matrix took 4.7 s with two
    OpenBLAS threads on a loaded 2-core machine, 0.04 s with one)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(n)
