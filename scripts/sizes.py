"""Print every module over 600 lines and every function over 120 lines in the project's code.

Run `python scripts/sizes.py`; it exits 1 when anything is over. tests/test_sizes.py loads this file by
path and applies the same rule, with its allow-list of long numba kernels. A function's length is
``end_lineno - lineno + 1`` of its ``def`` (decorators excluded); methods and nested functions count
on their own.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("treeviz", "models", "app_pages", "benchmarks")
MODULE_LIMIT = 600
FUNCTION_LIMIT = 120
NUMBA_DECORATORS = {"njit", "jit"}


@dataclass(frozen=True)
class Long:
    """One module or function over its limit; ``name`` is ``path`` or ``path::qualified.name``."""

    name: str
    lines: int
    numba: bool = False


def sources(root: Path = ROOT) -> list[Path]:
    """The Python files the rule covers: the project's packages and app.py."""
    return sorted([*(p for folder in FOLDERS for p in (root / folder).rglob("*.py")), root / "app.py"])


def _is_numba(decorator: ast.expr) -> bool:
    """``@njit``, ``@numba.njit``, ``@njit(...)``, ``@numba.jit(...)`` and the like."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name in NUMBA_DECORATORS


def functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of every function, method and nested function, in source order."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((prefix + child.name, child))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def long_things(root: Path = ROOT) -> list[Long]:
    """Every module and function of :func:`sources` over its limit."""
    found = []
    for path in sources(root):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        count = len(text.splitlines())
        if count > MODULE_LIMIT:
            found.append(Long(rel, count))
        for qualname, node in functions(ast.parse(text)):
            length = node.end_lineno - node.lineno + 1
            if length > FUNCTION_LIMIT:
                found.append(Long(f"{rel}::{qualname}", length, any(map(_is_numba, node.decorator_list))))
    return found


def main() -> int:
    found = long_things()
    for item in found:
        print(f"{item.lines:5d}  {item.name}{'  (numba kernel)' if item.numba else ''}")
    print(f"{len(found)} over the limits ({MODULE_LIMIT} lines a module, {FUNCTION_LIMIT} a function)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
