"""Features: which features a model kept, how selection went during training, feature-budget
searches, and the same budget met by random-forest and gradient-boosting importance.

Everything family-specific comes from ``Family.feature_selection``; the selected features are read
from the run's trees (a feature is kept when some node of some tree gives it a nonzero weight)."""

import pandas as pd
import streamlit as st

from models.ground.errors import TreevizError
from models.registry import families_offering, get_family
from treeviz.plots import (
    budget_trials_figure,
    feature_mask_figure,
    feature_ranking_figure,
    feature_trajectory_figure,
    selection_comparison_figure,
)
from treeviz.services.experiments.search import SELECTION, SearchJob, budget_size, stored_best
from treeviz.services.views.features import feature_table
from treeviz.ui import pages, state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.forms import kept_select, offered_family, param_form
from treeviz.ui.job_panel import job_panel, start, take_result
from treeviz.ui.labels import METRIC_LABELS, family_name
from treeviz.ui.text import md

SEARCH_ID = "features.search_id"

st.title("Features")
ds = state.current_dataset()
families = families_offering("features", ds.task)
names = " or ".join(f.short_label for f in families_offering("features")) or "a family that selects features"


def metric_title(key: str) -> str:
    split, _, metric = key.partition("_")
    return f"{split} {METRIC_LABELS.get(metric, (metric, metric))[1]}"


# ---------------------------------------------------------------- a new budget search
with st.expander("Search for a feature budget", expanded=not state.searches()):
    family = offered_family(families, key="features.family", none=f"No family that selects features handles "
                            f"{ds.task}; choose a classification or regression dataset.")
    if family is not None:
        key = family.key
        selection = family.feature_selection
        p = ds.n_features
        st.caption(f"Dataset **{md(ds.name)}** ({ds.task}, {p} features). Random search: each trial draws "
                   f"{', '.join(family.param(n, ds.task).title for n in selection.search)} at random; the trial with "
                   "the best validation score among those using at most the budget's features is chosen. A quarter "
                   "more trials then copy the best one with its λ lowered, to use more of the budget.")
        c1, c2, c3, c4 = st.columns(4)
        mode = c1.radio("Budget as", ["fraction of the features", "number of features"], key="features.mode")
        if mode == "fraction of the features":
            budget = c2.number_input("Fraction", min_value=0.01, max_value=0.99, value=0.25, step=0.05,
                                     key="features.fraction")
        else:
            budget = c2.number_input("At most", min_value=1, max_value=max(1, p), value=max(1, p // 4), step=1,
                                     key="features.count")
        trials = c3.number_input("Random trials", min_value=1, max_value=500, value=selection.trials, step=1,
                                 key=f"features.trials.{key}")
        seed = c4.number_input("Seed", min_value=0, max_value=2**31 - 1, value=0, step=1, key="features.seed")
        with user_errors("reading the budget"):
            c2.caption(f"at most **{budget_size(budget, p)}** of {p} features")
        with st.expander("Other parameters (shared by every trial; the searched ones are drawn per trial)"):
            params = param_form(family, ds.task, family.defaults(ds.task), key=f"features.{family.key}",
                                exclude=selection.search)

        def start_search() -> None:
            with user_errors("starting the budget search"):
                clean = family.validate_params(params, ds.task)
                fn = SearchJob(family.key, ds.task, dict(clean), state.current_prepared(), float(budget),
                               int(trials), state.store(), seed=int(seed), device=state.device())
                start("features", fn, label=f"Budget search of {family.label} on {ds.name}",
                      meta={"family": family.key})

        st.button("Run the search", type="primary", on_click=start_search, key="features.start")


def failed_trials(snap) -> None:
    failed = [r for r in snap.records if r.get("error")]
    if failed:
        st.caption(f"{len(failed)} trial(s) failed so far: {md(failed[-1]['error'])}")


job_panel("features", cancelled="The search was cancelled; the trials finished before are kept.",
          progress_text=lambda snap: f"{snap.label}: {snap.status} · {snap.epochs} trial(s) done",
          while_running=failed_trials)
take_result("features", SEARCH_ID)

# ---------------------------------------------------------------- stored searches
with user_errors("showing the budget searches"):
    found = state.searches()
    if found:
        st.subheader("Budget searches")
        label = {i: f"{found[i][0].sweep.get('label', i)} · {len(found[i])} trials · {i[:15]}" for i in found}
        search_id = kept_select("Search", label, key=SEARCH_ID)
        records = found[search_id]
        task, k = records[0].task, int(records[0].sweep["budget"])
        best = stored_best(records)
        score_key = next((key for key in SELECTION.get(task, ()) if any(key in r.metrics for r in records)), None)
        test_key = None if score_key is None else "test_" + score_key.partition("_")[2]
        rows = [{"index": int(r.sweep.get("index", i)), "n_features": r.metrics.get("n_features"),
                 **{key: r.metrics.get(key) for key in (score_key, test_key) if key}} for i, r in enumerate(records)]
        if score_key is not None:
            show_figure(budget_trials_figure(rows, budget=k, score=score_key, score_label=metric_title(score_key),
                                             test_score=test_key,
                                             chosen=None if best is None else int(best.sweep["index"])),
                        key="features.trials", name=(records[0].name, "trials"))
        if best is None:
            st.warning(f"No trial uses between 1 and {k} features; run more trials, or raise the budget.")
        else:
            shown = {metric_title(key): f"{best.metrics[key]:.4f}" for key in (score_key, test_key)
                     if key and key in best.metrics}
            st.success(f"Chosen: trial {int(best.sweep['index']) + 1}, {int(best.metrics['n_features'])} features · "
                       + " · ".join(f"{a} {b}" for a, b in shown.items()))
            st.button("Show the chosen model below and in the explorer", key="features.open_best",
                      on_click=state.select_run, args=(best.run_id,))
        table = pd.DataFrame([{"trial": row["index"] + 1, "features": row["n_features"],
                               **{metric_title(key): row.get(key) for key in (score_key, test_key) if key},
                               "run": r.name} for row, r in zip(rows, records)])
        st.dataframe(table, hide_index=True)

# ---------------------------------------------------------------- the selected run's features
st.subheader("Features of a run")
run_id = state.current_run_id()
if run_id is None:
    st.info(f"No run to show yet: train {names} on the Train page, or run a budget search above.")
    st.stop()

with user_errors("reading the run's features"):
    record = state.store().get(run_id)
    st.caption(f"**{md(record.name)}** · {family_name(record.family)} · trained on {md(record.dataset_name)}")
    try:
        family = get_family(record.family)
    except TreevizError:
        family = None
    if family is None or not family.offers("features"):
        st.info(f"This run's family does not select features. Pick a run of {names} in the sidebar.")
        st.stop()
    model = state.run_model(run_id)
    trees = model.to_trees()
    rows = feature_table(trees)
    kept = [r for r in rows if r.used]
    p = len(rows)
    cols = st.columns(3)
    cols[0].metric("Features kept", f"{len(kept)} / {p}")
    cols[1].metric("Compression", f"{p / max(1, len(kept)):.1f}×", help="Input features per feature kept.")
    score = next((k for k in ("test_auc", "test_accuracy", "test_r2") if k in record.metrics), None)
    if score is not None:
        title = metric_title(score)  # a card is narrow: its label is the name, the help says the rest
        short = title.partition(" (")[0]
        cols[2].metric(short, f"{record.metrics[score]:.4f}", help=None if short == title else f"{title}.")
    selection = family.feature_selection
    history = getattr(model, "history_", [])
    show_figure(feature_trajectory_figure(history, count=selection.count, schedule=selection.schedule,
                                          schedule_label=selection.schedule_label, n_inputs=p),
                key="features.trajectory", name=(record.name, "trajectory"))
    by_index = sorted(rows, key=lambda r: r.index)
    left, right = st.columns([3, 2])
    show_figure(feature_ranking_figure([r.name for r in by_index], [r.norm for r in by_index],
                                       [r.used for r in by_index]),
                key="features.ranking", name=(record.name, "ranking"), where=left)
    image_shape = state.run_prepared(run_id).dataset.image_shape
    if image_shape is not None:
        show_figure(feature_mask_figure([r.norm for r in by_index], image_shape),
                    key="features.mask", name=(record.name, "mask"), where=right)
    right.dataframe(pd.DataFrame([{"feature": r.name, "kept": r.used, "weight norm": round(r.norm, 6)}
                                  for r in rows]), hide_index=True, height=360)

    # ------------------------------------------------------------ the same budget by importance
    if record.task in ("classification", "regression") and kept:
        st.subheader(f"The same budget ({len(kept)} features) by feature importance")
        st.caption("A random forest and gradient boosting (scikit-learn) are fitted on every feature; each keeps its "
                   f"{len(kept)} most important features and is refitted on them. Scores on the run's own validation "
                   "and test splits.")
        if st.button("Compare", key="features.compare"):
            st.session_state[f"features.compared.{run_id}"] = True
        if st.session_state.get(f"features.compared.{run_id}"):
            with st.spinner("Fitting the importance baselines..."):
                baselines = state.importance_baselines(run_id, len(kept))
            metrics = [m for m in (("test_auc", "test_accuracy") if record.task == "classification" else ("test_r2",))
                       if m in record.metrics]
            mine = tuple(sorted(r.index for r in kept))
            selections = [(family.short_label, dict(record.metrics), mine)]
            selections += [(b.method, b.metrics, b.features) for b in baselines]
            compared = [{**scores, "method": m, "n_features": len(f)} for m, scores, f in selections]
            show_figure(selection_comparison_figure(compared, metrics=metrics),
                        key="features.comparison", name=(record.name, "comparison"))
            name_of = {r.index: r.name for r in rows}
            st.dataframe(pd.DataFrame([
                {"method": method, **{metric_title(m): scores.get(m) for m in metrics},
                 f"shared with {family.short_label}": len(set(mine) & set(features)),
                 "features": ", ".join(name_of[j] for j in features)}
                for method, scores, features in selections]), hide_index=True)
    if st.button("Open in Tree explorer", key="features.explorer"):
        pages.switch_to("explorer")
