"""Per-node facts that figures show: subtree sizes, class mix, node values and hover text."""

from __future__ import annotations

import numpy as np

from models.ground.tree import NodeStats, Tree
from treeviz.plots import style
from treeviz.readers.rules import node_rule


def subtree_sizes(tree: Tree) -> np.ndarray:
    """Number of nodes in the subtree of each node (itself included)."""
    size = np.ones(tree.n_nodes, dtype=np.int64)
    for nodes in reversed(tree.levels):
        internal = nodes[~tree.is_leaf[nodes]]
        size[internal] += size[tree.children_left[internal]] + size[tree.children_right[internal]]
    return size


def class_fractions(tree: Tree, stats: NodeStats | None) -> np.ndarray | None:
    """Class mix per node (rows sum to 1; NaN rows where unknown), or None when nothing is known.

    From the data's class counts where samples reach a node, else from non-negative leaf values.
    """
    out = np.full((tree.n_nodes, tree.n_outputs), np.nan)
    leaves = tree.leaves
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
    """Mean target per node from the data, else the leaf value (NaN where neither is known)."""
    value = np.full(tree.n_nodes, np.nan)
    value[tree.leaves] = tree.leaf_value[tree.leaves, 0]
    if stats is not None and stats.value_mean is not None:
        has = np.isfinite(stats.value_mean)
        value[has] = stats.value_mean[has]
    return value


def hover_text(tree: Tree, v: int, stats: NodeStats | None, root_count: float,
                 names: list[str], cut_below: int) -> str:
    """The hover text of node ``v``: rule or prediction, samples, class counts or mean, pruning."""
    lines = []
    if tree.is_leaf[v]:
        lv = tree.leaf_value[v]
        if tree.task == "classification":
            k = int(np.argmax(lv))
            lines.append(f"leaf · predicts <b>{names[k]}</b> (score {style.fmt_num(lv[k], 3)})")
        else:
            lines.append(f"leaf · predicts {tree.output_names[0]} = <b>{style.fmt_num(lv[0])}</b>")
    else:
        lines.append(f"split: right if <b>{node_rule(tree, v)}</b>")
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
            lines.append(f"mean {tree.output_names[0]} = {style.fmt_num(stats.value_mean[v])} "
                         f"± {style.fmt_num(stats.value_std[v], 3)}")
    a = float(tree.active[v])
    if a == 0:
        lines.append("<i>pruned (active = 0)</i>")
    elif np.any(tree.active < 1):
        lines.append(f"active: {a:.3g}")
    if cut_below:
        lines.append(f"▼ {cut_below} more nodes below (outside the window)")
    return "<br>".join(lines)
