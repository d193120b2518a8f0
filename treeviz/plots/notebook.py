"""A model or a Tree in a notebook: a one-line header over the Tree explorer's diagram.

:func:`card_html` is the renderer that ``import treeviz`` registers with
:mod:`models.ground.display`, so a cell ending in a fitted estimator or a Tree shows it. The
output works offline: plotly.js is written into each output (about 4.8 MB), nothing is fetched
from a CDN, and the output still draws when the notebook is opened again elsewhere or when earlier
outputs were cleared.
"""

from __future__ import annotations

import html

from models.ground.display import Card
from treeviz.plots.tree_diagram import TreeFigureOptions, tree_figure

#: Deeper trees are drawn down to this many levels below the root (the header says so).
MAX_LEVELS = 6

__all__ = ["MAX_LEVELS", "card_header", "card_html"]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def card_header(card: Card) -> str:
    """The header's text: class name, size (nodes, leaves, depth; trees for an ensemble) and the
    headline metric when known."""
    tree = card.trees[0]
    size = f"{_plural(tree.n_nodes, 'node')}, {_plural(tree.n_leaves, 'leaf').replace('leafs', 'leaves')}, " \
           f"depth {tree.max_depth}"
    parts = [card.title]
    if len(card.trees) > 1:
        total = sum(t.n_nodes for t in card.trees)
        parts += [f"{_plural(len(card.trees), 'tree')} ({total:,} nodes in all)", f"tree 1 drawn: {size}"]
    else:
        parts.append(size)
    parts.append(_plural(tree.n_features, "feature"))
    if card.metric is not None:
        label, value = card.metric
        parts.append(f"{label} {value:.3f}")
    if tree.max_depth > MAX_LEVELS:
        parts.append(f"top {MAX_LEVELS} of {tree.max_depth} levels drawn")
    return " · ".join(parts)


def card_html(card: Card) -> str:
    """The card as one self-contained HTML fragment: the header, then the diagram of the first tree
    with plotly.js inlined (no request leaves the notebook)."""
    tree = card.trees[0]
    levels = MAX_LEVELS if tree.max_depth > MAX_LEVELS else None
    fig = tree_figure(tree, options=TreeFigureOptions(max_levels=levels, family_label=card.family_label or None))
    figure = fig.to_html(include_plotlyjs=True, full_html=False, default_height=f"{fig.layout.height}px",
                         config={"displaylogo": False, "responsive": True})
    title, _, rest = card_header(card).partition(" · ")
    header = (f'<div class="treeviz-card-header" style="font-family: sans-serif; margin: 0 0 4px 0">'
              f"<b>{html.escape(title)}</b>{' · ' if rest else ''}{html.escape(rest)}</div>")
    return f'<div class="treeviz-card">{header}{figure}</div>'
