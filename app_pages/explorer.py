"""Tree explorer: the tree diagram, a node panel, and one sample's path through the tree."""

import pandas as pd
import streamlit as st

from treeviz.plots import (
    TreeFigureOptions,
    class_balance_figure,
    forest_summary_figure,
    node_from_selection,
    tree_figure,
    weight_images_grid,
    weights_heatmap,
)
from treeviz.plots.export import export_name
from treeviz.plots.node_info import node_panel
from treeviz.plots.style import fmt_count
from treeviz.readers.rules import leaf_summary, node_rule, path_conditions, rules
from treeviz.services.views.export import ALL_TERMS, TREE_FORMATS, format_notes, render, tree_exports
from treeviz.services.views.run_view import PARTS
from treeviz.ui import state
from treeviz.ui.errors import user_errors
from treeviz.ui.explorer_views import regions_section, sample_image, split_section
from treeviz.ui.figures import show_figure
from treeviz.ui.labels import family_name, run_headline
from treeviz.ui.node_browser import show_node_rows
from treeviz.ui.text import md, md_code

NODE = "explorer.node"
ROOT = "explorer.root"

st.title("Tree explorer")
run_id = state.current_run_id()
if run_id is None:
    st.info("No run to show yet: train a model on the Train page, or pick a run in the sidebar.")
    st.stop()


def on_tree_select() -> None:
    """A click on a node selects it (runs before the page, so the node input can follow)."""
    node = node_from_selection(st.session_state.get("explorer.tree"))
    if node is not None:
        st.session_state[NODE] = node


def zoom_to_selected() -> None:
    st.session_state[ROOT] = st.session_state.get(NODE, 0)


def zoom_to_root() -> None:
    st.session_state[ROOT] = 0


with user_errors("opening the run"):
    record = state.store().get(run_id)
    st.caption(f"**{md(record.name)}** · {family_name(record.family)} · trained on {md(record.dataset_name)} · "
               f"{record.created_at:%Y-%m-%d %H:%M}")
    controls = st.columns([1, 1, 1, 1])
    part = controls[0].selectbox("Data for statistics", PARTS, index=0, key="explorer.part",
                                 help="Which split is routed through the tree for counts and colours.")
    trees = state.run_model(run_id).to_trees()
    tree_index = 0
    if len(trees) > 1:
        tree_index = st.selectbox(f"Tree of the ensemble ({len(trees)} trees)", list(range(len(trees))),
                                  key=f"explorer.tree_index.{run_id}", format_func=lambda i: f"tree {i}",
                                  help="The views below show one tree; the forest summary compares all of them.")
    view = state.run_view(run_id, part, tree_index)
    tree = view.tree
    if len(trees) > 1:
        with st.expander(f"Forest summary: {len(trees)} trees", expanded=False):
            if view.n_rows:
                show_figure(forest_summary_figure(trees, view.X), key="explorer.forest", name=(record.name, "forest"))
                st.caption(f"Vote agreement on the {part} split: how often two trees' own predictions agree. "
                           + str(trees[0].meta.get("ensemble", "")))
            else:
                st.info(f"The {part} split is empty; pick another split to compare the trees' votes.")
    if view.n_rows == 0:
        st.info(f"The {part} split is empty for this run; statistics use no data.")

    # ---------------------------------------------------------- headline numbers
    metrics = st.columns(7)
    score = run_headline(record)
    if score is not None:
        metrics[0].metric(score.title, f"{score.value:.3f}")
    metrics[1].metric("Nodes", tree.n_nodes)
    metrics[2].metric("Leaves", tree.n_leaves)
    metrics[3].metric("Depth", tree.max_depth)
    metrics[4].metric("Parameters", tree.n_params())
    metrics[5].metric("Nonzero weights", tree.n_nonzero_weights())
    if view.n_rows:
        metrics[6].metric("FLOPs / sample", f"{tree.flops(view.X):.2f}",
                          help="Nonzero weights met on the root-to-leaf path, averaged over the split.")
    for note in tree.meta.get("notes", ()):  # what the family wants said about this tree
        st.caption(md(note))
    if tree.head_decides:
        st.info("A head on the inputs and the path through the tree predicts, not the leaves: leaf colours and "
                "labels show the training rows that reach each leaf, pruned leaves have no class, and each rule "
                "says how often the model agrees with its leaf. Parameters and FLOPs count the head "
                f"({tree.meta.get('head', {}).get('parameters', '?')} parameters).")

    # ---------------------------------------------------------- view controls
    color_options = {"classification": ["auto", "class", "active"],
                     "regression": ["auto", "value", "active"]}.get(tree.task, ["auto", "active"])
    color_by = controls[1].selectbox("Colour nodes by", color_options, key="explorer.color")
    has_pruned = bool((tree.active == 0).any())
    pruned = controls[2].radio("Pruned nodes", ("dashed", "hidden"), horizontal=True, key="explorer.pruned",
                               disabled=not has_pruned,
                               help="Nodes whose activity a_t is 0." if has_pruned else "This tree has none.")
    if tree.max_depth > 1:
        levels = controls[3].slider("Levels shown", 1, tree.max_depth, min(tree.max_depth, 6),
                                    key="explorer.levels", help="Depth window below the subtree root.")
    else:
        levels = 1
    affine = view.prepared.affine_scaling() is not None and view.prepared.config.scaling != "none"
    image_table = view.prepared.dataset.image_shape is not None
    # an image table starts in the scaled units (its own key, so a table's choice does not carry over): in
    # the data's units a rarely inked pixel's tiny σ makes its weight w/σ dwarf the others, and the bars and
    # the weight image show that one pixel instead of the pattern
    original_units = st.checkbox(
        "Units: the data's own (untick for the model's scaled units)", value=not image_table,
        key=f"explorer.units{'.image' if image_table else ''}", disabled=not affine,
        help="One unit system for the diagram, the node panel (rule, bias, bars, image), the weights and the "
             "rules. Splits are learned on scaled features; the data's own units rewrite each hyperplane "
             "exactly (w/σ per feature). Not available after a quantile transform. Image tables start in the "
             "scaled units: in pixel units a rarely inked pixel (tiny σ) gets a weight that hides the pattern.",
    )
    # the one tree every rule, bar, bias and image below is read from
    shown = view.rules_tree(original_units)
    in_data_units = original_units and affine
    units_note = ("Units shown: the data's own (w/σ per feature); the weights' sizes depend on each feature's "
                  "spread." if in_data_units else
                  "Units shown: the model's scaled features, so the weights' sizes compare across features.")
    root = int(st.session_state.get(ROOT, 0))
    if not 0 <= root < tree.n_nodes:
        root = 0

    # ---------------------------------------------------------- one sample's path
    path_cols = st.columns([1, 1, 2])
    show_path = path_cols[0].checkbox("Highlight a sample's path", key="explorer.show_path",
                                      disabled=view.n_rows == 0)
    row = int(path_cols[1].number_input(f"Row of the {part} split", 0, max(0, view.n_rows - 1), 0,
                                        key="explorer.row", disabled=view.n_rows == 0))
    highlight = None
    if show_path and view.n_rows:
        path = tree.paths(view.X[row])[0]
        highlight = [int(v) for v in path if v >= 0]

    if not 0 <= int(st.session_state.get(NODE, 0)) < tree.n_nodes:
        st.session_state[NODE] = 0  # e.g. another run with fewer nodes was picked
    selected = int(st.session_state.get(NODE, 0))
    diagram = TreeFigureOptions(root=root, max_levels=levels, color_by=color_by, highlight=highlight, selected=selected,
                                pruned=pruned, family_label=family_name(record.family))
    fig = tree_figure(shown, stats=view.stats, options=diagram)
    show_figure(fig, key="explorer.tree", on_select=on_tree_select, selection_mode="points",
                config={"scrollZoom": True}, name=(record.name, "tree"))
    nav = st.columns([1, 1, 3])
    nav[0].button("Zoom to selected node", on_click=zoom_to_selected, key="explorer.zoom")
    nav[1].button("Back to the root", on_click=zoom_to_root, key="explorer.unzoom", disabled=root == 0)
    nav[2].caption(f"Showing the subtree of node {root}, {levels} level(s) deep. Click a node to "
                   "inspect it; scroll to zoom, drag to pan.")

    # ---------------------------------------------------------- node panel
    st.subheader("Node")
    node = int(st.number_input("Selected node", 0, tree.n_nodes - 1, key=NODE,
                               help="Click a node in the diagram, or type its number."))
    image_shape = view.prepared.dataset.image_shape
    # rule, bias, bars and image of this node all come from `shown`, so they agree
    panel = None if tree.is_leaf[node] else node_panel(shown, node, image_shape, k=10)
    left, right = st.columns(2)
    with left:
        kind = "leaf" if tree.is_leaf[node] else "decision node"
        facts = {"node": node, "kind": kind, "depth": int(tree.node_depth[node]),
                 "activity a_t (0 = pruned)": round(float(tree.active[node]), 4)}
        if view.stats is not None:
            facts[f"{part} samples"] = fmt_count(float(view.stats.count[node]))  # an integer unless routing is soft
            if view.stats.value_mean is not None and view.stats.count[node] > 0:
                facts["mean target"] = round(float(view.stats.value_mean[node]), 4)
                facts["target std"] = round(float(view.stats.value_std[node]), 4)
        st.dataframe(pd.DataFrame({"": list(facts), "value": [str(v) for v in facts.values()]}),
                     hide_index=True)
        if panel is None:
            st.markdown(f"**{'Leaf' if shown.head_decides else 'Predicts'}:** {md(leaf_summary(shown, node))}")
        else:
            st.markdown(f"**Right if** {md_code(panel.right_rule)}  \n**Left if** {md_code(panel.left_rule)}")
        path_rules = path_conditions(shown, node)  # one interval per feature's thresholds, as the rules
        if path_rules:
            st.caption("Reached when: " + md(" AND ".join(path_rules)))
    with right:
        if view.stats is not None and view.stats.class_counts is not None:
            show_figure(class_balance_figure(view.stats.class_counts[node], tree.output_names,
                                             title=f"Node {node}: {part} rows per class", height=260),
                        key="explorer.node_mix", name=(record.name, "node mix"))
    if panel is not None:
        w_left, w_right = st.columns(2)
        show_figure(panel.bars, key="explorer.top_weights", name=(record.name, "top weights"), where=w_left)
        w_left.caption(units_note)
        if panel.image is not None:
            show_figure(panel.image, key="explorer.weight_image", name=(record.name, "weight image"),
                        where=w_right)
            w_right.caption("Blue pushes a sample right, red left; white pixels have zero weight. "
                            + ("Units shown: the data's own pixel units (w/σ; σ = 1 for constant pixels), where "
                               "a rarely inked pixel's weight can hide the rest." if in_data_units else
                               "Units shown: the model's scaled pixels, which show the pattern."))
    split_section(view, node, run_name=record.name, original_units=original_units)  # the node's split by class

    if view.n_rows:
        show_node_rows(record, run_id, part, node, tree_index, len(trees))  # the rows that reach the node

    with st.expander("Weights of all decision nodes"):
        show_figure(weights_heatmap(shown), key="explorer.heatmap", name=(record.name, "heatmap"))
        st.caption(units_note)
        if image_shape is not None:
            shared_scale = st.toggle(
                "One colour scale for all nodes", value=False, key="explorer.shared_scale",
                help="Off: each image on its own scale ±max|w| of that node, so every node's pattern shows. "
                     "On: one scale, so colours compare across nodes (the root's large weights wash out the rest).")
            show_figure(weight_images_grid(shown, image_shape, shared_scale=shared_scale),
                        key="explorer.weight_grid", name=(record.name, "weight grid"))

    # ---------------------------------------------------------- sample path details
    if show_path and view.n_rows:
        st.subheader(f"Path of {part} row {row}")
        sample_image(view, row, run_name=record.name)  # an image table's sample, as its picture
        steps = tree.sample_path(view.X[row])
        # a table that wraps its cells, so a long oblique condition is read whole, up to its ≤ or > sign
        st.table(pd.DataFrame([{"node": s.node, "depth": s.depth,
                                "condition that holds": node_rule(shown, s.node, s.goes_right),
                                "w·x + b": f"{s.value:.4g}", "P(right)": f"{s.p_right:.4g}"}
                               for s in steps]), hide_index=True)
        truth = view.true_label(row)
        st.markdown(f"**Prediction:** {md(view.predicted_label(row))}"
                    + (f" · **true:** {md(truth)}" if truth is not None else ""))
        conditions = " AND ".join(node_rule(shown, s.node, s.goes_right) for s in steps) or "TRUE"
        st.code(f"IF {conditions} THEN {leaf_summary(shown, int(tree.apply(view.X[row])[0]))}",
                language=None, wrap_lines=True)

    regions_section(view, run_id, row, run_name=record.name, original_units=original_units)

    with st.expander(f"All {tree.n_leaves} rules"):
        every_term = st.toggle("Show every term", value=False, key="explorer.all_terms",
                               help="Oblique splits are folded to their 4 largest terms on screen; the "
                                    "downloaded rules and the report always hold every term.")
        [export] = tree_exports(view.model, view.prepared, indices=[tree_index], original_units=original_units,
                                run_name=record.name, run_id=record.run_id, dataset_name=record.dataset_name,
                                title=f"Rules of run {record.run_id} '{record.name}'")
        all_rules = rules(shown, max_terms=ALL_TERMS if every_term else 4, agreement=export.agreement)
        st.code("\n".join(all_rules[:500]) + (f"\n… ({len(all_rules) - 500} more rules in the download)"
                                              if len(all_rules) > 500 else ""), language=None, wrap_lines=True)
        base = export_name(record.name, f"tree {tree_index}" if len(trees) > 1 else "tree")
        options: dict[str, str | None] = {}
        if export.has_code:  # the SQL reads a table; a row key column lets predictions join back onto its rows
            sql_table, sql_key = st.columns(2)
            options["table"] = sql_table.text_input("SQL: table", value="data", key="explorer.sql_table",
                                                    help="The table the SQL query reads (one column per feature).")
            key = sql_key.text_input("SQL: row key column", value="", key="explorer.sql_key",
                                     placeholder="none",
                                     help="A column of that table selected first (for example its id), so each "
                                          "prediction joins back onto its row; leave empty for none.")
            options["row_key"] = key.strip() or None
        for column, fmt in zip(st.columns(len(TREE_FORMATS)), TREE_FORMATS.values(), strict=True):
            if fmt.code and not export.has_code:
                column.caption("A soft tree sends every sample down every branch with some probability, so it has "
                               "no if-then code.")
                continue
            with user_errors(f"writing the tree as {fmt.label}"):
                column.download_button(fmt.label, render(fmt.key, [export], **options),
                                       file_name=f"{base}{fmt.suffix}",
                                       mime=fmt.mime, key=f"explorer.{fmt.key}_download", on_click="ignore",
                                       help=fmt.help)
                for sentence in format_notes(fmt.key, [export], **options):  # e.g. SQL columns renamed
                    column.caption(md(sentence))
        st.caption(("Rules and code take the data's own units (raw rows); missing values are filled with the "
                    "training medians, as the app does." if export.units == "input" else
                    f"Rules and code take the model's prepared features ({md(export.units_reason)}).")
                   + (f" {md(export.output_note)}" if export.output_note else ""))
