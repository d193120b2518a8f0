"""The Train page with a long job: the time left in the progress bar, "cancelling…" with the button
disabled right after Cancel, "cancelled" once the job stopped; and the warning before a minutes-long fit.

The job is a stand-in (a closure, so it runs in the app's worker thread) that waits on an event
between steps, and the jobs' clock is a fake one, so the states are held for as long as the test
looks at them and the time left is exact.
"""

from __future__ import annotations

import threading
import time

import pytest

import treeviz.services.experiments.training
from models.ground.errors import TrainingCancelled
from tests.app.conftest import WAIT_S, assert_clean, new_app, open_page, shown, texts, wait_for_job
from treeviz.services.jobs import manager as jobs

#: The most a wait here lasts, and how long the stand-in job holds at most (tests/app/conftest.py).
TIMEOUT = WAIT_S


def progress_texts(at) -> list[str]:
    return [shown(p.proto.text) for p in at.get("progress")]


def rerun_until(at, predicate, timeout: float = TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        if predicate(at):
            return at
        time.sleep(0.1)
    raise AssertionError(f"the page did not get there in time; progress: {progress_texts(at)}")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_train_page_shows_the_time_left_then_cancelling_then_cancelled(home, monkeypatch, request):
    now = [1000.0]
    monkeypatch.setattr(jobs, "_now", lambda: now[0])
    five_done, gate = threading.Event(), threading.Event()
    request.addfinalizer(gate.set)  # a failed check must not leave the job held for TIMEOUT

    def gated_job_fn(*args, **kwargs):
        def fn(progress):
            progress.begin(10)
            for epoch in range(5):
                progress.record({"epoch": epoch + 1, "loss": 1.0 / (epoch + 1)})
            five_done.set()
            gate.wait(TIMEOUT)  # a long step that checks nothing
            try:
                progress.record({"epoch": 6, "loss": 0.1})  # the cancel acts here
            except TrainingCancelled:
                return None
            return None

        return fn

    monkeypatch.setattr(treeviz.services.experiments.training, "job_fn", gated_job_fn)
    at = new_app()
    at.run()
    open_page(at, "train")
    at.button(key="train.start").click().run()
    assert five_done.wait(TIMEOUT)
    now[0] += 20.0  # half the epochs in 20 s: about 20 s left
    rerun_until(at, lambda at: any("about 20 s left" in t for t in progress_texts(at)))
    assert progress_texts(at)[0] == "running · 20.0 s · about 20 s left"
    assert not at.button(key="train.cancel").disabled

    at.button(key="train.cancel").click().run()
    assert_clean(at)
    [text] = progress_texts(at)
    assert text.startswith("cancelling… · ") and "stopping at the next check" in text
    assert at.button(key="train.cancel").disabled and at.button(key="train.cancel").label == "Cancelling…"

    gate.set()  # the job reaches its check and stops: the page says so with no click
    wait_for_job(at)
    assert_clean(at)
    assert any("cancelled" in w for w in texts(at.warning))
    assert not any("cancelling" in t for t in progress_texts(at))
    assert "train.cancel" not in [b.key for b in at.button]


def test_the_train_page_warns_before_the_tree_embedding_defaults_on_digits(home):
    at = new_app()
    at.run()
    at.selectbox(key="data.sample").set_value("digits").run()
    open_page(at, "train")
    assert not [w for w in texts(at.warning) if "may take" in w]  # CART: seconds at most
    at.selectbox(key="train.family").set_value("tree_embedding").run()
    assert_clean(at)
    [warning] = [w for w in texts(at.warning) if "may take" in w]
    assert warning.startswith("Tree embedding (t-SNE / EE) with these settings may take about ")
    assert "rough estimate" in warning and "'quick' preset" in warning
    at.selectbox(key="train.preset.tree_embedding").set_value("quick").run()
    assert not [w for w in texts(at.warning) if "may take" in w]
