"""Latent-tree pruning layer: forward + backward time of the fast path vs the general solver.

One call is the whole pruning layer on a batch of split scores ``S`` (n, 2**D - 1), float32::

    Q = path_rewards(S); a = prune(Q, lam, solver=...); Z = readout(Q, a); Z.sum().backward()

* ``fast``: :func:`~models.latent.pruning_layer.latent_layer`, the production fast path: on the CPU one
  compiled kernel for the whole layer (:mod:`models.latent.fused`: no sort, only the entries
  within margin ½ of a node take part), forward and backward;
* ``fast_composed``: the same maths as separate torch functions (``prune(solver="auto")``, the
  per-node closed form that is exact for the tree-consistent rewards a model produces), which is
  what a GPU runs;
* ``general``: ``solver="general"`` (tree PAV, [ICML] Algorithm 1, on the CPU in float64, custom backward);
* ``prune_*``: the same, for the QP alone (``Q -> a``, forward + backward), without the shared
  path-reward and read-out work;
* ``osqp``: the generic QP ([ICML] eq. 3 in cvxpy, solved by OSQP; forward only, parameters cached, so
  canonicalisation is not counted) for small problems (``n |T| <= 20000``), else n/a.

All on the CPU with ``torch.set_num_threads(1)`` (restored afterwards), best of several rounds.
Baselines run in the same process. Targets from the issue: at depth 6, batch 512, the fast path
should be >= 20x faster than the general solver and take < 1 ms per call on one thread. A GPU
figure (fast path, same call, CUDA-synchronised) is added when a GPU is visible.

``run(device="cuda")`` (``python -m benchmarks.report.run latent_pruning --device cuda``) is timing only:
:func:`device_workloads` times the production layer (``latent_layer``, forward and backward) at
depth 6 / batch 512, depth 8 / batch 4096 and depth 10 / batch 16384 on the CPU (the fused kernel,
one thread, as above) and on the GPU (the torch composition), in this process, and checks that
both give the same pruning ``a``; the rows go under ``results["device_timing"]`` beside the CPU
results (:mod:`benchmarks.device_timing`). About 20 s, most of it the CPU side. No cvxpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from benchmarks import device_timing
from benchmarks.common import best_time
from models.latent import heap
from models.latent.pruning import path_rewards, prune, readout
from models.latent.pruning_layer import latent_layer

NAME = "latent_pruning"
FULL_DEPTHS = (2, 3, 4, 5, 6, 7, 8)
FULL_BATCHES = (64, 256, 512, 1024, 4096)
QUICK_SIZES = ((2, 64), (4, 256), (6, 512))
LAM = 1.0
OSQP_MAX_ENTRIES = 20000
#: (depth, batch) of the device mode: the issue's size, then two a GPU is meant for.
DEVICE_SIZES = ((6, 512), (8, 4096), (10, 16384))
QUICK_DEVICE_SIZES = ((3, 32), (5, 128))


def _layer_call(S: torch.Tensor, solver: str):
    def call() -> None:
        S.grad = None
        Q = path_rewards(S)
        a = prune(Q, LAM, solver=solver)
        readout(Q, a).sum().backward()

    return call


def _fused_call(S: torch.Tensor):
    def call() -> None:
        S.grad = None
        latent_layer(S, LAM)[2].sum().backward()

    return call


def _prune_call(Q: torch.Tensor, solver: str):
    def call() -> None:
        Q.grad = None
        prune(Q, LAM, solver=solver).sum().backward()

    return call


def _osqp_call(Q: np.ndarray):
    """The generic QP (eq. 3) in cvxpy with OSQP, built once (DPP parameters); returns (call, a)."""
    import cvxpy as cp  # deferred: cvxpy takes seconds to import and only this baseline needs it

    n, total = Q.shape
    par = heap.parents(heap.depth_from_n_nodes(total))
    a, z = cp.Variable(total), cp.Variable((n, total))
    Qp = cp.Parameter((n, total))
    cons = [a[1:] <= a[par[1:]], z <= np.ones((n, 1)) @ cp.reshape(a, (1, total), order="C"),
            z >= 0, z <= 1, a >= 0, a <= 1]
    prob = cp.Problem(cp.Minimize(0.5 * LAM * cp.sum_squares(a) + 0.5 * cp.sum_squares(z - Qp)), cons)
    Qp.value = Q + 0.5

    def call() -> None:
        prob.solve(solver=cp.OSQP, eps_abs=1e-6, eps_rel=1e-6, polishing=True, max_iter=20000)

    call()  # canonicalise once
    return call, a


def _measure(depth: int, batch: int, repeat: int) -> dict[str, Any]:
    gen = torch.Generator().manual_seed(1000 * depth + batch)
    S0 = torch.randn(batch, 2**depth - 1, generator=gen)
    S = S0.clone().requires_grad_()
    Q = path_rewards(S0).detach().requires_grad_()
    total = heap.n_nodes(depth)
    a_fast = prune(Q.detach(), LAM)
    a_general = prune(Q.detach(), LAM, solver="general")
    assert torch.allclose(a_fast, a_general, atol=1e-5), "fast path and general solver disagree"

    # best of several rounds (each round averages calls over >= min_time): this VM's timings jitter
    slow_repeat = max(2, repeat // 2)
    _, a_layer, _ = latent_layer(S0, LAM)
    assert torch.allclose(a_layer, a_general, atol=1e-5), "the fused layer and the general solver disagree"
    ms_fast = best_time(_fused_call(S), repeat=repeat, min_time=0.1) * 1e3
    ms_composed = best_time(_layer_call(S, "auto"), repeat=repeat, min_time=0.1) * 1e3
    ms_general = best_time(_layer_call(S, "general"), repeat=slow_repeat) * 1e3
    ms_prune_fast = best_time(_prune_call(Q, "auto"), repeat=repeat, min_time=0.1) * 1e3
    ms_prune_general = best_time(_prune_call(Q, "general"), repeat=slow_repeat) * 1e3
    row: dict[str, Any] = {
        "depth": depth,
        "batch": batch,
        "nodes": total,
        "fast_ms": ms_fast,
        "fast_composed_ms": ms_composed,
        "general_ms": ms_general,
        "speedup": ms_general / ms_fast,
        "prune_fast_ms": ms_prune_fast,
        "prune_general_ms": ms_prune_general,
        "prune_speedup": ms_prune_general / ms_prune_fast,
        "active_nodes": int((a_fast > 0).sum()),
    }
    if batch * total <= OSQP_MAX_ENTRIES:
        call, a_var = _osqp_call(Q.detach().double().numpy())
        row["osqp_fwd_ms"] = best_time(call, repeat=2, min_time=0.0) * 1e3
        row["osqp_vs_fast"] = row["osqp_fwd_ms"] / ms_fast
        row["osqp_max_err_a"] = float(np.abs(a_var.value - a_general.double().numpy()).max())
    else:
        row["osqp_fwd_ms"] = row["osqp_vs_fast"] = row["osqp_max_err_a"] = "n/a"
    return row


def _gpu_figure(depth: int, batch: int) -> Any:
    if not torch.cuda.is_available():
        return "no GPU"
    gen = torch.Generator().manual_seed(7)
    S = torch.randn(batch, 2**depth - 1, generator=gen).cuda().requires_grad_()
    call = _fused_call(S)  # on a GPU, latent_layer runs the torch composition

    def synced() -> None:
        call()
        torch.cuda.synchronize()

    synced()
    return {"device": torch.cuda.get_device_name(0), "ms_fast": best_time(synced, repeat=5) * 1e3}


def device_workloads(quick: bool, device: str) -> list[device_timing.Workload]:
    """The layer ``S -> latent_layer(S) -> Z.sum().backward()`` at each size, for
    :func:`benchmarks.device_timing.compare`; ``a`` on ``device`` is checked against the CPU's."""
    workloads = []
    for depth, batch in QUICK_DEVICE_SIZES if quick else DEVICE_SIZES:
        S0 = torch.randn(batch, 2**depth - 1, generator=torch.Generator().manual_seed(1000 * depth + batch))
        try:
            a_dev = latent_layer(S0.to(device), LAM)[1].cpu()
            diff = float((latent_layer(S0, LAM)[1] - a_dev).abs().max())
        except Exception as exc:  # the timing below fails too, and says why
            diff = f"not computed: {type(exc).__name__}: {exc}"
        if isinstance(diff, float) and diff > 1e-4:
            print(f"  WARNING: the pruning layer on {device} differs from the CPU's by {diff:.3g} "
                  f"(depth {depth}, batch {batch})", flush=True)

        def build(dev: str, S0: torch.Tensor = S0):
            return _fused_call(S0.to(dev).requires_grad_())

        workloads.append((f"pruning layer fwd+bwd d={depth} b={batch}", build, {
            "data": "synthetic split scores N(0, 1), float32", "unit": "call", "cpu_threads": 1,
            "repeat": 3, "warmup": 2, "min_time": 0.02 if quick else 0.25, "depth": depth, "batch": batch,
            "nodes": heap.n_nodes(depth), "max_abs_diff_a_cpu_vs_device": diff,
            "a_agrees": isinstance(diff, float) and diff <= 1e-4,
            "paths": "CPU: fused numba kernel (latent_layer); device: torch composition path_rewards -> "
                     "prune_fast -> readout"}))
    return workloads


def run(quick: bool = False, device: str = "cpu") -> dict[str, Any]:
    """The CPU benchmark (``device="cpu"``), or with another device the timing-only device mode."""
    if device_timing.resolve_device(device) != "cpu":
        return device_timing.device_run(NAME, device_workloads, device, quick=quick,
                                        notes="same S on both devices; the CPU runs one thread")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        sizes = QUICK_SIZES if quick else tuple((d, b) for d in FULL_DEPTHS for b in FULL_BATCHES)
        repeat = 5 if quick else 7
        rows = [_measure(d, b, repeat) for d, b in sizes]
        gpu = _gpu_figure(6, 512)
    finally:
        torch.set_num_threads(threads)
    results: dict[str, Any] = {
        "dtype": "float32",
        "threads": 1,
        "lam": LAM,
        "call": "S -> (Q, a, Z) -> Z.sum().backward(); fast = latent_layer (fused CPU kernel), "
                "fast_composed / general = path_rewards -> prune(solver) -> readout('code')",
        "sizes": {f"d{r['depth']}_b{r['batch']}": {k: v for k, v in r.items() if k not in ("depth", "batch")}
                  for r in rows},
        "gpu_d6_b512": gpu,
    }
    key = "d6_b512"
    if key in results["sizes"]:
        ref = results["sizes"][key]
        results["ms_fast_d6_b512"] = ref["fast_ms"]
        results["ms_general_d6_b512"] = ref["general_ms"]
        results["ms_fast_composed_d6_b512"] = ref["fast_composed_ms"]
        results["speedup_fast_vs_general_d6_b512"] = ref["speedup"]
        results["ms_prune_fast_d6_b512"] = ref["prune_fast_ms"]
        results["ms_prune_general_d6_b512"] = ref["prune_general_ms"]
        results["speedup_prune_fast_vs_general_d6_b512"] = ref["prune_speedup"]
        results["target_fast_under_1ms"] = bool(ref["fast_ms"] < 1.0)
        results["target_prune_fast_under_1ms"] = bool(ref["prune_fast_ms"] < 1.0)
        results["target_speedup_20x"] = bool(ref["speedup"] >= 20.0)
        results["target_prune_speedup_20x"] = bool(ref["prune_speedup"] >= 20.0)
    for r in rows:
        for k in ("osqp_fwd_ms", "osqp_vs_fast", "osqp_max_err_a"):
            if isinstance(r[k], float) and not math.isfinite(r[k]):
                r[k] = "n/a"
    if isinstance(gpu, dict):
        rows.append({"depth": 6, "batch": 512, "nodes": heap.n_nodes(6), "fast_ms": gpu["ms_fast"],
                     "fast_composed_ms": "", "general_ms": "GPU", "speedup": "", "prune_fast_ms": "",
                     "prune_general_ms": "", "prune_speedup": "", "active_nodes": "", "osqp_fwd_ms": "",
                     "osqp_vs_fast": "", "osqp_max_err_a": ""})
    else:
        print(f"GPU figure: {gpu}")
    return {"rows": rows, "results": device_timing.carry_device_section(NAME, results, quick=quick)}
