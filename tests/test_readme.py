"""The README's Python example runs as written and prints what the README says it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_blocks(language: str) -> list[str]:
    """The fenced blocks of README.md whose opening fence names ``language`` ("" for none)."""
    blocks, current, fence = [], [], None
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if fence is None and line.startswith("```"):
            fence, current = line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            if fence == language:
                blocks.append("\n".join(current) + "\n")
            fence = None
        elif fence is not None:
            current.append(line)
    return blocks


def run_block(code: str, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "TREEVIZ_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT),
           "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_readme_feature_selection_example_runs(tmp_path):
    (code,) = [b for b in readme_blocks("python") if "budget_search" in b]
    printed = run_block(code, tmp_path).stdout.splitlines()
    assert printed[0].startswith("[") and len(printed) == 2


def test_the_readme_example_runs_and_prints_the_documented_lines(tmp_path):
    (code,) = [b for b in readme_blocks("python") if "CARTClassifier" in b]
    (expected,) = [b for b in readme_blocks("") if "test accuracy" in b]
    done = run_block(code, tmp_path)
    printed = done.stdout.splitlines()
    for line in expected.splitlines():
        if line.strip() and line.strip() != "...":
            assert line in printed, f"the README says the example prints {line!r}; it printed:\n{done.stdout}"
    assert (tmp_path / "tree.html").stat().st_size > 10_000


def test_the_readme_public_face_example_runs(tmp_path):
    (code,) = [b for b in readme_blocks("python") if "import treeviz as tv" in b]
    printed = run_block(code, tmp_path).stdout.splitlines()
    assert sum(line.startswith("IF ") for line in printed) >= 2  # the rules, one a leaf
    assert printed[-1].startswith("[") and (tmp_path / "tao_model.zip").is_file()  # the reloaded model predicts


def test_using_it_from_python_names_only_the_public_face():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Using it from Python"):]
    section = section[:section.index("\n## ", 1)]
    code = [line.strip() for line in section.splitlines()]
    imports = [line for line in code if line.startswith(("import ", "from "))]
    assert imports == ["import treeviz as tv"], imports
    assert "models." not in section and "treeviz.services" not in section and "treeviz.readers" not in section
