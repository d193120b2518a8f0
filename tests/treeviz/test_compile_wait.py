"""No hidden compile wait (issue 52, item 1): numba's compile time is measured apart and left out
of a fit's stored time, a job says when it compiles, and ``treeviz warmup`` fills numba's cache
with the kernels a real training uses."""

from __future__ import annotations

import io
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numba
import pytest
from numba.core import event
from numba.core.compiler_lock import global_compiler_lock

from models.dgt.bandit import kernels
from models.ground import compilation
from models.registry import get_family
from tests.app.conftest import new_app
from treeviz.cli.main import main
from treeviz.cli.progress import COMPILING_NOTE, ProgressBar
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments import training
from treeviz.services.experiments import warmup as warm
from treeviz.services.jobs import warmup as background
from treeviz.services.jobs import worker_process
from treeviz.services.jobs.manager import COMPILING, JobManager
from treeviz.services.store.runs import RunStore
from treeviz.ui.job_panel import COMPILING_TEXT, bar_text

#: Seconds a fake compilation adds to the clock: far more than any of the fits below take.
FAKE_COMPILE_S = 1000.0


@pytest.fixture
def fake_clock(monkeypatch):
    """``time.perf_counter`` that a fake compilation moves :data:`FAKE_COMPILE_S` ahead."""
    offset = [0.0]
    real = time.perf_counter
    monkeypatch.setattr(time, "perf_counter", lambda: real() + offset[0])
    return offset


def fake_compile(clock: list[float]) -> None:
    """What numba does around a compilation (its compiler lock, its compile event), with the clock
    moved ahead."""
    with global_compiler_lock, event.trigger_event("numba:compile", data={"dispatcher": None}):
        clock[0] += FAKE_COMPILE_S


def test_the_clock_counts_each_outermost_compilation_once():
    @numba.njit(cache=False)
    def inner(x):
        return x * 2.0

    @numba.njit(cache=False)
    def outer(x):
        return inner(x) + 1.0

    seen = []
    with compilation.watching(seen.append) as clock:
        assert outer(1.0) == 3.0
        outer(2.0)  # compiled already: nothing more
    assert clock.count == 1  # inner compiles inside outer's compilation
    assert clock.seconds >= clock.compile_seconds > 0  # under the compiler lock: compiling, and more
    assert seen == [True, False] and not clock.active
    with compilation.watching() as again:
        outer(3.0)
    assert again.count == 0 and again.seconds == 0.0


def test_another_threads_compilation_is_not_counted(fake_clock):
    with compilation.watching() as clock:
        other = threading.Thread(target=fake_compile, args=(fake_clock,))
        other.start()
        other.join()
    assert clock.count == 0 and clock.seconds == 0.0


def test_the_stored_duration_leaves_the_compilation_out(tmp_path, monkeypatch, fake_clock):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    estimator = training.build_estimator("cart", "classification", {}, prepared)
    real_fit = estimator.fit

    def fit_that_compiles(*args, **kwargs):
        fake_compile(fake_clock)
        return real_fit(*args, **kwargs)

    estimator.fit = fit_that_compiles
    monkeypatch.setattr(training, "build_estimator", lambda *a, **k: estimator)
    record = training.train_run("cart", "classification", {}, prepared, store=RunStore(tmp_path / "runs"))
    assert fake_clock[0] == FAKE_COMPILE_S  # the compilation ran inside the fit
    assert 0.0 <= record.duration_s < FAKE_COMPILE_S


def test_a_batch_fit_leaves_the_compilation_out(monkeypatch, fake_clock):
    class Batch:
        @staticmethod
        def fit_together(estimators, X, y, **kwargs):
            fake_compile(fake_clock)
            return [None] * len(estimators)

    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    errors, seconds = training.fit_together([Batch(), Batch()], "classification", prepared)
    assert errors == [None, None] and 0.0 <= seconds < FAKE_COMPILE_S


@dataclass(frozen=True)
class CompilingJob:
    """A job whose fit compiles (a fake compilation that waits for ``gate``, a file in a child
    process or an event in a thread) between two records."""

    gate: str

    def __call__(self, progress):
        callback = training.ProgressCallback(progress)
        callback.on_train_begin(None, total=2)
        callback.on_epoch_end(None, record={"epoch": 1})
        with compilation.watching(training._compile_notice(None, [callback])):
            with global_compiler_lock, event.trigger_event("numba:compile", data={"dispatcher": None}):
                deadline = time.monotonic() + 120
                while not Path(self.gate).exists() and time.monotonic() < deadline:
                    time.sleep(0.02)
        callback.on_epoch_end(None, record={"epoch": 2})
        return "compiled"


def _wait_for(job, phase, timeout=600):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = job.snapshot()
        if snap.phase == phase or snap.done:
            return snap
        time.sleep(0.02)
    return job.snapshot()


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_the_progress_text_says_a_kernel_compiles(tmp_path, processes):
    if processes and not worker_process.SUPPORTED:
        pytest.skip("no worker processes on this platform")
    gate = tmp_path / "compiled"
    manager = JobManager(processes=processes)
    try:
        job = manager.submit(CompilingJob(str(gate)), label="latent trees on iris")
        snap = _wait_for(job, COMPILING)
        assert snap.status == "running" and snap.phase == COMPILING
        assert bar_text(snap).endswith(COMPILING_TEXT)  # "running · 3.1 s · compiling the numba kernels …"
        gate.touch()
        assert job.wait(600) and job.status == "finished"
        done = job.snapshot()
        assert done.phase is None and COMPILING_TEXT not in bar_text(done)
    finally:
        manager.shutdown()


def test_the_command_lines_bar_says_a_kernel_compiles():
    out = io.StringIO()
    bar = ProgressBar(get_family("tao"), enabled=True, file=out)
    bar.on_train_begin(None, total=3)
    with compilation.watching(training._compile_notice(None, [bar])):
        fake_compile([0.0])
        assert COMPILING_NOTE in out.getvalue()
    bar.on_train_end(None)


def test_warmup_compiles_what_a_real_training_uses(capsys):
    assert main(["warmup", "dgt_bandit"]) == 0
    out = capsys.readouterr().out
    assert "dgt_bandit (classification, two classes)" in out and "warm-up done" in out
    assert kernels.tree_forward.signatures and kernels.rmsprop.signatures
    prepared = prepare(load_dataset("wine"), PrepConfig(seed=1))
    with compilation.watching() as clock:  # another table, the full default training
        training.train_run("dgt_bandit", "classification", {"n_rounds": 500}, prepared)
    assert clock.count == 0


def test_warmup_plans_every_task_of_every_family():
    planned = warm.plan()
    assert {key for key, _, _ in planned} == set(warm.registry.families())
    assert ("tao", "classification", "two classes") in planned
    assert ("tao", "classification", "three classes") in planned
    assert ("latent", "clustering", "three classes") in planned
    assert ("tree_embedding", "embedding", "three classes") in planned


def test_warmup_refuses_an_unknown_family(capsys):
    assert main(["warmup", "no_such_family"]) == 1
    assert "Unknown family 'no_such_family'" in capsys.readouterr().err


def test_the_app_starts_the_background_warmup_once_per_process(monkeypatch):
    monkeypatch.setattr(background, "_state", {"thread": None, "status": "not started"})
    monkeypatch.setattr(background, "command", lambda: [sys.executable, "-c", "pass"])
    monkeypatch.setenv(background.WARMUP_ENV, "1")
    assert background.start_background() is True
    assert background.start_background() is False
    assert background.wait(120) and background.status() == "done"


def test_the_background_warmup_can_be_turned_off(monkeypatch):
    monkeypatch.setattr(background, "_state", {"thread": None, "status": "not started"})
    monkeypatch.setenv(background.WARMUP_ENV, "0")
    assert background.start_background() is False and background.status() == "not started"


def test_the_app_warms_its_jobs_after_the_page(home, monkeypatch):
    """Jobs in threads (the tests' setting): the background warm-up child; jobs in child processes
    (the app's default): the job manager primed with the in-worker warm-up; off: neither."""
    calls = []
    monkeypatch.setattr(background, "start_background", lambda: calls.append("start") or True)
    monkeypatch.setattr(JobManager, "prime", lambda self, warm=None: calls.append(("prime", warm)) or True)
    monkeypatch.setenv(background.WARMUP_ENV, "1")
    at = new_app().run()
    assert not at.exception and at.title and calls == ["start"]  # the page rendered, and the warm-up began
    assert background.CHILD_MODULE == warm.__name__
    monkeypatch.setenv("TREEVIZ_JOB_PROCESSES", "1")
    calls.clear()
    new_app().run()
    assert calls == [("prime", warm.warm_in_worker)]
    monkeypatch.setenv(background.WARMUP_ENV, "0")
    calls.clear()
    new_app().run()
    assert calls == []
