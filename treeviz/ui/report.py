"""A run as one self-contained HTML report: it opens offline in a browser (plotly.js is inlined
once) and holds everything a paper's appendix or a lab notebook needs about the run.

Sections, for every family through the frame (what a section needs decides whether it appears):

1. the run: name, family, estimator, task, status, when, how long, notes;
2. the data: the data set's name, size and fingerprint, the preparation (split, scaling) and the
   prepared data's fingerprint;
3. the hyperparameters;
4. the metrics on every split (train, validation, test) and the model's size and cost;
5. the training curves (the family's declared panels);
6. the tree diagram (each tree of an ensemble is summarised, the first drawn), the node weights
   (as images for image data), the class routing (classification), the root's split histogram and
   the decision regions over the two features the tree leans on most (as the Tree explorer first
   draws them), the λ path when the run is a point of one, and the features the model uses (ranked
   by weight);
7. the rules, in the data's own units when the preprocessing allows.

``run_report(store, run_id)`` returns the HTML text; the Runs page and ``python -m treeviz report``
write it to a file.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.plots import (
    PATH_FIGURES,
    TreeFigureOptions,
    class_flow_figure,
    feature_ranking_figure,
    training_curves,
    tree_figure,
    weight_images_grid,
    weights_heatmap,
)
from treeviz.plots.regions import regions_figure
from treeviz.plots.split_hist import split_histogram
from treeviz.services.experiments.sweep import sweep_table
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.services.views.export import rules_lines, tree_exports
from treeviz.services.views.features import feature_table
from treeviz.services.views.node_split import node_split
from treeviz.services.views.predict import output_kind
from treeviz.services.views.regions import decision_regions, default_features
from treeviz.services.views.run_view import PARTS, RunView
from treeviz.ui.labels import METRIC_LABELS, SIZE_LABELS, curve_layout, family_name, run_headline

#: Rules shown in full up to this many leaves (the rest are counted).
MAX_RULES = 300
#: Trees of more levels are drawn to this depth (the report says so).
MAX_LEVELS = 8

_STYLE = """
body { font-family: Inter, 'Source Sans Pro', 'Segoe UI', Helvetica, Arial, sans-serif; color: #262730;
       max-width: 1180px; margin: 2em auto; padding: 0 1.5em; line-height: 1.45; }
h1 { font-size: 1.8em; margin-bottom: .2em; } h2 { margin-top: 1.8em; border-bottom: 1px solid #E0E3E8; }
.sub { color: #5F6670; } table { border-collapse: collapse; margin: .6em 0; font-size: .92em; }
td, th { border: 1px solid #E0E3E8; padding: .25em .6em; text-align: left; } th { background: #F5F6F8; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } pre { background: #F5F6F8; padding: .8em;
overflow-x: auto; font-size: .85em; white-space: pre-wrap; } .figure { margin: 1em 0; }
.note { background: #FFF8E1; padding: .4em .8em; border-left: 3px solid #FFB000; }
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _esc(value)
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _table(rows: Iterable[Sequence[Any]], header: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    head = f"<tr>{head}</tr>" if head else ""
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_number(v)}</td>' if isinstance(v, (int, float)) and
                         not isinstance(v, bool) else f"<td>{_esc(v)}</td>" for v in row) + "</tr>"
        for row in rows)
    return f"<table>{head}{body}</table>"


class _Report:
    """The report being assembled: sections of HTML and the figures in them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.n_figures = 0

    def section(self, title: str, body: str = "") -> None:
        self.parts.append(f"<h2>{_esc(title)}</h2>{body}")

    def text(self, body: str) -> None:
        self.parts.append(body)

    def figure(self, fig: go.Figure, caption: str = "") -> None:
        self.n_figures += 1
        div = pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=f"figure-{self.n_figures}",
                          config={"displaylogo": False, "responsive": True}, validate=False)
        cap = f'<div class="sub">{_esc(caption)}</div>' if caption else ""
        self.parts.append(f'<div class="figure">{div}{cap}</div>')

    def optional(self, what: str, make: Any) -> None:
        """Add what ``make()`` adds; a part that cannot be drawn for this run becomes a note."""
        try:
            make()
        except TreevizError as err:
            self.text(f'<p class="note">{_esc(what)}: {_esc(err)}</p>')


def _overview(rep: _Report, record: RunRecord) -> None:
    family = family_name(record.family)
    headline = run_headline(record)
    rows = [("family", f"{family} ({record.family})"), ("estimator", record.estimator), ("task", record.task),
            ("status", record.status), ("trained", record.created_at.strftime("%Y-%m-%d %H:%M UTC")),
            ("fit time (s)", round(record.duration_s, 3)), ("run id", record.run_id),
            ("treeviz", record.treeviz_version or "?")]
    if headline is not None:
        rows.insert(0, (headline.title, round(headline.value, 4)))
    rep.text(_table(rows))
    for note in record.notes:
        rep.text(f'<p class="note">{_esc(note)}</p>')


def _data(rep: _Report, record: RunRecord) -> None:
    ds = {k: v for k, v in record.dataset.items() if not isinstance(v, (dict, list)) or k == "class_names"}
    rows = [(k, json.dumps(v) if isinstance(v, list) else v) for k, v in ds.items()]
    rows += [("data set fingerprint", record.dataset_fingerprint),
             ("prepared data fingerprint", record.prepared_fingerprint)]
    rep.section("Data", _table(rows))
    rep.text("<h3>Preparation</h3>" + _table(list(record.prep.items()), ("setting", "value")))


def _metrics(rep: _Report, record: RunRecord) -> None:
    names = sorted({k.split("_", 1)[1] for k in record.metrics if k.split("_", 1)[0] in PARTS})
    rows = []
    for name in names:
        label = METRIC_LABELS.get(name, (name, name))[1]
        rows.append((label, *[record.metrics.get(f"{part}_{name}", "–") for part in PARTS]))
    rep.section("Metrics", _table(rows, ("metric", *PARTS)))
    sizes = [(SIZE_LABELS.get(k, k), v) for k, v in record.metrics.items() if k.split("_", 1)[0] not in PARTS]
    sizes += [(SIZE_LABELS["n_nodes"], record.n_nodes), (SIZE_LABELS["n_leaves"], record.n_leaves),
              (SIZE_LABELS["depth"], record.depth)]
    rep.text("<h3>Size and cost</h3>" + _table(sizes))


def _model(rep: _Report, store: RunStore, record: RunRecord) -> None:
    model = store.load_model(record.run_id)
    prepared = store.load_prepared(record.run_id)
    trees = model.to_trees()
    view = RunView.build(model, prepared, "train")
    tree = view.tree
    rep.section("Tree" if len(trees) == 1 else f"Trees ({len(trees)}; the first is drawn)")
    levels = None if tree.max_depth <= MAX_LEVELS else MAX_LEVELS
    options = TreeFigureOptions(max_levels=levels, family_label=family_name(record.family))
    rep.figure(tree_figure(tree, stats=view.stats, options=options),
               "Training split routed through the tree." + (f" Drawn to depth {MAX_LEVELS} of {tree.max_depth}."
                                                            if levels else ""))
    for note in tree.meta.get("notes", ()):
        rep.text(f'<p class="sub">{_esc(note)}</p>')
    if tree.decision_nodes.size:
        rep.section("Node weights")
        rep.figure(weights_heatmap(tree), "Each decision node's weights on the (scaled) features.")
        if prepared.dataset.image_shape is not None:
            rep.figure(weight_images_grid(view.rules_tree(), prepared.dataset.image_shape),
                       "Weights as images: blue pushes a sample right, red left, white is zero.")
    if tree.task == "classification" and view.stats is not None:
        rep.section("Class routing")
        rep.optional("Class routing", lambda: rep.figure(
            class_flow_figure(tree, None, None, stats=view.stats, max_levels=min(tree.max_depth, 4) or 1),
            "How the training samples of each class flow from the root to the leaves."))
    _split_and_regions(rep, view, model)
    features = feature_table(trees)
    used = [r for r in features if r.used]
    rep.section("Features", f'<p class="sub">{len(used)} of {len(features)} features used by some split or '
                            "linear leaf.</p>")
    rep.optional("Feature ranking", lambda: rep.figure(feature_ranking_figure(
        [r.name for r in features], [r.norm for r in features], [r.used for r in features])))
    [export] = tree_exports(model, prepared, indices=[0])  # the report's tree, as every export writes it
    all_rules = rules_lines(export)  # every term of every split, as the downloaded rules
    units = "the data's own units" if export.units == "input" else "the model's (scaled) units"
    more = f"\n… and {len(all_rules) - MAX_RULES} more" if len(all_rules) > MAX_RULES else ""
    rep.section("Rules", f'<p class="sub">{len(all_rules)} rules (one per leaf), in {units}.</p>'
                         f"<pre>{_esc(chr(10).join(all_rules[:MAX_RULES]) + more)}</pre>")


def _split_and_regions(rep: _Report, view: RunView, model: Any) -> None:
    """The Tree explorer's split histogram (the root's) and decision regions (the two features the
    tree leans on most, the others at the training median), as the page draws them by default."""
    tree = view.tree
    if not tree.is_leaf[0] and view.n_rows:
        def root_split() -> None:
            split = node_split(view, 0)
            rep.figure(split_histogram(tree, 0, split.score, split.y, threshold=split.threshold,
                                       right_above=split.right_above, right=split.right, label=split.label,
                                       part=view.part, soft=split.soft),
                       f"How the root splits the {view.part} rows: {split.n_left} go left, {split.n_right} right.")
        rep.section("Split at the root")
        rep.optional("Split histogram", root_split)
    if tree.n_features >= 2 and output_kind(model) != "embedding":
        def regions() -> None:
            found = decision_regions(view, default_features(view))
            rep.figure(regions_figure(found.shown_x, found.shown_y, found.output, kind=found.kind, names=found.names,
                                      points=found.points, point_values=found.point_values,
                                      feature_names=found.feature_names, held_label=found.held_label,
                                      units=found.units),
                       f"The model's predictions over two features, every other held at {found.held_label}; "
                       "the dots are training rows.")
        rep.section("Decision regions")
        rep.optional("Decision regions", regions)


def _lambda_path(rep: _Report, store: RunStore, record: RunRecord) -> None:
    if not record.sweep:
        return
    family = get_family(record.family)
    path = family.lambda_path
    points = [r for r in store.list() if r.sweep and r.sweep.get("id") == record.sweep.get("id")]
    if path is None or len(points) < 2:
        return
    rows = sweep_table(store, points)
    param = record.sweep.get("param", path.param)
    rep.section(f"λ path: {record.sweep.get('label', '')}",
                f'<p class="sub">{len(points)} runs over {_esc(param)}; this run is at {record.sweep["value"]:g}.</p>')
    rep.figure(PATH_FIGURES[path.figure](rows, param=param, selected=float(record.sweep["value"])))


def run_report(store: RunStore, run_id: str) -> str:
    """The HTML report of a stored run (see the module docstring)."""
    record = store.get(run_id)
    rep = _Report()
    _overview(rep, record)
    _data(rep, record)
    rep.section("Hyperparameters", _table([(k, json.dumps(v) if isinstance(v, (list, dict)) else v)
                                           for k, v in record.params.items()], ("parameter", "value")))
    _metrics(rep, record)
    history = store.history(run_id)
    if history:
        rep.section("Training curves")
        rep.figure(training_curves(history, **curve_layout(record.family)))
    _model(rep, store, record)
    _lambda_path(rep, store, record)
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    body = "".join(rep.parts)
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_esc(record.name)} · "
            f"treeviz report</title><style>{_STYLE}</style><script>{get_plotlyjs()}</script></head>"
            f'<body data-figures="{rep.n_figures}">'
            f"<h1>{_esc(record.name)}</h1><p class=\"sub\">{_esc(family_name(record.family))} on "
            f"{_esc(record.dataset_name)} · report made {made} by treeviz · {rep.n_figures} figures</p>"
            f"{body}</body></html>")
