"""Import rules the layer contract cannot see.

`lint-imports` (configured in pyproject.toml, run by scripts/test.sh) checks that no module imports
a higher layer, including imports written inside functions. This test adds the rule for those
function-local imports: one may only defer a heavy third-party library, never import a project
module (that is how an upward import hides), and it must say so in a comment containing
"deferred" on the same line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from models.registry import families

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("treeviz", "models", "app_pages", "benchmarks", "tests", "app")
HEAVY = ("torch", "sklearn", "scipy", "numba", "cvxpy", "pandas", "pyarrow", "plotly", "umap", "threadpoolctl",
         "safetensors", "streamlit", "kaleido", "playwright", "dask", "distributed", "joblib", "osqp", "clarabel",
         # openTSNE imports scikit-learn and SciPy: 1.4 s
         "openTSNE",
         # benchmark baselines absent from the GPU machine, where the benchmarks' device mode runs
         "xgboost", "lightgbm", "imodels")
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


def _contracts() -> list[dict]:
    import tomllib  # deferred: only this test reads the configuration

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_every_module_sits_in_a_layer_folder_that_a_contract_names():
    """The import contracts name packages, so a module is in its layer because of the folder it sits
    in. That holds only if treeviz's top level, and the services' top level, hold nothing but their
    layer folders (a module left beside them would escape every rule), and if each layers contract
    names exactly those folders."""
    contracts = _contracts()
    for container, allowed in (("treeviz", {"__init__.py", "__main__.py"}), ("treeviz.services", {"__init__.py"})):
        inner = next(c for c in contracts if c["type"] == "layers" and c.get("containers") == [container])
        layer_names = {m.strip() for layer in inner["layers"] for m in re.split(r"[|:]", layer)}
        folder = ROOT.joinpath(*container.split("."))
        folders = {p.parent.name for p in folder.glob("*/__init__.py")}
        assert folders == layer_names, f"each folder of {container} is one layer in pyproject.toml's contract"
        loose = {p.name for p in folder.glob("*.py")} - allowed
        assert loose == set(), f"move {sorted(loose)} into the folder of its layer (or room) in {container}"
    top = next(c for c in contracts if c["type"] == "layers" and not c.get("containers"))
    packages = {m.strip() for layer in top["layers"] for m in re.split(r"[|:]", layer)}
    roots = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert roots == packages, "each top-level package is one layer of the top-level contract"
    ground = next(c for c in contracts if c.get("source_modules") == ["models.ground"])
    assert ground["forbidden_modules"] == ["models"]


def _code_strings(tree: ast.AST) -> list[str]:
    """The string constants of a module that are code, not docstrings."""
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_the_frame_names_no_family():
    """treeviz/ reads families through the registry and their declarations: no module of it names a
    built-in family's key in code (docstring examples may), so a family is added in models/ alone."""
    keys = set(families())
    found = {str(path.relative_to(ROOT)): sorted(keys & set(_code_strings(ast.parse(path.read_text()))))
             for path in sorted((ROOT / "treeviz").rglob("*.py"))}
    assert not {k: v for k, v in found.items() if v}
