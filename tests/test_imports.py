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

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("treeviz", "models", "app_pages", "benchmarks", "tests", "app")
HEAVY = ("torch", "sklearn", "scipy", "numba", "cvxpy", "pandas", "pyarrow", "plotly", "umap", "threadpoolctl",
         "safetensors", "streamlit", "kaleido", "playwright", "dask", "distributed", "joblib", "osqp", "clarabel",
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


def test_every_treeviz_module_sits_in_a_layer_and_every_service_in_the_no_streamlit_contract():
    """The layer contract names treeviz's modules one by one, so a new module left out of it would
    escape every import rule without a word: each top-level module or package of treeviz must be in
    a layer, and each one in the services layer must also be forbidden Streamlit and plotly."""
    contracts = _contracts()
    layers = next(c for c in contracts if c["type"] == "layers")["layers"]
    named = [{m.strip() for m in re.split(r"[|:]", layer)} for layer in layers]
    modules = {f"treeviz.{p.stem}" for p in (ROOT / "treeviz").glob("*.py") if p.stem not in ("__init__", "__main__")}
    modules |= {f"treeviz.{p.parent.name}" for p in (ROOT / "treeviz").glob("*/__init__.py")}
    in_layers = set().union(*named)
    assert sorted(modules - in_layers) == [], "add these modules to a layer in pyproject.toml"
    services = next(layer for layer in named if "treeviz.services.training" in layer)
    no_streamlit = next(c for c in contracts if c["type"] == "forbidden" and "streamlit" in c["forbidden_modules"]
                        and "models" in c["source_modules"])
    assert sorted(services - set(no_streamlit["source_modules"])) == [], \
        "add these services to the 'no Streamlit or plotly' contract in pyproject.toml"
