"""Import rules the layer contract cannot see.

`lint-imports` (configured in pyproject.toml, run by scripts/test.sh) checks that no module imports
a higher layer, including imports written inside functions. This test adds the rule for those
function-local imports: one may only defer a heavy third-party library, never import a project
module (that is how an upward import hides), and it must say so in a comment containing
"deferred" on the same line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("treeviz", "models", "app_pages", "benchmarks", "tests", "app")
HEAVY = ("torch", "sklearn", "scipy", "numba", "cvxpy", "pandas", "pyarrow", "plotly", "umap", "threadpoolctl",
         "safetensors", "streamlit", "kaleido", "playwright", "dask", "distributed", "joblib", "osqp", "clarabel")
SOURCES = sorted([*ROOT.joinpath("treeviz").rglob("*.py"), *ROOT.joinpath("models").rglob("*.py"),
                  *ROOT.joinpath("app_pages").rglob("*.py"), *ROOT.joinpath("benchmarks").rglob("*.py"),
                  ROOT / "app.py"])


def local_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import statement inside a function or method of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import):
                found += [(node.lineno, alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                found.append((node.lineno, "." * node.level + (node.module or "")))
    return sorted(set(found))


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_function_local_imports_only_defer_heavy_libraries(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    problems = []
    for line, module in local_imports(path):
        top = module.split(".")[0]
        if module.startswith(".") or top in PROJECT:
            problems.append(f"line {line}: imports the project module {module} inside a function")
        elif top not in HEAVY:
            problems.append(f"line {line}: {module} is not a heavy library; import it at the top")
        elif "deferred" not in lines[line - 1]:
            problems.append(f"line {line}: the deferred import of {module} does not say why ('# deferred: ...')")
    assert not problems, "\n".join(problems)


def test_the_checker_sees_function_local_imports(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import os\n\ndef f():\n    from treeviz import tree\n    import torch  # deferred: heavy\n")
    assert local_imports(sample) == [(4, "treeviz"), (5, "torch")]
