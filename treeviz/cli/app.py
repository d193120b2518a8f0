"""``app``: start the Streamlit app (``treeviz app`` is ``streamlit run app.py`` with the app's settings).

The app's entry point ``app.py`` sits beside the ``treeviz`` package, in the repository and in an
installed package alike, and its Streamlit settings are the package's ``treeviz/ui/streamlit_config.toml``
(which the repository's ``.streamlit/config.toml`` links to): each is passed as a ``--section.key``
flag, so the settings hold from any working directory. Streamlit's own options may follow ``--``
(``treeviz app -- --server.port 8600``) and win over these.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from models.ground.errors import TreevizError
from treeviz.cli.common import OK, say

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Start the app in a browser (streamlit run app.py, with the app's settings)."

_PACKAGE = Path(__file__).resolve().parents[1]
#: The app's entry point, beside the treeviz package.
APP = _PACKAGE.parent / "app.py"
#: The app's Streamlit settings.
SETTINGS = _PACKAGE / "ui" / "streamlit_config.toml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``app [--dry-run] [-- STREAMLIT OPTIONS ...]``."""
    parser.add_argument("--dry-run", action="store_true", help="print the command instead of running it")
    parser.add_argument("streamlit_args", nargs=argparse.REMAINDER, metavar="-- OPTIONS",
                        help="options passed on to `streamlit run` (after --), e.g. -- --server.port 8600")


def settings_flags(path: Path = SETTINGS) -> list[str]:
    """Every setting of the app's Streamlit config file as ``--section.key=value`` flags."""
    config = tomllib.loads(path.read_text(encoding="utf-8"))
    flags = []
    for section, values in config.items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


def app_command(extra: list[str]) -> list[str]:
    """The command that starts the app: this Python's ``-m streamlit run app.py`` with the settings,
    then ``extra`` (Streamlit's options, which win)."""
    if not APP.is_file():
        raise TreevizError(f"The app's entry point {APP} is missing; reinstall treeviz (pip install .).")
    return [sys.executable, "-m", "streamlit", "run", str(APP), *settings_flags(), *extra]


def launch(command: list[str]) -> int:
    """Run the app's command until the server stops; its exit status. On POSIX this process becomes
    the server (``exec``), so a signal that stops ``treeviz app`` (a service manager's SIGTERM, a
    test's ``terminate``) reaches the server itself instead of leaving it running orphaned."""
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(command[0], command)
    return subprocess.call(command)


def cmd_app(args: argparse.Namespace) -> int:
    """``app``: run ``streamlit run app.py`` until it ends (Ctrl-C stops it)."""
    extra = [a for a in args.streamlit_args if a != "--"]
    command = app_command(extra)
    if args.dry_run:
        say(" ".join(command))
        return OK
    return launch(command)
