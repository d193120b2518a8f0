"""Session state and cached resources shared by the pages.

Every session-state key (everything the app remembers per browser tab), this module's constants
below included (``DATASET`` is ``treeviz.dataset``, ``RUN_ID`` the sidebar's run, ``FLASH`` a
one-shot message, …), is declared with its meaning in :data:`treeviz.ui.session_keys.SESSION_KEYS`.

Runs and jobs are process-wide (cached resources), so a second tab sees the same runs, and runs
live on disk (:mod:`treeviz.services.store.runs`), so they survive an app restart.

Everything cached from a run (its model, prepared data, views, sweep rows, importance baselines and
the view pages' results) is keyed by the run's file identity (:func:`run_identity`: inode,
modification time and size of its folder and files), not by its id alone: a run deleted and another
imported under the same id, here or by another process, never meets the old run's entries, so no
page has to invalidate anything when it deletes or imports a run.

The app runs each training job in a child process of its own (:func:`process_jobs`), so two jobs
do not contend for one interpreter lock. ``TREEVIZ_JOB_PROCESSES=0`` (also ``false``, ``no``,
``off``) runs them in worker threads of the app's process instead (:func:`thread_jobs`): no child
process to start (each imports torch, seconds), at the price of one interpreter lock shared with
the pages. The tests run the app that way (``tests/conftest.py``); unset, empty or any other value
means child processes.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from models.ground.errors import TreevizError
from treeviz.plots import pareto_figure as _pareto_figure
from treeviz.services.data import Dataset, PreparedData, PrepConfig, load_dataset, prepare
from treeviz.services.experiments.search import searches as search_groups
from treeviz.services.experiments.sweep import sweep_table
from treeviz.services.experiments.sweep import sweeps as sweep_groups
from treeviz.services.experiments.warmup import warm_in_worker
from treeviz.services.jobs import warmup
from treeviz.services.jobs.manager import JobManager
from treeviz.services.store.runs import RunStore, default_root
from treeviz.services.views.features import BaselineResult
from treeviz.services.views.features import importance_baselines as _baselines
from treeviz.services.views.run_view import RunView
from treeviz.ui.text import md

DATASET = "treeviz.dataset"
PREP = "treeviz.prep"
RUN_ID = "treeviz.run_id"
JOB_ID = "treeviz.job_id"
DEVICE = "treeviz.device"
FLASH = "treeviz.flash"
NEXT_RUN_ID = "treeviz.next_run_id"
DEFAULT_DATASET = "iris"
#: Environment variable: "0", "false", "no" or "off" runs the app's jobs in threads (see above).
JOB_PROCESSES_ENV = "TREEVIZ_JOB_PROCESSES"
_THREADS_VALUES = ("0", "false", "no", "off")


@st.cache_resource(show_spinner=False)
def _store(root: str) -> RunStore:
    return RunStore(root)


def store() -> RunStore:
    """The run store under ``TREEVIZ_HOME`` (or the user's data folder)."""
    return _store(str(default_root()))


def job_processes() -> bool:
    """Whether the app runs its jobs in child processes: False when ``TREEVIZ_JOB_PROCESSES`` is
    "0", "false", "no" or "off" (read at call time, any case), True otherwise."""
    return os.environ.get(JOB_PROCESSES_ENV, "").strip().lower() not in _THREADS_VALUES


@st.cache_resource(show_spinner=False)
def process_jobs() -> JobManager:
    """The job manager whose workers run each job in a child process (the app's default)."""
    return JobManager(processes=True, idle_s=60.0)


#: One per process, outside Streamlit's caches: ``st.cache_resource.clear()`` (which the tests
#: call between tests) leaves it, so its worker threads are reused rather than started again.
#: Made on first use (:func:`thread_jobs`), never at import.
_thread_jobs: list[JobManager] = []
_thread_jobs_lock = threading.Lock()


def thread_jobs() -> JobManager:
    """The job manager whose workers run each job in their own thread of this process (made on
    the first call, then the same one)."""
    with _thread_jobs_lock:
        if not _thread_jobs:
            _thread_jobs.append(JobManager(processes=False, idle_s=60.0))
        return _thread_jobs[0]


def jobs() -> JobManager:
    """The process-wide background job manager: :func:`process_jobs`, or :func:`thread_jobs`
    when ``TREEVIZ_JOB_PROCESSES`` says threads."""
    return process_jobs() if job_processes() else thread_jobs()


def warm_jobs() -> None:
    """Get the first training ready (the app calls this after each page; it acts once): with jobs
    in child processes, the job manager starts its first child now and runs every family's small
    trainings in it (:meth:`JobManager.prime`, :func:`warm_in_worker`); with jobs in threads, the
    background warm-up compiles the kernels in a child of its own
    (:func:`treeviz.services.jobs.warmup.start_background`). ``TREEVIZ_WARMUP=0`` turns both off."""
    if not warmup.enabled():
        return
    manager = jobs()
    if manager.processes:
        manager.prime(warm_in_worker)
    else:
        warmup.start_background()


@st.cache_resource(show_spinner=False, max_entries=32)
def catalogue_dataset(key: str) -> Dataset:
    return load_dataset(key)


@st.cache_resource(show_spinner=False, max_entries=8)
def _prepared(fingerprint: str, config: tuple, _dataset: Dataset) -> PreparedData:
    return prepare(_dataset, PrepConfig(*config))


def current_dataset() -> Dataset:
    """The dataset chosen on the Data page (the default sample until one is chosen)."""
    if DATASET not in st.session_state:
        st.session_state[DATASET] = catalogue_dataset(DEFAULT_DATASET)
    return st.session_state[DATASET]


def current_prep() -> PrepConfig:
    if PREP not in st.session_state:
        st.session_state[PREP] = PrepConfig()
    return st.session_state[PREP]


def current_prepared() -> PreparedData:
    """The current dataset split and preprocessed with the current choices (cached)."""
    return prepared_dataset(current_dataset())


def prepared_dataset(dataset: Dataset) -> PreparedData:
    """``dataset`` split and preprocessed with the current choices (cached), for a page that picks
    a data set of its own (Bandit feedback)."""
    cfg = current_prep()
    key = (cfg.scaling, cfg.test_size, cfg.val_size, cfg.seed)
    return _prepared(dataset.fingerprint, key, dataset)


def set_dataset(dataset: Dataset, message: str | None = None) -> None:
    """Make ``dataset`` current and rerun, so the sidebar (drawn before the page) shows it.

    ``message`` is shown once at the top of the next run (see :func:`show_flash`).
    """
    st.session_state[DATASET] = dataset
    if message:
        st.session_state[FLASH] = message
    st.rerun()


def show_flash() -> None:
    """Show, once, the message left by the previous run (e.g. "Using file.csv ...")."""
    message = st.session_state.pop(FLASH, None)
    if message:
        st.success(md(message))  # it quotes names (a file's, a run's): text, never Markdown


def run_identity(run_id: str) -> tuple:
    """The identity of a stored run's files (:meth:`RunStore.identity`): the key, beside the id, of
    every cache of something read from the run (a TreevizError sentence if the run is gone)."""
    return store().identity(run_id)


@st.cache_resource(show_spinner=False, max_entries=8)
def _run_model(root: str, run_id: str, identity: tuple) -> Any:
    return _store(root).load_model(run_id)


@st.cache_resource(show_spinner=False, max_entries=8)
def _run_prepared(root: str, run_id: str, identity: tuple) -> PreparedData:
    return _store(root).load_prepared(run_id)


def run_model(run_id: str) -> Any:
    """The fitted estimator of a stored run (loaded once per process and run)."""
    return _run_model(str(default_root()), run_id, run_identity(run_id))


def run_prepared(run_id: str) -> PreparedData:
    """The exact data (split + preprocessing) a stored run was trained on."""
    return _run_prepared(str(default_root()), run_id, run_identity(run_id))


def current_run_id() -> str | None:
    run_id = st.session_state.get(RUN_ID)
    if run_id and store().exists(run_id):
        return run_id
    return None


def select_run(run_id: str) -> None:
    """Make ``run_id`` the run the explorer pages show (call from a callback or before the
    sidebar renders)."""
    st.session_state[RUN_ID] = run_id


def select_run_next(run_id: str) -> None:
    """Make ``run_id`` the shown run from the next run of the script on (safe at any point:
    the sidebar applies it before drawing its run selector)."""
    st.session_state[NEXT_RUN_ID] = run_id


def current_job():
    """The last training job started from this tab, or None (also after an app restart)."""
    job_id = st.session_state.get(JOB_ID)
    if not job_id:
        return None
    try:
        return jobs().get(job_id)
    except TreevizError:
        return None


def device() -> str:
    return st.session_state.get(DEVICE, "auto")


@st.cache_resource(show_spinner=False, max_entries=16)
def _run_view(root: str, run_id: str, part: str, tree_index: int, identity: tuple) -> RunView:
    model = _run_model(root, run_id, identity)
    prepared = _run_prepared(root, run_id, identity)
    return RunView.build(model, prepared, part, tree_index)


def run_view(run_id: str, part: str, tree_index: int = 0) -> RunView:
    """The tree of a run (tree ``tree_index`` of an ensemble) with one data split routed through
    it (cached per run, split and tree)."""
    return _run_view(str(default_root()), run_id, part, int(tree_index), run_identity(run_id))


@st.cache_resource(show_spinner=False, max_entries=16)
def _sweep_rows(root: str, sweep_id: str, run_ids: tuple[str, ...], identities: tuple) -> list[dict[str, Any]]:
    store = _store(root)  # the app's one store: a record it has read is not parsed again
    return sweep_table(store, [store.get(r) for r in run_ids])


def sweeps() -> dict[str, list[Any]]:
    """Stored λ paths (sweeps), newest first."""
    return sweep_groups(store())


def searches() -> dict[str, list[Any]]:
    """Stored feature-budget searches, newest first."""
    return search_groups(store())


@st.cache_resource(show_spinner=False, max_entries=16)
def _importance_baselines(root: str, run_id: str, k: int, identity: tuple) -> list[BaselineResult]:
    record = _store(root).get(run_id)
    return _baselines(_run_prepared(root, run_id, identity), k, record.task, seed=0)


def importance_baselines(run_id: str, k: int) -> list[BaselineResult]:
    """Random-forest and gradient-boosting importance selections of ``k`` features on a run's
    data (cached per run and budget)."""
    return _importance_baselines(str(default_root()), run_id, int(k), run_identity(run_id))


def sweep_rows(sweep_id: str, run_ids: tuple[str, ...]) -> list[dict[str, Any]]:
    """One row per point of a stored sweep (cached per sweep and its runs)."""
    return _sweep_rows(str(default_root()), sweep_id, run_ids, tuple(run_identity(r) for r in run_ids))


def _identity_of_key(key: str) -> tuple | None:
    """The file identity of the run a view result's key ``"<page>:<run id>"`` names (None when the
    key names no stored run)."""
    try:
        return run_identity(key.rsplit(":", 1)[-1])
    except TreevizError:
        return None


class RunResults(dict):
    """View results by ``"<page>:<run id>"``, each remembered with the identity of its run's files
    when it was stored (:func:`run_identity`); :func:`view_results` drops those whose run has gone
    or was replaced by another run under the same id."""

    def __init__(self) -> None:
        super().__init__()
        self.identities: dict[str, tuple | None] = {}

    def __setitem__(self, key: str, value: Any) -> None:
        super().__setitem__(key, value)
        self.identities[key] = _identity_of_key(key)

    def drop_stale(self) -> None:
        for key in list(self):
            if _identity_of_key(key) != self.identities.get(key):
                self.pop(key, None)
                self.identities.pop(key, None)


@st.cache_resource(show_spinner=False, max_entries=8)
def _pareto(key: str, _points: Sequence[Mapping[str, Any]], size_label: str, score_label: str,
            higher_is_better: bool) -> go.Figure:
    return _pareto_figure(_points, size_label=size_label, score_label=score_label, higher_is_better=higher_is_better)


def pareto_figure(points: Sequence[Mapping[str, Any]], *, size_label: str, score_label: str,
                  higher_is_better: bool = True) -> go.Figure:
    """:func:`treeviz.plots.pareto_figure`, built once per set of points: the Compare page draws two
    at every rerun, one point per run (with 5 000 runs about 70 ms of each rerun went to building
    them again). Keyed by a digest of the points (their ``repr``: exact numbers) and labels; the
    figure is shared, never changed."""
    key = hashlib.sha256(repr((list(points), size_label, score_label, higher_is_better)).encode()).hexdigest()
    return _pareto(key, points, size_label, score_label, bool(higher_is_better))


@st.cache_resource(show_spinner=False)
def _view_results() -> RunResults:
    return RunResults()


def view_results() -> dict[str, Any]:
    """Results of a view page's background work, by ``"<page>:<run id>"`` (an embedding comparison
    per run, a label-fraction curve per run and settings): process-wide, so every tab sees them
    until the app restarts, when they can be computed again; a result whose run was deleted, or
    replaced by another run under its id, is dropped."""
    results = _view_results()
    results.drop_stale()
    return results
