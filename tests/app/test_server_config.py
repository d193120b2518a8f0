"""The app's server listens on this machine only unless whoever starts it says otherwise: it has no
login, and its pages start jobs that read and write the run store (.streamlit/config.toml)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The most the server may take to answer its health check after it started, in seconds (about
#: five on a quiet machine; no time is asserted, this only ends a wait that would never end).
SERVER_START_S = 300


def streamlit_env() -> dict[str, str]:
    """This environment without Streamlit's own overrides (STREAMLIT_SERVER_ADDRESS, ...)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def outside_address() -> str | None:
    """This machine's address on its default route (a UDP socket's connect sends nothing), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = s.getsockname()[0]
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_configured_server_address_is_localhost():
    shown = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT, env=streamlit_env(),
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert 'address = "localhost"' in shown.splitlines()


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_app_answers_on_loopback_and_not_on_the_network(tmp_path):
    outside = outside_address()
    if outside is None:
        pytest.skip("this machine has no address besides loopback")
    port = free_port()
    env = {**streamlit_env(), "TREEVIZ_HOME": str(tmp_path)}
    with open(tmp_path / "streamlit.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
                                   "--server.headless", "true", "--server.fileWatcherType", "none"],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            assert server.poll() is None, (tmp_path / "streamlit.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                assert time.monotonic() < deadline, f"streamlit did not answer on 127.0.0.1 within {SERVER_START_S} s"
                time.sleep(0.3)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((outside, port), timeout=5).close()
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
