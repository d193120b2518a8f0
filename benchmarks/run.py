"""Run benchmarks: `python -m benchmarks.run [NAME ...] [--quick]` (no NAME = all).

A benchmark is any module ``benchmarks/<name>.py`` that defines ``NAME`` and
``run(quick) -> {"rows": [...], "results": {...}}``; the runner finds them (a new family's
benchmark needs no edit here), prints the rows as a table and writes the results to
``benchmarks/results/NAME.json``.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
import time
from pathlib import Path

from benchmarks.common import format_table, write_results


def _defines_benchmark(path: Path) -> bool:
    """Whether a module assigns ``NAME`` and defines ``run`` at top level (read without importing)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets
             if isinstance(t, ast.Name)}
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    return "NAME" in names and "run" in functions


BENCHMARKS = tuple(sorted(p.stem for p in Path(__file__).resolve().parent.glob("*.py") if _defines_benchmark(p)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default all: {', '.join(BENCHMARKS)})")
    parser.add_argument("--quick", action="store_true", help="CI-sized data and fewer repeats")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}")
    for name in args.names or BENCHMARKS:
        module = importlib.import_module(f"benchmarks.{name}")
        start = time.perf_counter()
        out = module.run(quick=args.quick)
        print(f"\n== {name}{' (quick)' if args.quick else ''}: {time.perf_counter() - start:.1f} s")
        print(format_table(out["rows"]))
        path = write_results(name, out["results"], quick=args.quick)
        print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
