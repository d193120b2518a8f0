"""A real browser against `streamlit run app.py`: server and chromium fixtures, failure screenshots.

Chromium is Debian's (`/usr/bin/chromium`, installed by scripts/test.sh); Playwright never
downloads a browser (that fails offline).

No browser test asserts a time. Every wait is for a state (a text shown, a figure drawn, the app
idle) with a limit far above what it needs on a quiet machine: :data:`WAIT_MS` for each Playwright
action and ``expect`` (set here for every page), :data:`TRAINING_MS` for a training or another job
to finish, so a machine ten times slower (or two busy loops on a 2-core machine) still passes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.conftest import ALL_CORES_ENV

ROOT = Path(__file__).resolve().parents[2]
#: The most a browser action or an ``expect`` waits for the page to get there, in milliseconds
#: (Playwright's own defaults, 30 s and 5 s, fail on a loaded machine).
WAIT_MS = 300_000
#: The most a test waits for a training (or another background job) to finish, in milliseconds.
TRAINING_MS = 600_000
#: The most the app's server may take to answer its health check after it started, in seconds.
SERVER_START_S = 300
expect.set_options(timeout=WAIT_MS)
CHROMIUM = os.environ.get("TREEVIZ_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("TREEVIZ_E2E_ARTIFACTS", ROOT / "tests" / "e2e" / "artifacts"))
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


@contextmanager
def on_all_cores() -> Iterator[None]:
    """Processes started inside this block run on every core of the test session. A pytest-xdist
    worker is pinned to its share of the cores (tests/conftest.py), and its children inherit the
    pin: without this, the app's server, chromium and the test would share one core while the
    other cores may be idle (as at the end of a run, when one worker is left)."""
    cores = os.environ.get(ALL_CORES_ENV, "")
    if not cores or not hasattr(os, "sched_setaffinity"):
        yield
        return
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {int(c) for c in cores.split(",")})
    try:
        yield
    finally:
        os.sched_setaffinity(0, pinned)


_LOGS: list[Path] = []  # the streamlit logs of this session's servers, newest last


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as err:
        return f"could not be read: {err}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """`streamlit run app.py` on 127.0.0.1 with a private run store; yields its URL."""
    yield from serve_store(tmp_path_factory.mktemp("treeviz-home"))


def serve_store(home: Path):
    """`streamlit run app.py` on 127.0.0.1 with the run store ``home`` (a test may fill it first);
    yields its URL and stops the server afterwards. Its log goes to ``tests/e2e/artifacts/``."""
    port = _free_port()
    env = {**os.environ, "TREEVIZ_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    log_path = ARTIFACTS / f"streamlit-{port}.log"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _LOGS.append(log_path)
    with open(log_path, "w") as log:
        yield from _serve(log, log_path, port, env)


def _serve(log, log_path, port: int, env: dict):
    with on_all_cores():
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early; see {log_path}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        raise RuntimeError(f"streamlit did not answer on {url} within {SERVER_START_S} s; see {log_path}")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `bash scripts/test.sh`, which installs Debian's chromium.")
    from playwright.sync_api import sync_playwright

    with on_all_cores():  # playwright's driver and chromium start here
        p = sync_playwright().start()
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        except BaseException:
            p.stop()
            raise
    try:
        yield b
    finally:
        b.close()
        p.stop()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(WAIT_MS)
    request.node._page = pg
    yield pg
    context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """On a failed browser test, save a full-page screenshot to tests/e2e/artifacts/ and put the page's
    text and the end of the server's log in the report (CI shows the report, not the artifacts)."""
    outcome = yield
    report = outcome.get_result()
    pg = getattr(item, "_page", None)
    if report.when == "call" and report.failed and pg is not None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{item.name}.png"
        try:
            pg.screenshot(path=str(path), full_page=True)
            report.sections.append(("screenshot", str(path)))
        except Exception as err:
            report.sections.append(("screenshot", f"could not be saved: {err}"))
        try:
            report.sections.append(("page text", pg.inner_text("body", timeout=5_000)[-4000:]))
        except Exception as err:
            report.sections.append(("page text", f"could not be read: {err}"))
        if _LOGS:
            report.sections.append(("streamlit log (end)", _tail(_LOGS[-1], 80)))


# ---------------------------------------------------------------------------- helpers of the page tours

#: The app's script is not running.
IDLE = "() => !document.querySelector('[data-testid=\"stStatusWidgetRunningIcon\"]')"
#: Every figure on the page has been drawn by plotly.js.
DRAWN = ("() => [...document.querySelectorAll('.js-plotly-plot')].every(d => d.querySelector('.main-svg'))"
         " && [...document.querySelectorAll('[data-testid=stPlotlyChart]')].every(c => c.querySelector('.main-svg'))")


def watch_requests(context, allowed: tuple[str, ...]) -> list[str]:
    """Intercept every request of ``context``: those whose address starts with one of ``allowed``
    go through, the others are recorded and refused (no test waits on a name lookup)."""
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith(allowed):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    return outside


def settled(page) -> None:
    """The script is idle and every figure on the page is drawn."""
    page.wait_for_function(IDLE, timeout=WAIT_MS)
    page.wait_for_function(DRAWN, timeout=WAIT_MS)


def open_page(page, title: str) -> None:
    """Go to a page through the sidebar's navigation, as a user does, and wait until it is drawn."""
    more = page.get_by_test_id("stSidebarNavViewButton")  # past twelve pages Streamlit folds the last ones
    if more.count() and "more" in more.inner_text():
        more.click()
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()
    settled(page)
