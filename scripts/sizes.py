"""Print every module over 600 lines and every function over 120 lines in the project's code.

Run `python scripts/sizes.py`; it exits 1 when anything is over but the allow-listed numba kernels
(:data:`ALLOWED`). tests/test_sizes.py loads this file by path and applies the same rule. A function's length is
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
#: Numba kernels allowed to stay longer than FUNCTION_LIMIT ("path::qualified.name"): a kernel is one
#: compiled loop, so cutting it in pieces costs speed or clarity.
ALLOWED = (
    "models/latent/engine.py::_sparse_layer",
    "models/tao/solvers/cd_kernels.py::_logistic",
)


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
    over = [item for item in found if item.name not in ALLOWED]
    for item in found:
        print(f"{item.lines:5d}  {item.name}{'  (allow-listed numba kernel)' if item.name in ALLOWED else ''}")
    print(f"{len(over)} over the limits ({MODULE_LIMIT} lines a module, {FUNCTION_LIMIT} a function), "
          f"{len(found) - len(over)} allow-listed")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
