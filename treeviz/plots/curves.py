"""Training curves from an estimator's ``history_`` (a list of dicts of numbers, one per epoch)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from models.ground.errors import TreevizError
from treeviz.plots import style

# When no panels are given, keys are grouped by their names, in this order: (title, name parts).
_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Loss", ("loss", "objective", "nll", "mse", "mae", "energy", "cost")),
    ("Score", ("score", "acc", "r2", "purity", "auc", "f1", "precision", "recall")),
    ("Error", ("error", "err")),
    ("Counts", ("n_", "nnz", "count", "nodes", "leaves", "features", "depth", "params", "nonzero",
                "selected", "active")),
)
#: Axis keys tried in order when none is given, and bookkeeping fields never drawn as curves.
X_KEYS = ("epoch", "iteration", "tree")
_BOOKKEEPING = ("time", "seconds", "duration", "lr", "learning_rate")
#: The widest x span that gets a tick at every whole number; wider axes get Plotly's own spacing.
MAX_UNIT_TICKS = 12


def _group_of(key: str) -> str | None:
    """The panel of a key by its name, or None for bookkeeping fields (timings, learning rate)."""
    k = key.lower()
    if k.endswith("_s") or any(part == k or k.startswith(part + "_") for part in _BOOKKEEPING):
        return None
    for title, parts in _GROUPS:
        if title == "Counts":
            if k.startswith("n_") or any(p in k for p in parts[1:]):
                return title
        elif any(p in k for p in parts):
            return title
    return key  # a key of its own


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, Real):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _kept_record(records: Sequence[Mapping[str, Any]], kept: str | None, xs: Sequence[Any]) -> float | None:
    """The x of the record with the lowest finite ``kept`` value (the first on ties), or None."""
    if not kept:
        return None
    values = [_number(r.get(kept)) for r in records]
    found = [(v, i) for i, v in enumerate(values) if v is not None]
    if not found:
        return None
    return float(xs[min(found)[1]])


def _panel_keys(records: Sequence[Mapping[str, Any]], x: str, panels: Sequence[tuple[str, Sequence[str]]] | None,
                keys: Sequence[str] | None) -> dict[str, list[str]]:
    """The keys each panel draws (panel title -> keys), from ``panels`` or grouped by name: the history's
    numeric keys other than ``x``, or exactly ``keys``."""
    numeric: list[str] = []
    for r in records:
        for k, v in r.items():
            if k != x and k not in numeric and _number(v) is not None:
                numeric.append(k)
    if keys is not None:
        missing = [k for k in keys if k not in numeric]
        if missing:
            raise TreevizError(
                f"The training history has no numbers under {missing}; it has {numeric or 'none'}."
            )
        numeric = list(keys)
    groups: dict[str, list[str]] = {}
    if panels is not None:
        for panel_title, panel_keys in panels:
            present = [k for k in panel_keys if k in numeric]
            if present:
                groups[panel_title] = present
    else:
        for k in numeric:
            group = _group_of(k) if keys is None else (_group_of(k) or k)
            if group is not None:
                groups.setdefault(group, []).append(k)
    return groups


def training_curves(
    history: Sequence[Mapping[str, Any]] | None,
    *,
    panels: Sequence[tuple[str, Sequence[str]]] | None = None,
    x: str | None = None,
    keys: Sequence[str] | None = None,
    title: str = "Training curves",
    height: int | None = None,
    kept: str | None = None,
) -> go.Figure:
    """Curves of the numbers recorded during training, one panel per kind of quantity.

    Parameters
    ----------
    history : list of dict
        An estimator's ``history_``. Non-numeric values are ignored; missing or non-finite
        values leave gaps.
    panels : list of (title, keys), optional
        The panels to draw, in order (a family's ``Curves``: losses, then scores, then counts);
        keys a history lacks are skipped. Without it, keys are grouped by name (losses, scores,
        errors, counts, anything else alone) and bookkeeping fields (timings, learning rate)
        are left out.
    x : str, optional
        The key of the x axis (epoch, iteration, tree). By default the first of
        :data:`X_KEYS` that every record has, else the record number (1, 2, ...). The axis shows
        whole numbers.
    keys : list of str, optional
        Only these keys (each must be in the history).
    title : str
    kept : str, optional
        A history key whose lowest value marks the record the model keeps (early stopping that
        restores the best epoch): a dotted line at that record in every panel, named in the
        subtitle, so counts read off the curves can be matched with the stored model's.

    Returns
    -------
    go.Figure
        One ``lines+markers`` trace per key (named by the key), one panel per group. An empty
        history gives a figure with the note "no training history". ``fig.layout.meta`` holds
        ``groups`` (panel title -> keys) and ``x`` (the axis key).
    """
    records = [r for r in (history or []) if isinstance(r, Mapping)]
    if x is None:
        x = next((k for k in X_KEYS if records and all(_number(r.get(k)) is not None for r in records)), "")
    groups = _panel_keys(records, x, panels, keys)
    if not records or not groups:
        return style.message_figure("no training history", title=title)

    xs = [_number(r.get(x)) for r in records] if x else [None]
    if any(v is None for v in xs):
        xs, x_title = list(range(1, len(records) + 1)), "record"
    else:
        x_title = x
    x_title = style.plot_text(x_title)
    if panels is None:
        known = [t for t, _ in _GROUPS]
        order = [t for t in known if t in groups] + [t for t in groups if t not in known]
    else:
        order = list(groups)
    rows = len(order)
    # history keys and panel titles come from a run's history, which a run zip carries: Plotly text
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, subplot_titles=style.plot_texts(order),
                        vertical_spacing=min(0.08, 0.35 / max(rows - 1, 1)))
    single = len(records) == 1
    color_i = 0
    for row, group in enumerate(order, start=1):
        for k in groups[group]:
            ys = [_number(r.get(k)) for r in records]
            color = style.line_color(color_i)
            color_i += 1
            fig.add_trace(go.Scatter(
                x=xs, y=ys, mode="lines+markers", name=style.plot_text(k), legendgroup=group,
                legendgrouptitle=dict(text=style.plot_text(group)) if k == groups[group][0] else None,
                line=dict(color=color, width=2), marker=dict(color=color, size=10 if single else 6),
                connectgaps=False,
                hovertemplate=f"<b>{style.plot_text(k)}</b><br>{x_title} %{{x}}: %{{y:.5~g}}<extra></extra>",
            ), row=row, col=1)
        fig.update_yaxes(showgrid=True, gridcolor="#ECEEF1", zeroline=False, row=row, col=1)
    # one tick per whole number only over a short span: a bandit stream's first records sit at rounds
    # 400, 800, ..., where one tick per round made the browser lay out thousands of ticks (about 30 s
    # for each redraw of the Train page's live chart, a frozen tab)
    fig.update_xaxes(showgrid=True, gridcolor="#ECEEF1", zeroline=False, tickformat="d",
                     dtick=1 if max(xs) - min(xs) <= MAX_UNIT_TICKS else None)
    fig.update_xaxes(title=dict(text=x_title), row=rows, col=1)
    if single:  # one point: give the x axis some room so the marker is not on the edge
        fig.update_xaxes(range=[xs[0] - 1, xs[0] + 1])
    subtitle = f"{len(records)} record{'s' if len(records) != 1 else ''}"
    kept_at = _kept_record(records, kept, xs)
    if kept_at is not None:
        for row in range(1, rows + 1):
            fig.add_vline(x=kept_at, line=dict(color=style.INK, dash="dot", width=1.2), row=row, col=1)
        subtitle += f" · dotted: the stored model keeps {x_title} {kept_at:g} (lowest {style.plot_text(kept)})"
    style.apply_style(fig, title=style.plot_text(title), subtitle=subtitle,
                      height=height or int(min(140 + 210 * rows, 1100)))
    fig.update_layout(hovermode="x unified" if not single else "closest", legend=dict(tracegroupgap=14),
                      margin=style.MARGIN_SUBPLOTS,
                      meta=dict(groups={g: groups[g] for g in order}, x=x_title))
    fig.update_annotations(font=dict(size=13))
    return fig
