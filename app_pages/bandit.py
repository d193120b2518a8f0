"""Bandit feedback: a tree learned online without ever seeing a label, against the online linear
model under the same protocol and the same tree trained with every label, over several seeds,
computed in the background with live curves (held-out score, average reward or loss played, and
regret against the number of loss queries)."""

import pandas as pd
import streamlit as st

from models.registry import families_offering
from treeviz.plots import bandit_regret_figure, bandit_reward_figure, bandit_score_figure
from treeviz.services.data import list_datasets
from treeviz.services.views.bandit import (
    BanditCurveJob,
    curve_bands,
    curve_keys,
    final_table,
    metric_name,
    reference_band,
)
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.forms import family_select, param_form
from treeviz.ui.job_panel import job_panel, page_job, start
from treeviz.ui.text import md
from treeviz.ui.view_run import offering

PREFIX = "bandit"
TASKS = ("classification", "regression")
CURRENT = "(current)"
MAX_SEEDS = 10
#: What the bandit families compare with, as they declare it.
_COMPARISONS = [f.comparison("bandit") for f in families_offering("bandit")]
LINEAR = " / ".join(dict.fromkeys(label for c in _COMPARISONS for label in c.baselines))
SUPERVISED = " / ".join(dict.fromkeys(c.reference_label for c in _COMPARISONS))
PROTOCOL = f"""
**The protocol.** The learner never sees a label. Each round it is shown one training point and
plays a prediction; an oracle, which alone holds the labels, answers only the loss of what was
played. For classes that is whether the played class was right (ε-greedy play: with probability
δ, the exploration rate, a class drawn at random, else the tree's own best class); for values, the
loss of the value played (one-point: prediction + δ·(±1), one query a round; two-point:
prediction ± δ, two queries a round). The stream is the training split, reshuffled at every pass:
a point shown again is a new round, and its queries count again.

**What is compared.** The curves are scored on the held-out split (test, else validation), which
no learner trained on. *{LINEAR}* learns under the same protocol, estimator, optimiser and
budget. *{SUPERVISED}* (same height, layers and quantiser) sees every training label: its
held-out score is the dashed reference line, and its losses on the bandit's own rounds are the
comparator of the regret (the mean loss incurred so far, exploration included, minus the
supervised tree's mean loss on the same rounds). Bands are 95% confidence intervals of the mean
across seeds.
"""

st.title("Bandit feedback")
names = offering("bandit", default="a bandit family")
st.caption(f"{names} learning online from the loss of what it plays, against an online linear model under the same "
           "protocol and the same tree trained with every label.")
with st.expander("How the comparison works"):
    st.markdown(PROTOCOL)

# ---------------------------------------------------------------------- the data set
current = state.current_dataset()
entries = [e for e in list_datasets() if e.task in TASKS]
options: dict[str, str] = {}
if current.task in TASKS and current.meta.get("catalogue_key") not in {e.key for e in entries}:
    options[CURRENT] = f"{current.name} · {current.task} (chosen on the Data page)"
options.update({e.key: f"{e.label} · {e.task}" for e in entries})
now = current.meta.get("catalogue_key")
default = now if now in options else (CURRENT if CURRENT in options else next(iter(options)))
choice = st.selectbox("Data set", list(options), index=list(options).index(default), format_func=options.get,
                      key="bandit.dataset", help="The built-in data sets, and the one chosen on the Data page. The "
                      "split and preprocessing are those set on the Data page.")
loaded = None
with user_errors("preparing the data set"):
    ds = current if choice == CURRENT else state.catalogue_dataset(choice)
    loaded = ds, state.prepared_dataset(ds)
if loaded is None:
    st.stop()
ds, prepared = loaded
n_eval = prepared.X_test.shape[0] or prepared.X_val.shape[0]
split = "test" if prepared.X_test.shape[0] else "validation"
st.caption(f"**{md(ds.name)}** ({ds.task}): the stream plays its {prepared.X_train.shape[0]} training rows; the "
           f"curves are scored on its {n_eval} {split} rows.")

families = families_offering("bandit", ds.task)
if not families:
    st.info(f"No family learning from bandit feedback handles {ds.task}; choose another data set.")
    st.stop()
family = family_select(families, key="bandit.family", hide_single=True)
family_key = family.key

# ---------------------------------------------------------------------- the settings
sources: dict[str, str] = {"defaults": "the family's defaults (as on the Train page)"}
sources.update({f"preset:{name}": f"preset: {name}" for name in family.presets_for(ds.task)})
with user_errors("listing the stored runs"):
    stored = [r for r in state.store().list() if r.family == family.key and r.task == ds.task]
    sources.update({f"run:{r.run_id}": f"settings of the run '{r.name}'" for r in stored})
source = st.selectbox("Start from", list(sources), format_func=sources.get, key=f"bandit.source.{family.key}",
                      help="The values below start from the family's defaults, a preset or a stored run's settings; "
                           "edit any of them.")
values = family.defaults(ds.task)
if source.startswith("preset:"):
    values = family.defaults(ds.task, source.removeprefix("preset:"))
elif source.startswith("run:"):
    record = next(r for r in stored if f"run:{r.run_id}" == source)
    values.update({k: v for k, v in record.params.items() if k in values})
params = param_form(family, ds.task, values, key=f"bandit.{family.key}.{ds.task}.{source}", exclude=("random_state",))
with user_errors("describing the run"):
    plan = family.comparison("bandit").run_plan(ds.task, params, prepared.X_train.shape[0])
    if plan:  # the rounds and loss queries these settings play, as the family declares them
        st.caption(plan)
c1, c2, c3 = st.columns([1, 1, 1])
seeds = c1.number_input("Seeds", 1, MAX_SEEDS, 3, key="bandit.seeds",
                        help="Every method runs once per seed (the stream's order, the draws and the start); the bands "
                             "are 95% confidence intervals of the mean across seeds.")
baseline = c2.checkbox("Linear baseline", value=True, key="bandit.baseline",
                       help="Also run the online linear model under the same protocol.")


def start_job() -> None:
    with user_errors("starting the comparison"):
        clean = family.validate_params(params, ds.task)
        fn = BanditCurveJob(family.key, ds.task, dict(clean), prepared, tuple(range(int(seeds))),
                            baseline=bool(baseline), device=state.device())
        label = f"{family.short_label} on {ds.name}"
        start(PREFIX, fn, label=label, meta={"task": ds.task, "dataset": ds.name, "label": label,
                                             "settings": dict(clean), "seeds": int(seeds)})


c3.button("Start", type="primary", on_click=start_job, key="bandit.start")


# ---------------------------------------------------------------------- the job and its results
def exploration_caption(row: dict, rate: float) -> str:
    """What the exploration rate does, and whether this run's average reward (rounds played, exploration
    included) is below its held-out accuracy (the tree's own predictions), from the table's numbers."""
    text = (f"Exploration rate δ = {rate:g}: about that share of the rounds play a class drawn at random, which "
            "lowers the average reward against the held-out accuracy of the tree's own predictions.")
    reward, score = row.get("average reward"), row.get(metric_name("classification"))
    if reward is None or score is None:
        return text
    verdict = "below it" if reward < score else "not below it here"
    return text + (f" On this run {row['method']}'s average reward is {reward:.3f} and its held-out accuracy "
                   f"{score:.3f}: {verdict}.")


def score_figure(rows, task):
    return bandit_score_figure(curve_bands(rows, curve_keys(task)["score"]), task=task, reference=reference_band(rows))


def live(snap) -> None:
    job = page_job(PREFIX)
    task = job.meta.get("task") if job is not None else None
    rows = [r for r in snap.records if "queries" in r or "reference" in r]
    if task and rows:
        show_figure(score_figure(rows, task), key="bandit.live", name=(snap.label, "live"))


def progress_text(snap) -> str:
    job = page_job(PREFIX)
    total = int(job.meta.get("seeds", 1)) if job is not None else 1
    seed = min(total, max(1, len({r["seed"] for r in snap.records if "seed" in r})))
    return f"{snap.label}: {snap.status} · seed {seed} of {total}"


job_panel(PREFIX, cancelled="The comparison was cancelled; the curves show the rounds played before.",
          progress_text=progress_text, while_running=live)
st.session_state.pop(f"{PREFIX}.select_next", None)  # the panel's hand-over for selectors; not used here

job = page_job(PREFIX)
if job is not None and job.done:
    snap = job.snapshot()
    rows = snap.result if isinstance(snap.result, list) else None
    if rows is None and snap.status == "cancelled":
        rows = [r for r in snap.records if "queries" in r or "reference" in r]
    if rows:
        with user_errors("showing the comparison"):
            task, meta = job.meta["task"], job.meta
            keys = curve_keys(task)
            name = (meta["dataset"], "bandit")
            st.subheader(md(meta["label"]))
            show_figure(score_figure(rows, task), key="bandit.score", name=(*name, "score"))
            left, right = st.columns(2)
            show_figure(bandit_reward_figure(curve_bands(rows, keys["reward"]), task=task), key="bandit.reward",
                        name=(*name, "reward"), where=left)
            show_figure(bandit_regret_figure(curve_bands(rows, keys["regret"])), key="bandit.regret",
                        name=(*name, "regret"), where=right)
            table = final_table(rows, task)
            st.dataframe(pd.DataFrame(table), hide_index=True)
            settings = meta.get("settings", {})
            if task == "classification" and "exploration" in settings:
                st.caption(exploration_caption(table[0], settings["exploration"]))
            else:
                st.caption("The loss played includes the perturbation ±δ of every value played: it is the loss of "
                           "what was played, not of the tree's own predictions (the held-out score above).")
