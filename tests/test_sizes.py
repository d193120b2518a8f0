"""The size rule: no module over 600 lines and no function over 120 lines in treeviz/, models/,
app_pages/, benchmarks/ and app.py. Long numba kernels are the one exception, and each is named in
ALLOWED below: a kernel is one compiled loop, so cutting it in pieces costs speed or clarity.
The counting lives in scripts/sizes.py (`python scripts/sizes.py` prints the same list)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("treeviz_sizes_script", ROOT / "scripts" / "sizes.py")
sizes = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = sizes  # dataclasses look the module up while building the class
_spec.loader.exec_module(sizes)

ALLOWED = sizes.ALLOWED


def test_no_module_or_function_is_over_its_limit():
    found = {item.name: item for item in sizes.long_things(ROOT)}
    problems = [f"{item.name}: {item.lines} lines" for name, item in found.items() if name not in ALLOWED]
    for name in ALLOWED:
        item = found.get(name)
        if item is None:
            problems.append(f"{name}: allow-listed but missing or no longer over {sizes.FUNCTION_LIMIT} lines")
        elif not item.numba:
            problems.append(f"{name}: allow-listed but not a numba kernel (@njit / @jit)")
    assert not problems, (f"{len(problems)} over the limits ({sizes.MODULE_LIMIT} lines a module, "
                          f"{sizes.FUNCTION_LIMIT} a function):\n" + "\n".join(problems))


def _lines(indent: int, count: int) -> str:
    return ("    " * indent + "x = 1\n") * count


def test_the_counter_sees_long_modules_methods_nested_functions_and_kernels(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.py").write_text(
        "import numba\n\n"
        f"class A:\n    def f(self):\n{_lines(2, 120)}\n"
        f"def g():\n    def inner():\n{_lines(2, 120)}{_lines(1, 1)}\n"
        f"@numba.njit(cache=True)\ndef k():\n{_lines(1, 120)}\n"
        f"def short():\n{_lines(1, 119)}\n"
        + "\n" * 200)
    (tmp_path / "app.py").write_text("")
    found = {item.name: (item.lines, item.numba) for item in sizes.long_things(tmp_path)}
    assert found == {
        "models/m.py": (found["models/m.py"][0], False),
        "models/m.py::A.f": (121, False),
        "models/m.py::g": (123, False),
        "models/m.py::g.inner": (121, False),
        "models/m.py::k": (121, True),
    }
    assert found["models/m.py"][0] > sizes.MODULE_LIMIT
