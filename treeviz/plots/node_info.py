"""Per-node facts that figures show: subtree sizes, class mix, node values, hover text, and the
explorer's node panel (rule, bias, top-weight bars and weight image, all read from one tree)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from models.ground.tree import NodeStats, Tree
from treeviz.plots import style
from treeviz.plots.weights import top_weights_figure, weight_image_figure
from treeviz.readers.rules import leaf_label, leaf_state, node_rule


def subtree_sizes(tree: Tree) -> np.ndarray:
    """Number of nodes in the subtree of each node (itself included)."""
    size = np.ones(tree.n_nodes, dtype=np.int64)
    for nodes in reversed(tree.levels):
        internal = nodes[~tree.is_leaf[nodes]]
        size[internal] += size[tree.children_left[internal]] + size[tree.children_right[internal]]
    return size


def _valued_leaves(tree: Tree) -> np.ndarray:
    """The leaves whose value means something (not pruned, reached by training rows)."""
    return np.array([v for v in tree.leaves if leaf_state(tree, int(v)) in ("value", "head")], dtype=np.int64)


def class_fractions(tree: Tree, stats: NodeStats | None) -> np.ndarray | None:
    """Class mix per node (rows sum to 1; NaN rows where unknown), or None when nothing is known.

    From the data's class counts where samples reach a node, else from non-negative leaf values
    (not a pruned or empty leaf's: its value is no class mix, see :func:`leaf_state`).
    """
    out = np.full((tree.n_nodes, tree.n_outputs), np.nan)
    leaves = _valued_leaves(tree)
    lv = tree.leaf_value[leaves]
    if np.all(lv >= 0):
        tot = lv.sum(axis=1, keepdims=True)
        ok = tot[:, 0] > 0
        out[leaves[ok]] = lv[ok] / tot[ok]
    if stats is not None and stats.class_counts is not None:
        has = stats.count > 0
        out[has] = stats.class_fraction[has]
    return None if np.all(np.isnan(out)) else out


def node_values(tree: Tree, stats: NodeStats | None) -> np.ndarray:
    """Mean target per node from the data, else the leaf value (NaN where neither is known, and
    at a pruned or empty leaf no data reaches)."""
    value = np.full(tree.n_nodes, np.nan)
    leaves = _valued_leaves(tree)
    value[leaves] = tree.leaf_value[leaves, 0]
    if stats is not None and stats.value_mean is not None:
        has = np.isfinite(stats.value_mean)
        value[has] = stats.value_mean[has]
    return value


def hover_text(tree: Tree, v: int, stats: NodeStats | None, root_count: float,
                 names: list[str], cut_below: int) -> str:
    """The hover text of node ``v``: rule or prediction, samples, class counts or mean, pruning.
    ``names`` are the output names (classes, or the target) as Plotly text (:func:`style.class_names`),
    made once for every node."""
    lines = []
    output = names[0] if names else ""
    state = leaf_state(tree, v) if tree.is_leaf[v] else ""
    if state == "pruned":
        lines.append("leaf · pruned: no prediction")
    elif state == "empty":
        lines.append("leaf · no training row reached it: no prediction")
    elif state == "head":
        rows = "mostly" if tree.task == "classification" else "mean"
        label = style.plot_text(leaf_label(tree, v))
        lines.append(f"leaf · the head decides; its training rows: {rows} <b>{label}</b>")
    elif tree.is_leaf[v]:
        lv = tree.leaf_value[v]
        if tree.task == "classification":
            k = int(np.argmax(lv))
            lines.append(f"leaf · predicts <b>{names[k]}</b> (score {style.fmt_num(lv[k], 3)})")
        else:
            lines.append(f"leaf · predicts {output} = <b>{style.fmt_num(lv[0])}</b>")
    else:
        lines.append(f"split: right if <b>{style.plot_text(node_rule(tree, v))}</b>")
    if stats is not None:
        c = float(stats.count[v])
        share = f" ({c / root_count:.1%} of window)" if root_count > 0 else ""
        lines.append(f"samples: {style.fmt_count(c)}{share}")
        if stats.class_counts is not None and c > 0:
            cc = stats.class_counts[v]
            order = [k for k in np.argsort(-cc, kind="stable") if cc[k] > 0]
            for k in order[:8]:
                lines.append(f"<span style='color:{style.class_color(k)}'>■</span> {names[k]}: "
                             f"{style.fmt_count(float(cc[k]))} ({cc[k] / c:.0%})")
            if len(order) > 8:
                lines.append(f"… {len(order) - 8} more classes")
        if stats.value_mean is not None and c > 0:
            lines.append(f"mean {output} = {style.fmt_num(stats.value_mean[v])} "
                         f"± {style.fmt_num(stats.value_std[v], 3)}")
    a = float(tree.active[v])
    if a == 0:
        lines.append("<i>pruned (active = 0)</i>")
    elif np.any(tree.active < 1):
        lines.append(f"active: {a:.3g}")
    if cut_below:
        lines.append(f"▼ {cut_below} more nodes below (outside the window)")
    return "<br>".join(lines)


@dataclass(frozen=True, eq=False)
class NodePanel:
    """What the explorer shows for one decision node, every piece read from the same ``tree``.

    ``tree`` is either the model's tree (scaled features) or its rewrite in the data's own units
    (``Tree.in_input_units``); mixing the two would show a rule whose largest terms are not the
    largest bars, and a bias that is not the rule's constant.
    """

    tree: Tree
    node: int
    right_rule: str
    left_rule: str
    bias: float
    top_features: list[int]  # by |weight|, largest first: the bars top-down and the rule's term order
    bars: go.Figure
    image: go.Figure | None


def node_panel(tree: Tree, node: int, image_shape: Sequence[int] | None = None, *, k: int = 10,
               max_terms: int = 4) -> NodePanel:
    """The rule (right and left), bias, top-``k`` weight bars and (for image data) weight image of
    decision node ``node``, all from ``tree``.

    Parameters
    ----------
    tree : Tree
        The tree in the units the panel shows (pass ``tree.in_input_units(mean, scale)`` for the
        data's own units).
    node : int
        A decision node.
    image_shape : (H, W), optional
        Draw the weights as an image too (pixels in row-major order).
    k, max_terms : int
        Bars shown; terms of an oblique rule shown before it folds the rest.
    """
    node = style.check_node(tree, node, decision=True)
    bars = top_weights_figure(tree, node, k=k)
    image = None if image_shape is None else weight_image_figure(tree, node, image_shape)
    return NodePanel(tree, node, node_rule(tree, node, True, max_terms=max_terms),
                     node_rule(tree, node, False, max_terms=max_terms), float(tree.bias[node]),
                     list(bars.layout.meta["features"]), bars, image)
