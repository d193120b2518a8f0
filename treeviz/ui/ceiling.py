"""Compare's black-box ceiling: a button that trains scikit-learn's HistGradientBoosting on the split the
runs compared were trained on (:mod:`treeviz.services.views.ceiling`; a background job, with the page's
job panel), a caption line under the leaderboard and a reference line in the Pareto plots. It is kept in
the tab's session by the prepared data's fingerprint, never stored as a run and never offered as a tree."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from treeviz.plots.compare import add_reference_line
from treeviz.services.views.ceiling import LABEL, TASKS, Ceiling, CeilingJob, shared_split
from treeviz.services.views.compare import DataGroup, Score
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.job_panel import job_panel, page_job, start

#: Session state: the ceilings trained in this tab, by (prepared data fingerprint, task).
CEILINGS = "compare.ceilings"
#: The prefix of the ceiling's job panel.
PREFIX = "compare.ceiling_job"


def _start(run_id: str, task: str, dataset: str) -> None:
    with user_errors("starting the black-box ceiling"):
        start(PREFIX, CeilingJob(state.store(), run_id, task), label=f"Black-box ceiling on {dataset}")


def _collect(found: dict) -> None:
    """Keep the ceiling the page's last job trained, once it has finished."""
    job = page_job(PREFIX)
    if job is not None and job.done:
        snap = job.snapshot()
        if snap.status == "finished" and isinstance(snap.result, Ceiling):
            found.setdefault((snap.result.prepared_fingerprint, snap.result.task), snap.result)


def _best(group: DataGroup, score: Score) -> float | None:
    values = [v for v in (r.metrics.get(score.key) for r in group.runs) if isinstance(v, (int, float))]
    if not values:
        return None
    return max(values) if score.higher_is_better else min(values)


def ceiling_section(group: DataGroup, score: Score | None) -> Ceiling | None:
    """The ceiling of ``group``'s runs: a button to train it, then a caption line saying its score
    beside the best tree's. Returns it once trained (None before, and for tasks it is not offered for)."""
    if group.task not in TASKS or score is None:
        return None
    fingerprint, count = shared_split(group.runs)
    found: dict = st.session_state.setdefault(CEILINGS, {})
    ceiling = found.get((fingerprint, group.task))
    if ceiling is None:
        _collect(found)
        ceiling = found.get((fingerprint, group.task))
    if ceiling is None:
        job = page_job(PREFIX)
        run_id = next(r.run_id for r in group.runs if r.prepared_fingerprint == fingerprint)
        st.button("Train a black-box ceiling", key="compare.ceiling", icon=":material/vertical_align_top:",
                  on_click=_start, args=(run_id, group.task, group.dataset), disabled=job is not None and not job.done,
                  help="Trains scikit-learn's HistGradientBoosting (its defaults, seeded by the split's seed) on the "
                       "training rows the runs were trained on and scores it on their test rows: how much accuracy "
                       "the interpretable trees give up. Runs in the background. A reference, not a tree: it is "
                       "not stored as a run.")
        job_panel(PREFIX, cancelled="The black-box ceiling was cancelled.")
    if ceiling is None:
        return None
    value = ceiling.metrics.get(score.key)
    text = f"**Reference, not a tree:** {LABEL} · {score.label} "
    text += "—" if value is None else f"{value:.4f}"
    best = _best(group, score)
    if value is not None and best is not None:
        gap = (value - best) * (1 if score.higher_is_better else -1)
        text += f" · the best tree {best:.4f}, {abs(gap):.4f} {'below' if gap >= 0 else 'above'} it"
    text += (f" · trained on the runs' split (seed {ceiling.seed}) in {ceiling.fit_s:.1f} s; not stored as a run.")
    if count < len(group.runs):
        text += (f" The split of {count} of these {len(group.runs)} runs; the others were trained on another split "
                 "or scaling of this data set.")
    st.caption(text)
    return ceiling


def with_ceiling(fig: go.Figure, ceiling: Ceiling | None, score: Score) -> go.Figure:
    """A Pareto figure with the ceiling's score as a dashed reference line (a copy: the figure given
    may be shared), or the figure itself when there is no ceiling or it has no such score."""
    value = None if ceiling is None else ceiling.metrics.get(score.key)
    if value is None:
        return fig
    return add_reference_line(go.Figure(fig), value, LABEL)
