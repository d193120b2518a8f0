"""Embeddings: a tree embedding's 2-D map with each leaf's region, the tree beside it, the
embedding objective along the μ path, and the same points embedded by the free embedding, the
direct fits and UMAP, each scored alike."""

import pandas as pd
import streamlit as st

from treeviz.plots import (
    TreeFigureOptions,
    embedding_map,
    embedding_objective_curve,
    embedding_panels,
    leaf_class_bars,
    tree_figure,
    weight_images_grid,
)
from treeviz.readers.metrics import class_counts_by_node
from treeviz.services.views.embedding import ComparisonJob, objective_name
from treeviz.ui import state
from treeviz.ui.cells import readable
from treeviz.ui.errors import user_errors
from treeviz.ui.figures import show_figure
from treeviz.ui.job_panel import job_panel, page_job, start
from treeviz.ui.labels import family_name
from treeviz.ui.view_run import offering, view_run

PREFIX = "embeddings"
#: What the change under the tree embedding's objective is measured from.
DELTA_FROM = "vs direct fit"


def leaf_numbers_caption(tree) -> str:
    """What the number under each leaf of the tree diagram is: the first coordinate z1 of the leaf's
    output (the diagram writes one number a leaf), the intercept of its map for a linear leaf."""
    if tree.leaf_weight is not None:
        return ("The number under each leaf is z1 of the leaf's intercept b: a linear leaf maps a point x to "
                "(z1, z2) = b + W·x with its own b and W, so its points land around the map, not at that number.")
    return "The number under each leaf is z1 of the one point (z1, z2) that the leaf maps all its rows to."


st.title("Embeddings")
families = offering("embedding", default="an embedding family")
record = view_run("embedding", task="embedding",
                  no_run=f"No run to show yet: train a {families} on the Train page (it runs on any data set), or pick "
                         "one in the sidebar.",
                  wrong_run="This is a {task} run. Pick a " + families + " run in the sidebar, or train one on "
                            "the Train page: choose the family there on any data set.")
run_id = record.run_id

with user_errors("drawing the embedding"):
    view = state.run_view(run_id, "train")
    model, prepared, tree = view.model, view.prepared, view.tree
    E = objective_name(model)
    test_part = "test" if prepared.X_test.shape[0] else ("val" if prepared.X_val.shape[0] else None)
    classes = prepared.classes("train")
    names = list(prepared.dataset.class_names) if classes is not None else None

    cols = st.columns([1.6, 1, 1, 0.7, 1, 1.1])  # the first card is wider: its badge says what it compares
    # the change is the tree embedding's against the direct fit, so it sits under the tree embedding's card and
    # names what it is measured from
    cols[0].metric(f"{E} of F(X)", f"{model.objective_:.4g}",
                   delta=f"{model.objective_ - model.direct_fit_objective_:+.3g} {DELTA_FROM}", delta_color="inverse",
                   help="The tree embedding's objective on the training points (lower is better); below it, its change "
                        "from the direct fit F0(X), where the path starts (green: the path lowered it).")
    cols[1].metric("direct fit F0(X)", f"{model.direct_fit_objective_:.4g}",
                   help="The TAO tree fitted directly to the free embedding: where the path starts.")
    cols[2].metric("free embedding Z0", f"{model.free_objective_:.4g}",
                   help="The unconstrained embedding, no mapping: the lower bound.")
    cols[3].metric("Leaves", tree.n_leaves)
    cols[4].metric("Nonzero weights", tree.n_nonzero_weights())
    for i, key in enumerate(("test_knn_accuracy", "test_trustworthiness")):
        if key in record.metrics:
            label = "test 5-NN accuracy" if i == 0 else "test trustworthiness"
            cols[5].metric(label, f"{record.metrics[key]:.3f}", help="Not a measure from the thesis: a 5-nearest-"
                           "neighbour vote in the plane, test points mapped through the tree.")
            break

    # ------------------------------------------------------------------ the map and the tree
    c1, c2, c3 = st.columns(3)
    regions = c1.checkbox("Leaf regions", value=True, key="embeddings.regions",
                          help="Each leaf's region: the convex hull of its training points' positions.")
    show_test = c2.checkbox(f"Map the {test_part} points through the tree", value=test_part is not None,
                            key="embeddings.test", disabled=test_part is None)
    left, right = st.columns([3, 2])
    Z = model.transform(prepared.X_train)
    leaves = model.apply(prepared.X_train)
    test_Z = test_classes = None
    if show_test and test_part is not None:
        test_Z = model.transform(prepared.X(test_part))
        test_classes = prepared.classes(test_part)
    show_figure(embedding_map(Z, classes=classes, class_names=names, leaves=leaves if regions else None,
                              test_Z=test_Z, test_classes=test_classes,
                              subtitle=f"{Z.shape[0]} training points"
                              + (f", {test_Z.shape[0]} {test_part} points mapped (open diamonds)"
                                 if test_Z is not None else "")),
                key="embeddings.map", name=(record.name, "map"), where=left)
    left.caption("Each region is numbered with its leaf's id, as in the tree beside it. Leaves partition the "
                 "input space, not the plane, so two leaves' regions can overlap (the thesis notes it too). A linear "
                 "leaf maps its points by its own linear map.")
    options = TreeFigureOptions(max_levels=min(tree.max_depth, 6) or None, family_label=family_name(record.family))
    show_figure(tree_figure(tree, stats=view.stats, options=options),
                key="embeddings.tree", name=(record.name, "tree"), where=right)
    right.caption(leaf_numbers_caption(tree) + " Open the run in the Tree explorer for each node's rule and weights.")
    if classes is not None:
        counts, class_order = class_counts_by_node(tree, prepared.X_train, classes)
        counts = counts[:, [class_order.index(c) for c in names if c in class_order]]  # the map's class order
        occupied = [int(v) for v in tree.leaves if view.stats.count[v] > 0]
        show_figure(leaf_class_bars(counts[occupied], occupied, [c for c in names if c in class_order],
                                    subtitle="training points reaching each leaf"),
                    key="embeddings.leaf_bars", name=(record.name, "leaf bars"), where=right)
    if prepared.dataset.image_shape is not None and tree.decision_nodes.size:
        show_figure(weight_images_grid(tree, prepared.dataset.image_shape),
                    key="embeddings.weights", name=(record.name, "weights"))
        st.caption("Node weights as images: blue pushes a point right, red left, white is exactly zero.")

    # ------------------------------------------------------------------ the path
    st.subheader("Learning curve")
    show_figure(embedding_objective_curve(model.history_, free=model.free_objective_,
                                          direct=model.direct_fit_objective_, name=E),
                key="embeddings.curve", name=(record.name, "curve"))
    st.caption(f"Step 0 is the direct fit; each later step is one Z-step and one tree step at the next μ. "
               f"First μ: {model.mu0_:.3g}.")

# ---------------------------------------------------------------------- the comparison
st.subheader("Beside other embeddings of the same points")
results = state.view_results()
key = f"{PREFIX}:{run_id}"
job = page_job(PREFIX)
if job is not None and job.done:
    snap = job.snapshot()
    if snap.status == "finished" and snap.result:
        results[f"{PREFIX}:{snap.result[0]}"] = snap.result[1]


def start_comparison() -> None:
    with user_errors("starting the comparison"):
        start(PREFIX, ComparisonJob(state.store(), run_id, include_umap=st.session_state.get("embeddings.umap", True)),
              label=f"Comparing embeddings of '{record.name}'", meta={"run_id": run_id})


c1, c2 = st.columns([1, 3])
c2.checkbox("Include UMAP (umap-learn: its first run in a while compiles it first, about a minute (54 s on digits); "
            "runs right after take seconds)", value=True, key="embeddings.umap")
c1.button("Compare" if key not in results else "Compare again", type="primary", on_click=start_comparison,
          key="embeddings.compare")
job_panel(PREFIX, cancelled="The comparison was cancelled.")
if key not in results:
    st.caption("Fits a CART tree to the free embedding (depth chosen on 30 % of the points) and UMAP, and scores "
               "every embedding with the same measures. Runs in the background.")
else:
    with user_errors("showing the comparison"):
        result = results[key]
        train_classes = None if result["classes"] is None else result["classes"][0]
        panels = [{"title": row["method"], "Z": result["train"][row["method"]],
                   "note": f"{result['objective_name']} {row['objective']:.4g}"} for row in result["rows"]]
        show_figure(embedding_panels(panels, classes=train_classes, class_names=names,
                                     subtitle="training points; the tree embedding is the first panel"),
                    key="embeddings.panels", name=(record.name, "panels"))
        table = pd.DataFrame([{
            "method": r["method"] + ("" if r["thesis"] else " †"),
            f"{result['objective_name']} (train)": r["objective"],
            "5-NN acc, train (leave-one-out) †": r["knn_train"],
            f"5-NN acc, {result['test_part']} mapped †": r["knn_test"],
            "trustworthiness †": r["trustworthiness"],
            "CART nodes": r["nodes"],
            "fit s": r["seconds"],
        } for r in result["rows"]])
        st.dataframe(readable(table.dropna(axis=1, how="all")), hide_index=True)  # "—" where a method has no value
        st.caption(f"The thesis compares only the embedding objective ({result['objective_name']}, lower is "
                   "better) of the free embedding, the direct fits and the tree embedding. † Not from the thesis: "
                   "UMAP, and 5-nearest-neighbour accuracy and trustworthiness (5 neighbours) in the plane, which a "
                   "user would judge a map by. The free embedding has no mapping for new points.")
