"""Cold start: how long the app takes, from ``streamlit run app.py``, to show the Data page.

Each round starts a fresh server (a new Python process, nothing imported yet) with a private,
empty run store, opens the app in Debian's chromium (``/usr/bin/chromium``, driven by
Playwright) and times:

* ``server_ready_s``: from the process start until the server answers its health check;
* ``first_render_s``: from the process start until the Data page's title and its data set summary
  are on screen (the first script run imports the app's modules: this is what a user waits for);
* ``render_after_ready_s``: the part of that after the server was ready (the first script run);
* ``second_render_s``: a second browser tab on the same server (the modules already imported).

The target is a first script run under 3 s on a 2-core machine (``render_after_ready_s``).
Nothing here imports the app: the server is a separate process, as for a user.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

NAME = "cold_start"
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TREEVIZ_CHROMIUM", "/usr/bin/chromium")
#: A first script run of the Data page within this many seconds meets the target.
TARGET_S = 3.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("streamlit exited before it answered")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"streamlit did not answer on {url} within {timeout:.0f} s")


def _render(browser, url: str) -> float:
    """Seconds until the Data page shows its title and the current data set's summary."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        start = time.perf_counter()
        page.goto(url)
        page.get_by_role("heading", name="Data").first.wait_for(timeout=120_000)
        page.get_by_text("Dataset:").first.wait_for(timeout=120_000)  # the sidebar's summary
        return time.perf_counter() - start
    finally:
        context.close()


def _round(browser) -> dict[str, float]:
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "TREEVIZ_HOME": home, "PYTHONUNBUFFERED": "1"}
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_healthy(url, proc)
            ready = time.perf_counter() - start
            first = _render(browser, url)
            second = _render(browser, url)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return {"server_ready_s": ready, "first_render_s": ready + first, "render_after_ready_s": first,
            "second_render_s": second}


def run(quick: bool = False) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright  # deferred: only this benchmark drives a browser

    if not Path(CHROMIUM).exists():
        raise RuntimeError(f"{CHROMIUM} is missing: `apt-get install chromium` (scripts/test.sh does).")
    rounds = 1 if quick else 5
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        try:
            measured = [_round(browser) for _ in range(rounds)]
        finally:
            browser.close()
    rows = [{"round": i + 1, **{k: round(v, 2) for k, v in m.items()}} for i, m in enumerate(measured)]
    keys = list(measured[0])
    median = {k: sorted(m[k] for m in measured)[len(measured) // 2] for k in keys}
    rows.append({"round": "median", **{k: round(v, 2) for k, v in median.items()}})
    results = {"rounds": rows, "median": median, "target_s": TARGET_S,
               "meets_target": median["render_after_ready_s"] <= TARGET_S,
               "load_average": os.getloadavg()[0]}
    return {"rows": rows, "results": results}
