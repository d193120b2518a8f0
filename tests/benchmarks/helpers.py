"""What the benchmark tests share: a benchmark run through the runner in --quick mode into a
temporary results folder, the shared data a test needs (or a skip that says what is missing), and
a Python process in which the optional packages a bare GPU machine lacks cannot be imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.common import shared_data_dir
from benchmarks.report import run

ROOT = Path(__file__).resolve().parents[2]
#: What a bare GPU machine lacks; the device mode never imports them.
OPTIONAL = ("cvxpy", "osqp", "xgboost", "lightgbm", "umap", "streamlit", "plotly", "kaleido")


def quick_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    """(what ``python -m benchmarks.report.run NAME --quick`` printed, the results file it wrote)
    with the results folder in ``tmp_path``."""
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    assert run.main([name, "--quick"]) == 0
    payload = json.loads((tmp_path / f"{name}.json").read_text())
    assert payload["benchmark"] == name and payload["quick"] is True
    return capsys.readouterr().out, payload


def require_shared_data(needed: tuple[str, ...], what: str) -> Path:
    """The shared data folder, or a skip naming what is absent (``what`` says who needs it)."""
    root = shared_data_dir()
    if root is None:
        pytest.skip(f"shared reference data folder absent (../shared/data or TREEVIZ_SHARED_DATA): {what}")
    missing = [p for p in needed if not (root / p).is_file()]
    if missing:
        pytest.skip(f"shared reference data incomplete at {root}: missing {', '.join(missing)}")
    return root


def without_optional_packages(code: str, timeout: float) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python, in the repository, where importing any of :data:`OPTIONAL`
    raises ImportError."""
    block = (
        "import importlib.abc, sys\n"
        f"BLOCK = {set(OPTIONAL)!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in BLOCK:\n"
        "            raise ImportError('blocked ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    return subprocess.run([sys.executable, "-c", block + code], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
