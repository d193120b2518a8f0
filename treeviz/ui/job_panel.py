"""The panel a page shows for a background job it started (a λ path, a budget search): progress
with the time spent and the time left, Cancel, the failure sentence, and one full rerun when the job
ends.

A cancel shows at once: the button's click reruns the panel, which finds the job "cancelling" and
says so with the button disabled; the panel keeps polling until the job has stopped, shows it
cancelled, and reruns the page once. :func:`bar_text` is the progress bar's text of every job
panel (the Train page's too).

The page keeps its job's id in ``st.session_state[f"{prefix}.job_id"]``; when the job finishes with
a result, the result is left in ``st.session_state[f"{prefix}.select_next"]`` for the page to
select before it draws its selector (see :func:`take_result`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from models.ground.errors import TreevizError
from treeviz.services.jobs.manager import ACTIVE_STATUSES, COMPILING, Job, JobSnapshot
from treeviz.ui import state
from treeviz.ui.text import md

#: What the panels say while a job was asked to stop but has not stopped yet.
CANCELLING = "cancelling…"
#: What the panels say, in place of the time left, while a job's fit compiles a numba kernel.
COMPILING_TEXT = "compiling the numba kernels (first run only)…"


def time_left_text(snap: JobSnapshot) -> str:
    """The time left as a few words ("about 40 s left", "about 3 min left"), or why there is none
    yet (a kernel compiling: :data:`COMPILING_TEXT`); empty once the job is done."""
    if snap.status == "cancelling":
        return "stopping at the next check"
    if snap.status == "queued":
        return "waiting for a free worker"
    if snap.done:
        return ""
    if snap.phase == COMPILING:
        return COMPILING_TEXT
    eta = snap.eta_s
    if eta is None:
        return "time left unknown" if snap.total is None else "estimating the time left"
    if eta < 60:
        return f"about {max(1, round(eta))} s left"
    if eta < 3600:
        return f"about {round(eta / 60)} min left"
    return f"about {eta / 3600:.1f} h left"


def bar_text(snap: JobSnapshot, head: str | None = None) -> str:
    """A progress bar's text: ``head`` (the status by default), seconds spent, time left."""
    head = head if head is not None else (CANCELLING if snap.status == "cancelling" else snap.status)
    return " · ".join(part for part in (head, f"{snap.elapsed:.1f} s", time_left_text(snap)) if part)


def cancel_button(snap: JobSnapshot, key: str) -> None:
    """Cancel while the job runs; disabled and relabelled once the stop was asked for."""
    if snap.status == "cancelling":
        st.button("Cancelling…", disabled=True, key=key,
                  help="The job was asked to stop; it ends at its next check and keeps what it finished.")
    else:
        st.button("Cancel", on_click=state.jobs().cancel, args=(snap.id,), key=key)


def page_job(prefix: str) -> Job | None:
    """The last job this page started in this tab, or None (also after an app restart)."""
    job_id = st.session_state.get(f"{prefix}.job_id")
    try:
        return state.jobs().get(job_id) if job_id else None
    except TreevizError:  # the job list is gone after an app restart
        return None


def start(prefix: str, fn: Any, *, label: str, meta: dict[str, Any] | None = None) -> None:
    """Submit ``fn`` as this page's job."""
    st.session_state[f"{prefix}.job_id"] = state.jobs().submit(fn, label=label, meta=meta).id


def job_panel(prefix: str, *, cancelled: str, progress_text: Callable[[JobSnapshot], str] | None = None,
              while_running: Callable[[JobSnapshot], None] | None = None) -> None:
    """Draw the panel, polling once a second while the job runs (a fragment), and rerun the whole
    page once when it ends. ``cancelled`` is the sentence shown after a cancel."""
    job = page_job(prefix)
    active = job is not None and not job.done

    @st.fragment(run_every=1.0 if active else None)
    def panel() -> None:
        current = page_job(prefix)
        if current is None:
            return
        snap = current.snapshot()
        status = CANCELLING if snap.status == "cancelling" else snap.status
        text = progress_text(snap) if progress_text else f"{snap.label}: {status}"
        st.progress(min(1.0, snap.progress), text=md(bar_text(snap, text)))  # the label names a data set
        if snap.status in ACTIVE_STATUSES:
            cancel_button(snap, f"{prefix}.cancel")
            if while_running is not None:
                while_running(snap)
        elif snap.status == "failed":
            st.error(md(snap.message))
        elif snap.status == "cancelled":
            st.warning(cancelled)
        if active and current.done:
            if snap.result:
                st.session_state[f"{prefix}.select_next"] = snap.result
            st.rerun()  # a full rerun lists what the job made

    panel()


def take_result(prefix: str, selector_key: str) -> None:
    """Select what the page's finished job made in the selector ``selector_key`` (call before the
    selector is drawn)."""
    if f"{prefix}.select_next" in st.session_state:
        st.session_state[selector_key] = st.session_state.pop(f"{prefix}.select_next")
