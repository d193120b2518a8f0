"""Acceptance: a CART run on breast_cancer trained from the Train page appears in the Tree explorer
with sklearn's per-node counts, survives an app restart, and reloads with identical predictions."""

import os
import time
from pathlib import Path

import numpy as np
import pytest
import streamlit as st
from sklearn.tree import DecisionTreeClassifier

from models.persist import load_model
from tests.app.conftest import WAIT_S, assert_clean, chart_specs, new_app, node_trace, open_page, texts, wait_for_job
from treeviz.services.store.runs import RunStore


def train_cart_on_breast_cancer(at, depth=6):
    at.run()
    at.selectbox(key="data.sample").set_value("breast_cancer").run()
    assert_clean(at)
    open_page(at, "train")
    at.checkbox(key="train.cart.defaults.max_depth__none").uncheck().run()
    at.number_input(key="train.cart.defaults.max_depth").set_value(depth).run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    assert "Finished" in at.success[0].value
    return at


def sklearn_reference(store, run_id, depth):
    prepared = store.load_prepared(run_id)
    ref = DecisionTreeClassifier(max_depth=depth, random_state=0)
    ref.fit(prepared.X_train, prepared.labels("train"))
    return prepared, ref


def explorer_counts(at):
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    trace = node_trace(spec)
    ids = [int(c[0]) for c in trace["customdata"]]
    counts = [float(c[2]) for c in trace["customdata"]]
    return ids, counts


def job_processes() -> list[int]:
    """Process ids of this process's children that run jobs (``python -m treeviz.services.jobs.worker_process``)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        if parent == os.getpid() and b"treeviz.services.jobs.worker_process" in command:
            found.append(int(proc.name))
    return found


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_cart_run_from_train_page_to_explorer_and_back_after_restart(home, jobs_in_processes):
    at = train_cart_on_breast_cancer(new_app(), depth=6)
    store = RunStore(home)
    (record,) = store.list()
    assert record.family == "cart" and record.params["max_depth"] == 6
    # the app trains in a worker process of its own, not in a thread of this one (the one app flow
    # on the app's real process path: the others run their jobs in threads, see tests/conftest.py)
    assert job_processes(), "no child process runs treeviz.services.jobs.worker_process"
    assert record.dataset["name"] == "breast_cancer"

    # the Tree explorer shows the run, with sklearn's own per-node counts on the training split
    open_page(at, "explorer")
    assert_clean(at)
    prepared, ref = sklearn_reference(store, record.run_id, depth=6)
    ids, counts = explorer_counts(at)
    assert len(ids) == ref.tree_.node_count  # depth 6 fits in the default 6-level window
    np.testing.assert_array_equal(np.asarray(counts), ref.tree_.n_node_samples[ids])

    # an app restart: a new session and empty caches (a new process); the run is still there
    st.cache_resource.clear()
    at2 = new_app()
    at2.run()
    assert_clean(at2)
    assert at2.sidebar.selectbox(key="treeviz.run_id").value == record.run_id
    open_page(at2, "explorer")
    assert_clean(at2)
    ids2, counts2 = explorer_counts(at2)
    assert (ids2, counts2) == (ids, counts)

    # the model file reloads with predictions identical to scikit-learn's tree
    model = load_model(store.runs_dir / record.run_id)
    for part in ("train", "val", "test"):
        X = prepared.X(part)
        np.testing.assert_array_equal(model.predict(X), ref.predict(X))
        np.testing.assert_array_equal(model.predict_proba(X), ref.predict_proba(X))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_open_in_explorer_button_switches_page(home):
    at = train_cart_on_breast_cancer(new_app(), depth=3)
    at.button(key="train.open").click().run()
    assert_clean(at)
    assert texts(at.title) == ["Tree explorer"]
    assert chart_specs(at)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_failing_training_shows_a_sentence_and_the_app_stays_usable(home, monkeypatch):
    import treeviz.services.experiments.training

    def broken_job_fn(*args, **kwargs):
        def fn(progress):
            raise RuntimeError("the solver diverged")

        return fn

    job_fn = treeviz.services.experiments.training.job_fn
    monkeypatch.setattr(treeviz.services.experiments.training, "job_fn", broken_job_fn)
    at = new_app()
    at.run()
    open_page(at, "train")
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert not at.exception
    (error,) = texts(at.error)
    assert error == "Training failed: RuntimeError: the solver diverged"
    assert "Traceback" not in error
    # put back job_fn only: monkeypatch.undo() would also drop home's TREEVIZ_HOME and
    # TREEVIZ_JOB_PROCESSES (the run would go to the user's store, the job to a child process)
    monkeypatch.setattr(treeviz.services.experiments.training, "job_fn", job_fn)
    at.run()  # callbacks are bound to the previous run's script, so rerun once after the undo
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    assert at.success


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_cancel_stops_a_running_job(home, monkeypatch):
    import threading

    import treeviz.services.experiments.training
    from models.ground.errors import TrainingCancelled

    started, release = threading.Event(), threading.Event()

    def slow_job_fn(*args, **kwargs):
        # three epochs, then the job holds until the test releases it (after its Cancel), so it is
        # still running whatever the machine's speed; released, it reaches its check and stops
        def fn(progress):
            progress.begin(1000)
            started.set()
            try:
                for epoch in range(1000):
                    if epoch >= 3:
                        release.wait(WAIT_S)
                    progress.record({"epoch": epoch + 1, "loss": 1.0 / (epoch + 1)})
            except TrainingCancelled:
                return
            return

        return fn

    monkeypatch.setattr(treeviz.services.experiments.training, "job_fn", slow_job_fn)
    at = new_app()
    at.run()
    open_page(at, "train")
    at.button(key="train.start").click().run()
    try:
        assert started.wait(WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while not at.get("plotly_chart") and time.monotonic() < deadline:  # the epochs recorded so far
            threading.Event().wait(0.1)
            at.run()
        assert at.get("plotly_chart"), "live training curves are shown while the job runs"
        assert at.button(key="train.cancel")
        assert "running" in at.get("progress")[0].proto.text
        at.button(key="train.cancel").click().run()
    finally:
        release.set()
    wait_for_job(at)
    assert not at.exception
    assert any("cancelled" in w for w in texts(at.warning))
