"""Test-wide setup.

The test-only stump family (``tests/families/stump``) is registered the way a family living outside
this repository would be, through ``TREEVIZ_FAMILIES``. So the contract test
(``tests/test_contract.py``) and the app tests cover a family that the frame has never heard of:
if a new family needed an edit in ``treeviz/``, ``app_pages/`` or ``models/registry.py``, the
stump's tests would fail.

The app's training jobs run in threads during the tests (``TREEVIZ_JOB_PROCESSES=0``, set by the
``home`` fixture unless the variable is already set): one job manager for the whole session
(:func:`treeviz.ui.state.thread_jobs`), so an app flow does not pay for starting a worker process
(which imports torch) and stopping it again. After each test ``home`` cancels the jobs still
running, waits for them and forgets every job, so no job of one test shows on another test's
pages. A test that needs the real child processes asks for the ``jobs_in_processes`` fixture.
"""

import os
from pathlib import Path

#: The repository root: ``covered_by`` paths start here.
ROOT = Path(__file__).resolve().parents[1]


#: The cores this test session may use, comma-separated, as they were before the pinning below
#: (unset when this process was not pinned): the browser tests start the app's server and chromium
#: on all of them (:func:`tests.e2e.conftest.on_all_cores`).
ALL_CORES_ENV = "TREEVIZ_TEST_ALL_CORES"


def _pin_this_test_worker() -> None:
    """Under pytest-xdist (``-n N``), keep this worker process to its own share of the cores, as
    if it ran on a machine of its own: the thread budget (:mod:`models.ground.threads`) reads the
    cores a process may run on, so each worker's torch, OpenMP and numba pools then fit its share
    instead of every worker starting a thread per core and all of them oversubscribing the CPU.
    Must run before torch or any OpenMP runtime is loaded, hence at the top of this module."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if not worker.startswith("gw") or count < 2 or not hasattr(os, "sched_setaffinity"):
        return
    cores = sorted(os.sched_getaffinity(0))
    share = cores[int(worker[2:]) % count::count]
    if len(cores) >= count and share:
        os.environ[ALL_CORES_ENV] = ",".join(map(str, cores))
        os.sched_setaffinity(0, share)


_pin_this_test_worker()

import pytest  # noqa: E402  after the pinning above, which must precede torch and OpenMP
import streamlit as st  # noqa: E402

from models import registry  # noqa: E402
from treeviz.services.jobs.manager import JobManager  # noqa: E402
from treeviz.services.store.record import RunRecord  # noqa: E402
from treeviz.ui import state  # noqa: E402

STUMP_MODULE = "tests.families.stump.family"
_extra = [m for m in os.environ.get(registry.PLUGINS_ENV, "").split(",") if m.strip()]
if STUMP_MODULE not in _extra:
    os.environ[registry.PLUGINS_ENV] = ",".join([*_extra, STUMP_MODULE])
# the app's background numba warm-up (treeviz.services.jobs.warmup) stays off: the app tests and
# the browser tests' servers would each start one; tests/treeviz/test_compile_wait.py checks it
os.environ.setdefault("TREEVIZ_WARMUP", "0")
registry.reload()


#: Seconds a cancelled job may take to end at the end of a test before the test fails: a limit on a
#: wait for a state (a job stops at its next check, within seconds on a quiet machine), far above
#: what it needs, not a time the test asserts.
JOB_END_S = 600.0


def end_jobs(manager: JobManager) -> None:
    """Cancel the jobs of ``manager`` still queued or running, wait for them and forget every job;
    fail if one did not end (it would still be running during the next test)."""
    for job in manager.active():
        manager.cancel(job.id)
    stuck = [job.label for job in manager.active() if not job.wait(JOB_END_S)]
    for job in manager.jobs():
        if job.done:
            manager.forget(job.id)
    assert not stuck, f"jobs still running {JOB_END_S:g} s after their cancel: {stuck}"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private run store (``TREEVIZ_HOME``) for one test, the app's jobs in the shared threads
    (unless ``TREEVIZ_JOB_PROCESSES`` is set); Streamlit's caches cleared and the app's jobs ended
    and forgotten after the test, so nothing leaks between tests."""
    root = tmp_path / "treeviz-home"
    monkeypatch.setenv("TREEVIZ_HOME", str(root))
    if state.JOB_PROCESSES_ENV not in os.environ:
        monkeypatch.setenv(state.JOB_PROCESSES_ENV, "0")
    st.cache_resource.clear()
    st.cache_data.clear()
    yield root
    try:
        end_jobs(state.thread_jobs())  # the shared manager's threads stay for the next test
    finally:
        # the app's process manager of this test (cached: a new one, without workers, otherwise)
        # ends with it, its child processes too
        state.process_jobs().shutdown()
        st.cache_resource.clear()


@pytest.fixture
def parsed(monkeypatch):
    """The run ids of every run record parsed (``RunRecord.from_dict``) from now on: what a test of
    the run store's record cache counts."""
    seen: list[str] = []
    real = RunRecord.from_dict.__func__

    def counting(cls, data):
        record = real(cls, data)
        seen.append(record.run_id)
        return record

    monkeypatch.setattr(RunRecord, "from_dict", classmethod(counting))
    return seen


@pytest.fixture
def jobs_in_processes(home, monkeypatch):
    """The app runs its jobs in child processes, as it does outside the tests."""
    monkeypatch.setenv(state.JOB_PROCESSES_ENV, "1")
    return home


def deep_only_counterpart(item: pytest.Item) -> str | None:
    """Why ``item``, marked ``deep``, may stay out of CI: None when its ``covered_by`` names a test
    that exists (``path::name``, from the repository root) and is not itself ``deep``; otherwise the
    sentence saying what is wrong."""
    mark = item.get_closest_marker("deep")
    target = mark.kwargs.get("covered_by", "") if mark else ""
    path, _, name = target.partition("::")
    file = ROOT / path
    if not path or not name or not file.is_file():
        return f"{item.nodeid} is marked deep but covered_by={target!r} names no test file::test."
    source = file.read_text()
    at = source.find(f"def {name}(")
    if at < 0:
        return f"{item.nodeid}: covered_by names {target}, and {path} has no test {name}."
    if "mark.deep" in source[max(0, source.rfind("\n\n\n", 0, at)):at]:
        return f"{item.nodeid}: covered_by names {target}, which is itself deep-only."
    return None


@pytest.hookimpl(tryfirst=True)  # before `-m "not deep"` deselects them
def pytest_collection_modifyitems(config, items):
    """Every ``deep`` test (run only by ``scripts/test.sh --deep``) names, in ``covered_by``, the test
    that asserts the same behaviour in every tier; a missing or wrong name stops the session."""
    wrong = [why for item in items if item.get_closest_marker("deep") and (why := deep_only_counterpart(item))]
    if wrong:
        raise pytest.UsageError("\n".join(wrong))
