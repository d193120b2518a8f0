"""The device mode of the torch benchmarks: one workload timed on the CPU and on a GPU in one process.

``python -m benchmarks.report.run --device cuda`` calls ``run(quick, device="cuda")`` of every benchmark
whose ``run`` takes a ``device``. Such a run is timing only: the benchmark hands
:func:`device_run` a function that builds its workloads, each workload is timed on the CPU and on
the device by :func:`compare`, and the rows land under ``results["device_timing"]`` of the
benchmark's JSON, beside whatever the file already holds (the CPU results are kept, see
:func:`merge_previous`). A later CPU run keeps the device section in turn
(:func:`carry_device_section`).

Timing protocol (:func:`measure`): the workload is built once per device (its data moved there
first), run ``warmup`` times untimed (compilation, CUDA context, cuBLAS handles, the allocator's
first blocks), then ``repeat`` timed rounds; a round runs the call as often as it takes to fill
``min_time`` seconds (at least once) and counts the mean. On CUDA every call is followed by
``torch.cuda.synchronize()`` and a round starts synchronised, so queued kernels are never missed.
The figure kept is the median round; every round is stored. ``max_seconds`` bounds a slow
workload on a slow machine: no round starts once the rounds so far took that long (one round is
always run), so the row may hold fewer rounds than ``repeat``.

This module is a helper, not a benchmark (it defines no ``NAME``). ``python -m
benchmarks.device_timing [NAME ...]`` prints the device tables stored in the results JSON.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from benchmarks.common import format_table, load_uci, results_dir, shared_data_dir

SECTION = "device_timing"
#: Where the previous file's machine goes when a device run writes over it (the CPU results' machine).
EARLIER_MACHINE = "machine_of_cpu_results"
ROW_KEYS = ("workload", "data", "unit", "cpu_threads", "cpu_s", "device", "device_name", "device_s",
            "ratio_cpu_over_device", "cpu_rounds_s", "device_rounds_s", "repeat", "warmup", "statistic")

#: A workload: (name, builder, options). ``builder(device)`` puts the data on ``device`` and returns
#: the call to time; options go to :func:`compare` (``data``, ``unit``, ``units``, ``repeat``, ...).
Workload = tuple[str, Callable[[str], Callable[[], Any]], dict[str, Any]]


# ------------------------------------------------------------------------------------------ devices
def resolve_device(device: str) -> str:
    """``"cpu"``, ``"cuda"`` or ``"auto"`` (CUDA when torch sees a GPU) as a torch device name."""
    device = str(device).strip().lower()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be cpu, cuda or auto, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but torch sees no GPU")
    return device


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or platform.machine() or "cpu"


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize(torch.device(device))


def machine(device: str) -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
            "torch": torch.__version__, "torch_default_threads": torch.get_num_threads(),
            "cuda": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
            "cuda_runtime": torch.version.cuda if device.startswith("cuda") else None}


# ------------------------------------------------------------------------------------------ timing
def measure(fn: Callable[[], Any], device: str, *, repeat: int = 3, warmup: int = 1,
            min_time: float = 0.0, max_seconds: float | None = None) -> list[float]:
    """Seconds per call of ``fn`` on ``device`` in each of ``repeat`` rounds (fewer once the rounds
    took ``max_seconds``), after ``warmup`` untimed calls (see the module docstring)."""
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    for _ in range(warmup):
        fn()
        synchronize(device)
    rounds: list[float] = []
    first = time.perf_counter()
    for _ in range(repeat):
        if rounds and max_seconds is not None and time.perf_counter() - first >= max_seconds:
            break
        synchronize(device)
        calls, start = 0, time.perf_counter()
        while True:
            fn()
            synchronize(device)
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        rounds.append(elapsed / calls)
    return rounds


def _timed_on(device: str, build: Callable[[str], Callable[[], Any]], threads: int, **kw: Any) -> list[float]:
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return measure(build(device), device, **kw)
    finally:
        torch.set_num_threads(before)


def compare(workload: str, build: Callable[[str], Callable[[], Any]], device: str, *, data: str,
            unit: str = "call", units: int = 1, repeat: int = 3, warmup: int = 1, min_time: float = 0.0,
            max_seconds: float | None = None, cpu_threads: int | None = None, cpu_warmup: int | None = None,
            **info: Any) -> dict[str, Any]:
    """Time ``build(d)()`` on the CPU and on ``device``, in this process; one row.

    ``units``: how many ``unit`` one call does (epochs of a fit, say): times are per unit.
    ``cpu_threads``: torch threads for both timings (default: torch's current number).
    ``cpu_warmup``: warm-up calls on the CPU (default ``warmup``; 0 saves a long workload's time where
    the CPU has nothing to warm up). ``ratio_cpu_over_device`` above 1 means the device is faster.
    ``info`` is stored in the row.
    """
    threads = int(cpu_threads or torch.get_num_threads())
    kw = {"repeat": repeat, "warmup": warmup, "min_time": min_time, "max_seconds": max_seconds}
    cpu_kw = kw if cpu_warmup is None else {**kw, "warmup": int(cpu_warmup)}
    cpu = [t / units for t in _timed_on("cpu", build, threads, **cpu_kw)]
    dev = [t / units for t in _timed_on(device, build, threads, **kw)]
    cpu_s, dev_s = statistics.median(cpu), statistics.median(dev)
    return {"workload": workload, "data": data, "unit": unit, "units_per_call": units, "cpu_threads": threads,
            "cpu_s": cpu_s, "device": device, "device_name": device_name(device), "device_s": dev_s,
            "ratio_cpu_over_device": cpu_s / dev_s if dev_s > 0 else float("inf"),
            "cpu_rounds_s": cpu, "device_rounds_s": dev, "repeat": repeat, "warmup": warmup,
            "cpu_warmup": warmup if cpu_warmup is None else int(cpu_warmup),
            "min_time_s": min_time, "max_seconds": max_seconds, "statistic": "median of rounds", **info}


def time_workloads(workloads: Sequence[Workload], device: str) -> list[dict[str, Any]]:
    """:func:`compare` for each workload. A workload that raises becomes a row with its ``error``
    (the traceback goes to stderr) and the others still run: a GPU session is short."""
    rows = []
    for name, build, options in workloads:
        t0 = time.perf_counter()
        try:
            row = compare(name, build, device, **options)
        except Exception as exc:  # reported in the row and on stderr
            traceback.print_exc()
            row = {**dict.fromkeys(ROW_KEYS), "workload": name, "device": device, "unit": options.get("unit", "call"),
                   "data": options.get("data", ""), "error": f"{type(exc).__name__}: {exc}"}
            print(f"  [{device}] {name}: FAILED ({row['error']})", flush=True)
        else:
            print(f"  [{device}] {name}: cpu {_fmt_s(row['cpu_s'])}, {device} {_fmt_s(row['device_s'])} per "
                  f"{row['unit']} ({row['ratio_cpu_over_device']:.2f}x) [{time.perf_counter() - t0:.0f} s]", flush=True)
        row["seconds"] = time.perf_counter() - t0
        rows.append(row)
    return rows


# ------------------------------------------------------------------------------------------ tables
def _fmt_s(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Printable rows: the workload, its data, CPU time, device time (per unit) and their ratio."""
    out = []
    for r in rows:  # one table is one device, so the device's columns are named after it
        label = "CUDA" if r["device"].startswith("cuda") else f"{r['device'].upper()} again"
        failed = r.get("error") is not None
        out.append({"workload": r["workload"], "data": r["data"], "per": r["unit"],
                    "CPU threads": "" if failed else r["cpu_threads"],
                    "CPU time": "FAILED" if failed else _fmt_s(r["cpu_s"]),
                    f"{label} time": r["error"][:60] if failed else _fmt_s(r["device_s"]),
                    f"CPU / {label}": "" if failed else f"{r['ratio_cpu_over_device']:.2f}x"})
    return out


# ------------------------------------------------------------------------------------------ results JSON
def previous_payload(name: str) -> dict[str, Any] | None:
    """The payload of ``benchmarks/results/<name>.json`` (or under ``TREEVIZ_BENCH_RESULTS``), if any."""
    try:
        payload = json.loads((results_dir() / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None
    return payload if isinstance(payload, dict) and payload.get("benchmark") == name else None


def merge_previous(name: str, section: dict[str, Any], *, quick: bool) -> dict[str, Any]:
    """The previous results of ``name`` (same mode, ``--quick`` or not) with ``section`` as their
    device section: every other key is kept. The runner then writes this machine into the file's
    ``machine``, so the previous file's machine is kept as ``results["machine_of_cpu_results"]``
    (unless an earlier device run already kept it)."""
    payload = previous_payload(name)
    if payload is None or bool(payload.get("quick")) != quick or not isinstance(payload.get("results"), dict):
        return {SECTION: section}
    results = dict(payload["results"])
    if EARLIER_MACHINE not in results and payload.get("machine") is not None:
        results[EARLIER_MACHINE] = payload["machine"]
    results[SECTION] = section
    return results


def carry_device_section(name: str, results: dict[str, Any], *, quick: bool) -> dict[str, Any]:
    """``results`` of a CPU run, plus the device section of the previous file of the same mode."""
    payload = previous_payload(name)
    if payload is None or bool(payload.get("quick")) != quick:
        return results
    section = (payload.get("results") or {}).get(SECTION)
    if section is not None and SECTION not in results:
        results = {**results, SECTION: section}
    return results


def device_run(name: str, workloads: Callable[[bool, str], Sequence[Workload]], device: str, *, quick: bool,
               notes: str = "") -> dict[str, Any]:
    """A benchmark's timing-only run on ``device``: ``{"rows": table, "results": merged results}``;
    ``workloads(quick, device)`` lists the workloads."""
    device = resolve_device(device)
    start = time.perf_counter()
    rows = time_workloads(workloads(quick, device), device)
    failed = [r["workload"] for r in rows if r.get("error") is not None]
    if failed:
        print(f"  {len(failed)} of {len(rows)} workload(s) failed: {', '.join(failed)}", flush=True)
    section = {"rows": rows, "failed": failed, "device": device, "device_name": device_name(device), "quick": quick,
               "machine": machine(device), "at": time.strftime("%Y-%m-%d %H:%M:%S"),
               "total_seconds": time.perf_counter() - start,
               "protocol": ("each workload built once per device, warm-up call(s) untimed, then timed rounds "
                            "(CUDA synchronised after every call); median round per unit; CPU and device timed in "
                            "the same process with the same torch threads"),
               "notes": notes}
    return {"rows": table(rows), "results": merge_previous(name, section, quick=quick)}


# ------------------------------------------------------------------------------------------ data
def uci_or_synthetic(name: str, n_rows: int, n_features: int, n_classes: int,
                     seed: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
    """``uci/<name>.csv.gz`` from the shared data folder when present (the first ``n_rows`` of a
    seeded shuffle), else Gaussian class blobs of the same shape; (X, class indices, source)."""
    root = shared_data_dir()
    path = None if root is None else root / "uci" / f"{name}.csv.gz"
    rng = np.random.default_rng(seed)
    if path is not None and path.is_file():
        X, labels = load_uci(name)
        y = np.unique(labels, return_inverse=True)[1]
        idx = rng.permutation(X.shape[0])[:n_rows]
        return X[idx], y[idx], f"shared uci/{name}.csv.gz ({idx.size} x {X.shape[1]})"
    centres = rng.normal(scale=2.0, size=(n_classes, n_features))
    y = rng.integers(0, n_classes, size=n_rows)
    X = centres[y] + rng.normal(size=(n_rows, n_features))
    return X, y, f"synthetic, {name}'s shape ({n_rows} x {n_features}, {n_classes} classes; shared data absent)"


def standardised_holdout(name: str, n_rows: int, n_features: int, n_classes: int, seed: int = 0):
    """:func:`uci_or_synthetic`, features standardised, cut 80 / 20: (Xtr, ytr, Xva, yva, description)."""
    X, y, source = uci_or_synthetic(name, n_rows, n_features, n_classes, seed=seed)
    X = (X - X.mean(axis=0)) / np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    cut = int(0.8 * n_rows)
    text = f"{source}, standardised, {cut} training / {n_rows - cut} validation rows"
    return X[:cut], y[:cut], X[cut:], y[cut:], text


def epoch_options(quick: bool) -> dict[str, Any]:
    """Timing options of a fit timed per epoch. Quick (tests, CI's small shared machine): one
    thread, where torch's default threads fight other work."""
    return {"unit": "epoch", "repeat": 2 if quick else 3, "warmup": 1, **({"cpu_threads": 1} if quick else {})}


class EpochFit(NamedTuple):
    """A fit timed per epoch: the workload's name, its builder, epochs, parameters and data description."""

    name: str
    build: Callable[[str], Callable[[], Any]]
    epochs: int
    params: dict[str, Any]
    data: str


def small_and_large_fits(quick: bool, small: EpochFit, large: EpochFit) -> list[Workload]:
    """The two fits a family's device mode times per epoch: the small one with one CPU thread, the
    large one with its rounds bounded by 20 s (``max_seconds``) except when quick."""
    options = epoch_options(quick)
    return [
        (small.name, small.build, {**options, "units": small.epochs, "cpu_threads": 1, "params": small.params,
                                   "data": small.data}),
        (large.name, large.build, {**options, "units": large.epochs, "max_seconds": None if quick else 20.0,
                                   "params": large.params, "data": large.data}),
    ]


# ------------------------------------------------------------------------------------------ summary
def summary(names: Sequence[str]) -> str:
    """The device tables stored in the results JSON of ``names`` (every file with one, when empty)."""
    names = list(names) or sorted(p.stem for p in results_dir().glob("*.json"))
    parts = []
    for name in names:
        payload = previous_payload(name)
        section = ((payload or {}).get("results") or {}).get(SECTION)
        if not section:
            continue
        parts.append(f"== {name}: {section.get('device_name')} ({section.get('at')}, "
                     f"{section.get('total_seconds', 0):.0f} s)\n{format_table(table(section['rows']))}")
    return "\n\n".join(parts) if parts else "(no device timing stored)"


if __name__ == "__main__":
    print(summary(sys.argv[1:]))
