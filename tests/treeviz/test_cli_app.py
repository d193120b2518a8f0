"""`treeviz app`: streamlit run app.py with every one of the app's settings, from any folder."""

from __future__ import annotations

import tomllib
from pathlib import Path

from treeviz.cli import app
from treeviz.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_command_runs_app_py_with_every_setting_and_the_users_options_last(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # from another folder: nothing is read relative to it
    assert main(["app", "--dry-run", "--", "--server.port", "8600"]) == 0
    words = capsys.readouterr().out.split()
    assert words[words.index("run") + 1] == str(ROOT / "app.py")
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    expected = {f"--{s}.{k}={str(v).lower() if isinstance(v, bool) else v}" for s, kv in settings.items()
                for k, v in kv.items()}
    assert expected <= set(words) and "--server.address=localhost" in expected
    assert words[-2:] == ["--server.port", "8600"]


def test_the_repositorys_streamlit_config_is_the_packages_file():
    link = ROOT / ".streamlit" / "config.toml"
    assert link.is_symlink() and link.resolve() == app.SETTINGS.resolve()


def test_without_dry_run_the_app_command_launches_streamlit_and_returns_its_status(monkeypatch):
    launched = []
    monkeypatch.setattr(app, "launch", lambda command: launched.append(command) or 3)
    assert main(["app"]) == 3
    (command,) = launched
    assert command[1:4] == ["-m", "streamlit", "run"] and command[4] == str(ROOT / "app.py")
