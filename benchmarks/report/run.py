"""Run benchmarks: `python -m benchmarks.report.run [NAME ...] [--quick] [--device {cpu,cuda,auto}]` (no NAME = all).

A benchmark is any module of ``benchmarks/paper/`` (paper reproductions) or ``benchmarks/speed/``
(speed and scale) that defines ``NAME`` and ``run(quick) -> {"rows": [...], "results": {...}}``;
the runner finds them by name (a new benchmark needs no edit here), prints the rows as a table and
writes the results to ``benchmarks/results/NAME.json``, every row stamped with the commit, machine,
date and this command (:func:`benchmarks.common.write_results`). A benchmark with settings of its
own (``dgt.toml``, ``tao_paper --rows``, ...) runs with its defaults here; its own command line
(``python -m benchmarks.paper.<name> --help``) changes them.

``--device`` (default ``cpu``: the benchmarks as they always ran). ``cuda`` times the torch families
on a GPU: a benchmark whose ``run`` takes a ``device`` keyword gets it, and with ``cuda`` runs its
device mode, timing only: the same workloads timed on the CPU and on the GPU in one process (see
``benchmarks/device_timing.py``), written under ``results["device_timing"]`` of its JSON beside the
CPU results already there. Without NAME, ``--device cuda`` runs only the benchmarks that take a
device (the others are listed as skipped); a NAME without a device mode runs on the CPU as usual,
with a note. ``auto`` means ``cuda`` when torch sees a GPU, else ``cpu``. ``cuda`` without a
visible GPU is refused (exit status 2). ``bash benchmarks/gpu_check.sh`` runs, for a GPU machine
within a time budget, ``device_scale`` (every torch family at 100 000 rows and the crossovers of
``device="auto"``) and, with ``GPU_CHECK_ALL=1``, every other benchmark with a device mode.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from benchmarks.common import format_table, write_results

ROOT = Path(__file__).resolve().parents[1]
#: The folders of benchmarks, under ``benchmarks/``.
FOLDERS = ("paper", "speed")
DEVICES = ("cpu", "cuda", "auto")


def _run_def(path: Path) -> ast.FunctionDef | None:
    """The top-level ``run`` of a module that also assigns ``NAME`` (read without importing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    runs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run"]
    return runs[-1] if "NAME" in names and runs else None


def _defines_benchmark(path: Path) -> bool:
    """Whether a module assigns ``NAME`` and defines ``run`` at top level (read without importing)."""
    return _run_def(path) is not None


def _declares_device(path: Path) -> bool:
    """Whether a benchmark's ``run`` takes a ``device`` keyword (read without importing, so that
    listing them never imports a module whose packages are missing, as on a bare GPU machine)."""
    run = _run_def(path)
    if run is None:
        return False
    args = run.args
    return args.kwarg is not None or "device" in {a.arg for a in (*args.args, *args.kwonlyargs)}


#: Each benchmark's module file, by name: ``benchmarks/paper/<name>.py`` or ``benchmarks/speed/<name>.py``.
MODULES = {p.stem: p for folder in FOLDERS for p in sorted(ROOT.joinpath(folder).glob("*.py")) if _defines_benchmark(p)}
BENCHMARKS = tuple(sorted(MODULES))
#: The benchmarks with a device mode (their ``run`` takes ``device``).
DEVICE_BENCHMARKS = tuple(name for name in BENCHMARKS if _declares_device(MODULES[name]))


def module_name(name: str) -> str:
    """The dotted module of benchmark ``name`` (``benchmarks.paper.dgt``)."""
    return ".".join(["benchmarks", *MODULES[name].relative_to(ROOT).with_suffix("").parts])


def accepts_device(run: Callable[..., Any]) -> bool:
    """Whether ``run`` takes a ``device`` keyword argument."""
    params = inspect.signature(run).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD or
               (p.name == "device" and p.kind is not inspect.Parameter.POSITIONAL_ONLY) for p in params)


def run_kwargs(run: Callable[..., Any], quick: bool, device: str) -> dict[str, Any]:
    """The keywords for a benchmark's ``run``: ``device`` only where ``run`` accepts it."""
    return {"quick": quick, "device": device} if accepts_device(run) else {"quick": quick}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="CI-sized data and fewer repeats")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="cpu (default): the usual benchmarks; cuda: the device mode (CPU vs GPU timing) of "
                             f"the benchmarks that have one ({', '.join(DEVICE_BENCHMARKS)}); auto: cuda when a GPU "
                             "is visible, else cpu")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda needs a GPU, but torch sees none (torch.cuda.is_available() is False); "
                     "use --device cpu or auto")
    names = list(args.names)
    if not names and device != "cpu":
        names = list(DEVICE_BENCHMARKS)
        skipped = [n for n in BENCHMARKS if n not in DEVICE_BENCHMARKS]
        print(f"--device {device}: running the benchmarks with a device mode ({', '.join(names) or 'none'}); "
              f"skipped (CPU only): {', '.join(skipped) or 'none'}")
    elif not names:
        names = list(BENCHMARKS)
    for name in names:
        module = importlib.import_module(module_name(name))
        kwargs = run_kwargs(module.run, args.quick, device)
        if device != "cpu" and "device" not in kwargs:
            print(f"note: {name} has no device mode (its run() takes no device); it runs on the CPU as usual")
        mode = ", ".join(m for m in ("quick" if args.quick else "", kwargs.get("device", "")) if m and m != "cpu")
        start = time.perf_counter()
        out = module.run(**kwargs)
        print(f"\n== {name}{f' ({mode})' if mode else ''}: {time.perf_counter() - start:.1f} s")
        print(format_table(out["rows"]))
        path = write_results(name, out["results"], quick=args.quick)
        print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
