"""The panel a page shows for a background job it started (a λ path, a budget search): progress,
Cancel, the failure sentence, and one full rerun when the job ends.

The page keeps its job's id in ``st.session_state[f"{prefix}.job_id"]``; when the job finishes with
a result, the result is left in ``st.session_state[f"{prefix}.select_next"]`` for the page to
select before it draws its selector (see :func:`take_result`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from models.ground.errors import TreevizError
from treeviz.services.jobs import Job, JobSnapshot
from treeviz.ui import state


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
        text = progress_text(snap) if progress_text else f"{snap.label}: {snap.status}"
        st.progress(min(1.0, snap.progress), text=f"{text} · {snap.elapsed:.1f} s")
        if snap.status in ("queued", "running"):
            st.button("Cancel", on_click=state.jobs().cancel, args=(snap.id,), key=f"{prefix}.cancel")
            if while_running is not None:
                while_running(snap)
        elif snap.status == "failed":
            st.error(snap.message)
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
