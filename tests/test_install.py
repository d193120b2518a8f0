"""The package installs as it is laid out: a wheel built from the checkout, installed into a fresh
virtual environment, gives the library, the app and the `treeviz` command from any folder.

The environment sees this interpreter's site-packages (the pinned dependencies are installed there
already, and the machine may be offline), but not the checkout: it runs in an empty folder, so
every import below comes from the installed wheel."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # builds a wheel and a virtual environment: seconds


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # no PYTHONPATH (the checkout) and no test-only plugin families (TREEVIZ_FAMILIES)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TREEVIZ_FAMILIES")}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A virtual environment with the wheel of this checkout installed, and an empty folder to run in."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"  # the checkout's files (tracked and new), so the build writes nothing here
    files = _run(["git", "ls-files", "-co", "--exclude-standard"], ROOT).stdout.splitlines()
    for name in files:
        path = ROOT / name
        if path.is_file() and not path.is_symlink():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base / "dist"),
          str(source)], base)
    env_dir = base / "env"
    venv.create(env_dir, system_site_packages=True)  # pip and setuptools: this interpreter's
    python = env_dir / "bin" / "python"
    wheel = next((base / "dist").glob("treeviz-*.whl"))
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], base)
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    return python, env_dir / "bin" / "treeviz", elsewhere, source


def test_the_library_the_app_and_the_sample_data_import_from_any_folder(installed):
    python, _, elsewhere, _ = installed
    code = """
import importlib.util, json, pathlib
import treeviz, models, app_pages
from models.registry import families
from treeviz.services.data import load_dataset
site = pathlib.Path(treeviz.__file__).parents[1]
print(json.dumps({"site": str(site), "families": sorted(families()),
                  "app": (site / "app.py").is_file(), "icon": (site / "treeviz/ui/assets/icon.png").is_file(),
                  "penguins": list(load_dataset("penguins").X.shape)}))
"""
    got = json.loads(_run([str(python), "-c", code], elsewhere).stdout.strip().splitlines()[-1])
    assert "site-packages" in got["site"] and not got["site"].startswith(str(ROOT)), got
    assert {"cart", "tao", "latent", "skinny", "dgt", "tree_embedding", "laptao"} <= set(got["families"])
    assert got["app"] and got["icon"] and got["penguins"][0] == 344, got


def test_the_treeviz_command_runs_and_starts_the_installed_app(installed):
    _, command, elsewhere, _ = installed
    usage = _run([str(command), "--help"], elsewhere).stdout
    assert "train" in usage and usage.startswith("usage: treeviz ")  # the command's own name, not python -m
    listed = json.loads(_run([str(command), "families", "--json"], elsewhere).stdout)
    assert "tao" in {f["key"] for f in listed}
    line = _run([str(command), "app", "--dry-run", "--", "--server.port", "8600"], elsewhere).stdout.split()
    app = Path(line[line.index("run") + 1])
    assert app.name == "app.py" and app.is_file() and "site-packages" in str(app)
    assert "--server.address=localhost" in line and "--client.showErrorDetails=type" in line
    assert line[-2:] == ["--server.port", "8600"]  # Streamlit's own options come last and win


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_from_another_folder_the_command_trains_the_face_imports_and_the_app_answers(installed, tmp_path):
    """What a user does first after `pip install`: train from the command line, import the public face,
    start the app (it answers on Streamlit's health address)."""
    python, command, elsewhere, _ = installed
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TREEVIZ_FAMILIES")}
    env["TREEVIZ_HOME"] = str(tmp_path / "home")
    trained = subprocess.run([str(command), "train", "--data", "iris", "--family", "tao"], cwd=elsewhere, env=env,
                             capture_output=True, text=True, timeout=600)
    assert trained.returncode == 0, trained.stderr[-2000:]
    assert "n_decision_nodes" in trained.stdout and list((tmp_path / "home" / "runs").iterdir())
    face = _run([str(python), "-c", "import treeviz as tv; print(tv.TAOClassifier)"], elsewhere).stdout
    assert "TAOClassifier" in face
    port = _free_port()
    server = subprocess.Popen([str(command), "app", "--", "--server.port", str(port), "--server.headless", "true"],
                              cwd=elsewhere, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline, answer = time.monotonic() + 240, ""
        while time.monotonic() < deadline and not answer:
            try:
                with urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=5) as reply:
                    answer = reply.read().decode()
            except OSError:
                assert server.poll() is None, "the app stopped before it answered"
                time.sleep(1)
        assert answer == "ok"
    finally:
        server.terminate()
        server.wait(timeout=60)
    # the command was the server itself: stopping it stopped the server (no orphan left answering)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://localhost:{port}/_stcore/health", timeout=5)


def test_an_editable_install_runs_the_checkout_itself(installed, tmp_path):
    _, _, elsewhere, source = installed
    env_dir = tmp_path / "editable"
    venv.create(env_dir, system_site_packages=True)  # pip and setuptools: this interpreter's
    python = env_dir / "bin" / "python"
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", str(source)], tmp_path)
    where = _run([str(python), "-c", "import treeviz, app_pages; print(treeviz.__file__, app_pages.__file__)"],
                 elsewhere).stdout.split()
    assert all(Path(w).is_relative_to(source) for w in where), where
    assert "train" in _run([str(env_dir / "bin" / "treeviz"), "--help"], elsewhere).stdout
