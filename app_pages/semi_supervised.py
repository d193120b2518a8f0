"""Semi-supervised: which training points a semi-supervised run learnt from, how it did on the points
whose labels it never saw, and its error against the fraction of labelled points beside a tree
trained on the labelled points alone and label propagation."""

import numpy as np
import pandas as pd
import streamlit as st

from models.registry import get_family
from treeviz.plots import label_fraction_figure, labelled_points_figure
from treeviz.services.views.label_curve import DEFAULT_FRACTIONS, LabelCurveJob, labelled_only_tree, metric_name
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.job_panel import job_panel, page_job, start
from treeviz.ui.labels import family_name, run_headline
from treeviz.ui.view_run import offering, view_run

PREFIX = "semi"
FRACTION_CHOICES = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)
GRID = 120  # points per side of the decision-region grid of 2-D data
TRANSDUCTIVE = ("Transductive: measured on the unlabelled training points, which the model trained on without "
                "their labels.")


def curve_caption(rows: list[dict], semi: str, reference: str, metric: str, task: str) -> str:
    """What the curve on screen shows, from its own numbers: at each labelled fraction, the mean
    held-out error of the semi-supervised model and of the supervised reference and which is lower;
    the thesis's finding is attributed to the thesis, beside how many fractions this run agrees at."""
    table = pd.DataFrame(rows).groupby(["method", "fraction"])["error"].mean()
    fmt = "{:.3f}" if task == "classification" else "{:.4g}"
    parts, wins, fractions = [], 0, sorted({float(r["fraction"]) for r in rows})
    for f in fractions:
        if (semi, f) not in table.index or (reference, f) not in table.index:
            continue
        a, b = fmt.format(table[(semi, f)]), fmt.format(table[(reference, f)])
        verdict = ("they tie" if a == b else f"{semi} is lower here" if float(a) < float(b)
                   else f"{reference} is lower here")
        wins += float(a) < float(b)
        parts.append(f"At {100 * f:g} % labels the {metric} is {a} for {semi} and {b} for {reference}: {verdict}.")
    if not parts:
        return f"No fraction has both {semi} and {reference} yet."
    return (" ".join(parts) + f" The thesis reports that the semi-supervised tree beats the tree trained on the "
            f"labelled points alone, most at the fewest labels; on this run {semi} is lower at {wins} of "
            f"{len(parts)} labelled fraction{'s' if len(parts) > 1 else ''}.")

st.title("Semi-supervised")
families = offering("semi_supervised", default="a semi-supervised family")
record = view_run("semi_supervised",
                  no_run=f"No run to show yet: train {families} on a classification or regression data set on the "
                         "Train page (set its labelled fraction to hide labels), or pick one in the sidebar.",
                  wrong_run="This run's family does not learn from unlabelled points. Pick a " + families + " run in "
                            "the sidebar, or train one on the Train page.")
run_id = record.run_id

with user_errors("opening the run"):
    model = state.run_model(run_id)
    prepared = state.run_prepared(run_id)
    labelled = np.asarray(model.labelled_, dtype=bool)
    X, y = prepared.X_train, prepared.labels("train")
    n, n_lab = labelled.size, int(labelled.sum())

    cols = st.columns(4)  # narrow cards: short labels, the help says the rest
    cols[0].metric("Labelled training points", f"{n_lab} / {n}", help=f"{100 * n_lab / n:.3g} % of the training "
                   "split kept its label; the others were hidden (labelled fraction "
                   f"{record.params.get('labelled_fraction', 1.0):g}).")
    score = run_headline(record)
    if score is not None:
        cols[1].metric(score.title, f"{score.value:.3f}", help="On held-out points no method saw (inductive).")
    if n_lab < n:
        hidden = ~labelled
        pred = model.predict(X[hidden])
        if record.task == "classification":
            value = float(np.mean(np.asarray(pred).astype(str) == np.asarray(y[hidden]).astype(str)))
            cols[2].metric("transductive accuracy", f"{value:.3f}", help=TRANSDUCTIVE)
        else:
            value = float(np.sqrt(np.mean((np.asarray(pred, float) - np.asarray(y[hidden], float)) ** 2)))
            cols[2].metric("transductive RMSE", f"{value:.4g}", help=TRANSDUCTIVE)
    cols[3].metric("Leaves", model.to_tree().n_leaves)

    # ------------------------------------------------------------------ the data, labelled points marked
    classes = prepared.classes("train")
    names = list(prepared.dataset.class_names) if classes is not None else None
    shown = classes if record.task == "classification" else None
    if X.shape[1] == 2 and record.task == "classification":
        # the thesis's toy figure: the semi-supervised tree beside a tree on the labelled points alone
        pad = 0.05 * (X.max(axis=0) - X.min(axis=0) + 1e-12)
        gx = np.linspace(X[:, 0].min() - pad[0], X[:, 0].max() + pad[0], GRID)
        gy = np.linspace(X[:, 1].min() - pad[1], X[:, 1].max() + pad[1], GRID)
        xx, yy = np.meshgrid(gx, gy)  # rows follow y, columns x, as the heatmap reads them
        grid = np.c_[xx.ravel(), yy.ravel()]
        index = {c: i for i, c in enumerate(names)}

        def regions(estimator):
            predicted = np.asarray(estimator.predict(grid)).astype(str)
            return gx, gy, np.array([index.get(c, 0) for c in predicted]).reshape(GRID, GRID)

        axes = tuple(prepared.dataset.feature_names[:2])
        left, right = st.columns(2)
        show_figure(labelled_points_figure(
      X, classes=shown, class_names=names, labelled=labelled, axes=axes, regions=regions(model),
      title=f"{family_name(record.family)}: labelled and unlabelled points",
      subtitle=f"{n_lab} of {n} labelled (stars) · shading: the tree's predicted class"),
                    key="semi.data", name=(record.name, "data"), where=left)
        alone = labelled_only_tree(record.task, record.params, model, X, y)
        accuracy = float(np.mean(np.asarray(alone.predict(prepared.X_test)).astype(str)
                                 == np.asarray(prepared.labels("test")).astype(str))) if prepared.X_test.size else None
        show_figure(labelled_points_figure(
     X, classes=shown, class_names=names, labelled=labelled, axes=axes, regions=regions(alone),
     title="TAO on the labelled points only",
     subtitle="same depth and penalty" + (f" · test accuracy {accuracy:.3f}" if accuracy is not None else "")),
     key="semi.alone", name=(record.name, "alone"), where=right)
    else:
        if X.shape[1] == 2:
            P, axes, note = X, tuple(prepared.dataset.feature_names[:2]), "the data's two features"
        else:
            from sklearn.decomposition import PCA  # deferred: only needed for data with more than 2 features

            P = PCA(n_components=2, random_state=0).fit_transform(X)
            axes, note = ("principal component 1", "principal component 2"), "the first two principal components"
        show_figure(labelled_points_figure(P, classes=shown, class_names=names, labelled=labelled, axes=axes,
                                           subtitle=f"{n_lab} of {n} training points labelled (stars) · {note}"),
                    key="semi.data", name=(record.name, "data"))

# ---------------------------------------------------------------------- error vs labelled fraction
st.subheader("Error against the fraction of labelled points")
family = get_family(record.family)
results = state.view_results()
job = page_job(PREFIX)
if job is not None and job.done:
    snap = job.snapshot()
    if snap.status == "finished" and snap.result is not None and job.meta.get("run_id"):
        results[f"{PREFIX}:{job.meta['run_id']}"] = snap.result

st.caption(f"For each fraction and labelled subset: {family.short_label} with this run's other settings on every "
           "training point, supervised TAO on the labelled points only (same depth and penalty) and, for classes, "
           "label propagation (scikit-learn), all scored on the held-out split. Each fit takes about as long as "
           "this run did" + (f" ({record.duration_s:.0f} s)." if record.duration_s else "."))
c1, c2, c3 = st.columns([3, 1, 1])
fractions = c1.multiselect("Labelled fractions", FRACTION_CHOICES, default=list(DEFAULT_FRACTIONS),
                           format_func=lambda f: f"{100 * f:g} %", key="semi.fractions")
seeds = c2.number_input("Labelled subsets", 1, 10, 2, key="semi.seeds", help="Random subsets per fraction.")


def start_curve() -> None:
    with user_errors("starting the comparison"):
        varied = family.comparison("semi_supervised").param("labelled_fraction")
        params = {k: v for k, v in record.params.items() if k not in (varied, "random_state", "device")}
        job_fn = LabelCurveJob(record.family, record.task, params, prepared, tuple(fractions),
                               tuple(range(int(seeds))), device=state.device())
        start(PREFIX, job_fn, label=f"Labelled fractions for '{record.name}'", meta={"run_id": run_id})


c3.button("Run", type="primary", on_click=start_curve, key="semi.start", disabled=not fractions)
job_panel(PREFIX, cancelled="The comparison was cancelled.",
          progress_text=lambda s: f"{s.label}: {len(s.records)} fit(s) of {len(fractions) * int(seeds)}")
rows = results.get(f"{PREFIX}:{run_id}")
if rows:
    with user_errors("showing the comparison"):
        metric = metric_name(record.task)
        show_figure(label_fraction_figure(rows, metric=metric), key="semi.curve", name=(record.name, "curve"))
        table = (pd.DataFrame(rows).groupby(["method", "fraction"], sort=False)
                 .agg(n_labelled=("n_labelled", "mean"), mean=("error", "mean"), std=("error", "std"),
                      subsets=("error", "size")).reset_index())
        table["fraction"] = table["fraction"].map(lambda f: f"{100 * f:g} %")
        st.dataframe(table.rename(columns={"mean": f"{metric} (mean)", "std": "std"}), hide_index=True)
        reference = family.comparison("semi_supervised").reference_label
        st.caption(curve_caption(rows, family.short_label, reference, metric, record.task))
        st.caption("Label propagation is not a tree and has no model of the inputs; it is shown as the classic graph "
                   "method the tree starts from.")
