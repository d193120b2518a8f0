"""Names are text, never markup: one contract over every page and every figure builder.

Every string a user controls reaches the pages through :func:`treeviz.ui.text.md` (Streamlit's
Markdown) and the figures through :func:`treeviz.plots.style.plot_text` (Plotly's HTML subset).
Each test renders with the names of ``tests/hostile_names.py`` and fails when one of them, or a
piece of markup it carries, reaches a Markdown or Plotly text unescaped. A new page (a row of
``treeviz.ui.pages.PAGES``) or a new figure builder (a name in ``treeviz.plots.__all__``) is
covered at once: the page by the parametrisation, the builder by the test that every public
builder has a case here.

``tests/e2e/test_hostile_names.py`` checks the same in a real browser (elements and requests).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import plotly.graph_objects as go
import pytest
from google.protobuf.json_format import MessageToDict

import treeviz.plots as plots
from tests.app.conftest import PAGES, SCRIPT_S, new_app, open_page
from tests.hostile_names import (
    CLASSES,
    FILE_NAME,
    MARKUP,
    NOTE,
    RUN_NAME,
    TARGET,
    hostile_dataset,
    hostile_regression_dataset,
    hostile_store,
)
from treeviz.plots.node_info import node_panel
from treeviz.plots.style import plot_text
from treeviz.services.data import PrepConfig, prepare
from treeviz.services.experiments.training import train_run
from treeviz.ui import state
from treeviz.ui.text import md, md_code

#: Every hostile string; each holds Markdown or HTML that must never reach a page or figure as it is.
NAMES: tuple[str, ...] = (*MARKUP, FILE_NAME, *CLASSES, TARGET, RUN_NAME, NOTE)

# ---------------------------------------------------------------------------- the checks

#: What markup looks like in Markdown source outside code spans: a link or image, an HTML tag, an
#: autolink, Streamlit's shortcodes. Escaped text has none of these (``\\](``, ``\\<a``, ``:\u2060``).
MARKDOWN_TOKENS = re.compile(r"\]\(|(?<!\\)<(a|img|span|svg|style|b>|http)|://|www\.|:red\[|:material/|javascript:",
                             re.IGNORECASE)
#: What markup looks like in Plotly text: tags the corpus carries (the builders' own markup is only
#: <b>, <i>, <br>, <sup>, <extra> and colour spans).
PLOTLY_TOKENS = ("<a ", "<a>", "<img", "<svg", "<style", "<span style=\"background", "<span style='background",
                 "<b>bold", "<i>italic", "<sup>sup")
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
#: Fields of Streamlit's element protos that are shown as plain text (or are no text): selectbox and
#: multiselect options, a text input's value, code, a chart's spec and config (checked as Plotly),
#: data frames (Arrow bytes), ids.
PLAIN_FIELDS = {"options", "default", "value", "rawValue", "rawValues", "codeText", "spec", "config", "data", "id",
                "formId", "placeholder", "url", "fileName", "mimetype", "sortableColumns", "selectionMode", "key",
                "icon"}
#: The corpus names that Plotly would read as markup (a Markdown link is plain text to Plotly).
PLOTLY_NAMES = tuple(n for n in NAMES if plot_text(n) != n)
#: Plotly fields that are never drawn as text.
PLOTLY_SILENT = {"meta", "uid", "uirevision", "legendgroup", "bdata", "dtype", "mode", "type"}


def markdown_leaks(text: str) -> list[str]:
    """What in Markdown source ``text`` would be read as markup: a corpus name as it is, or a token."""
    outside = _CODE_SPAN.sub(" ", text)
    leaks = [n for n in NAMES if n in outside]
    leaks += [m.group() for m in MARKDOWN_TOKENS.finditer(outside)]
    # inside a code span nothing is Markdown, but Streamlit still reads its shortcodes there
    leaks += [t for t in (":red[", ":material/") if t in text]
    return leaks


def plotly_leaks(value: Any, path: str = "") -> Iterator[str]:
    """Where a figure (its dict or JSON) draws a corpus name as it is, or markup the corpus carries."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in PLOTLY_SILENT:
                yield from plotly_leaks(item, f"{path}.{key}")
    elif isinstance(value, (list, tuple, np.ndarray)):
        for item in value:
            yield from plotly_leaks(item, path)
    elif isinstance(value, str):
        for name in PLOTLY_NAMES:
            if name in value:
                yield f"{path}: the name {name[:40]!r}"
        for token in PLOTLY_TOKENS:
            if token in value:
                yield f"{path}: {token!r} in {value[:80]!r}"


def figure_leaks(fig: go.Figure | dict) -> list[str]:
    return list(plotly_leaks(fig.to_dict() if isinstance(fig, go.Figure) else fig))


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key not in PLAIN_FIELDS:
                yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, path)
    elif isinstance(value, str):
        yield path, value


def _elements(node: Any) -> Iterator[Any]:
    yield node
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _elements(child)


def page_leaks(at: Any) -> list[str]:
    """Every Markdown text of the page (captions, alerts, headings, labels, help, progress text...)
    and every figure, checked."""
    found = []
    for element in _elements(at._tree):
        proto = getattr(element, "proto", None)
        if proto is None or not hasattr(proto, "DESCRIPTOR"):
            continue
        kind = proto.DESCRIPTOR.name
        if kind == "PlotlyChart":
            found += [f"figure {leak}" for leak in plotly_leaks(json.loads(proto.spec))]
            continue
        for field, text in _strings(MessageToDict(proto)):
            found += [f"{kind}{field}: {leak!r} in {text[:90]!r}" for leak in markdown_leaks(text)]
    return found


# ---------------------------------------------------------------------------- the escaping itself

@pytest.mark.parametrize("name", NAMES)
def test_md_leaves_no_markup_and_keeps_every_character(name):
    escaped = md(name)
    assert markdown_leaks(escaped) == []
    # the text shown: the escapes read back, the invisible joiners dropped, line breaks as spaces
    shown = re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", escaped).replace("\u2060", "")
    assert shown == re.sub(r"\r\n|[\n\r]", " ", name)


@pytest.mark.parametrize("name", [*NAMES, "a`b", "``x``", "`", " lead", "x:material/home:y"])
def test_md_code_is_one_code_span_with_shortcodes_broken(name):
    span = md_code(name)
    match = re.fullmatch(r"(`+)( ?)(.*)\2\1", span, re.S)
    assert match is not None and "`" * len(match.group(1)) not in match.group(3)
    assert match.group(3).replace("\u2060", "") == name
    assert ":material/" not in span and ":red[" not in span


@pytest.mark.parametrize("name", NAMES)
def test_plot_text_leaves_no_markup_and_reads_back(name):
    text = plot_text(name)
    assert figure_leaks({"text": text}) == []
    entities = {"&amp;": "&", "&lt;": "<", "&gt;": ">", "&#37;": "%"}
    assert re.sub(r"&(amp|lt|gt|#37);", lambda m: entities[m.group()], text) == re.sub(r"\r\n|[\n\r]", " ", name)


def test_the_checks_find_raw_names():
    """The checks themselves: a raw corpus name is a leak, in Markdown and in a figure."""
    assert markdown_leaks(f"**{RUN_NAME}** · run")
    assert markdown_leaks(f"`{CLASSES[0]}`") == []  # inside a code span: no Markdown
    assert figure_leaks(go.Figure(go.Bar(x=[1], y=[CLASSES[2]]))) != []
    assert figure_leaks(go.Figure(go.Bar(x=[1], y=[plot_text(CLASSES[2])]))) == []


# ---------------------------------------------------------------------------- every figure builder

@pytest.fixture(scope="module")
def hostile():
    """A hostile classification data set, a CART tree on it (and a regression one, whose target
    has a hostile name), their routing statistics, and an ensemble."""
    dataset = hostile_dataset()
    prepared = prepare(dataset, PrepConfig(seed=0))
    model, _ = train_run("cart", "classification", {"max_depth": 3}, prepared)
    tree = model.to_tree()
    X, y = prepared.X_train, prepared.labels("train")
    stats = tree.node_stats(X, tree.class_index(y))
    reg_prepared = prepare(hostile_regression_dataset(), PrepConfig(seed=0))
    # a regression Tree names its output after the target when a caller gives it one
    regression = replace(train_run("cart", "regression", {"max_depth": 2}, reg_prepared)[0].to_tree(),
                         output_names=(TARGET,))
    forest, _ = train_run("tao_forest", "classification", {"n_trees": 2, "depth": 2, "max_iter": 2, "n_jobs": 1},
                          prepared)
    return dict(dataset=dataset, prepared=prepared, tree=tree, X=X, y=y, stats=stats, regression=regression,
                regression_X=reg_prepared.X_train, forest=forest.to_trees())


def _curves(h):
    history = [{"epoch": i, MARKUP[0]: 1.0 / (i + 1), "train_loss": 0.5 / (i + 1), CLASSES[0]: i} for i in range(1, 5)]
    return plots.training_curves(history, panels=[(MARKUP[3], [MARKUP[0], "train_loss"]), (MARKUP[4], [CLASSES[0]])],
                                 x="epoch", kept=MARKUP[0], title=RUN_NAME)


def _sweep_rows():
    return [{"value": v, "run_id": str(i), "n_active_nodes": 7 - i, "active_depth": 3 - i // 2,
             "n_nonzero_weights": 10 - i, "n_decision_nodes": 3, "flops": 2.0, "train_accuracy": 0.9,
             "test_accuracy": 0.8, f"test_{MARKUP[1]}": 0.7} for i, v in enumerate((0.01, 0.1, 1.0))]


def _bands():
    return [{"method": name, "queries": [10, 20, 30], "mean": [0.5, 0.6, 0.7], "low": [0.4, 0.5, 0.6],
             "high": [0.6, 0.7, 0.8], "n": [2, 2, 2]} for name in (RUN_NAME, MARKUP[2])]


def _reference():
    return {"method": MARKUP[3], "mean": 0.8, "low": 0.75, "high": 0.85, "n": 2}


def _node(h):
    return int(h["tree"].decision_nodes[0])


#: One call per public builder, with a hostile string in every string it takes.
BUILDERS: dict[str, Callable[[dict], go.Figure]] = {
    "tree_figure": lambda h: plots.tree_figure(h["tree"], stats=h["stats"], options=plots.TreeFigureOptions(
        highlight=h["tree"].paths(h["X"][0])[0], selected=0, family_label=RUN_NAME)),
    "plot_tree": lambda h: plots.plot_tree(h["tree"], h["X"], h["y"], family_label=RUN_NAME),
    "top_weights_figure": lambda h: plots.top_weights_figure(h["tree"], _node(h)),
    "weights_heatmap": lambda h: plots.weights_heatmap(h["tree"]),
    # the 14 hostile features as a 2 × 7 "image" of hostile pixel names
    "weight_image_figure": lambda h: plots.weight_image_figure(h["tree"], _node(h), (2, 7)),
    "weight_images_grid": lambda h: plots.weight_images_grid(h["tree"], (2, 7)),
    "class_flow_figure": lambda h: plots.class_flow_figure(h["tree"], None, None, stats=h["stats"], max_levels=3),
    "class_split_bars": lambda h: plots.class_split_bars(h["tree"], None, None, stats=h["stats"], max_levels=3),
    "training_curves": _curves,
    "pareto_figure": lambda h: plots.pareto_figure(
        [{"size": 10 + i, "score": 0.5 + i / 10, "family": MARKUP[i], "name": NAMES[-1 - i], "front": i % 2 == 0}
         for i in range(4)], size_label=MARKUP[5], score_label=MARKUP[6]),
    "sweep_figure": lambda h: plots.sweep_figure(_sweep_rows(), param=MARKUP[7], selected=0.1),
    "lambda_path_figure": lambda h: plots.lambda_path_figure(_sweep_rows(), param=MARKUP[8], selected=0.1,
                                                             baseline=_sweep_rows()[0]),
    "forest_summary_figure": lambda h: plots.forest_summary_figure(h["forest"], h["X"]),
    "dendrogram_figure": lambda h: plots.dendrogram_figure(h["tree"], h["stats"], class_names=CLASSES,
                                                           title=RUN_NAME, subtitle=FILE_NAME),
    "embedding_map": lambda h: plots.embedding_map(
        h["X"][:, :2], classes=h["y"], class_names=CLASSES, leaves=h["tree"].apply(h["X"]),
        test_Z=h["X"][:5, :2] * 9, test_classes=h["y"][:5], title=RUN_NAME, subtitle=FILE_NAME),
    "embedding_panels": lambda h: plots.embedding_panels(
        [{"title": RUN_NAME, "Z": h["X"][:, :2], "note": f"{MARKUP[0]} · {MARKUP[3]}"},
         {"title": MARKUP[4], "Z": h["X"][:, 2:4]}], classes=h["y"], class_names=CLASSES, title=FILE_NAME,
        subtitle=NOTE),
    "embedding_objective_curve": lambda h: plots.embedding_objective_curve(
        [{"step": i, "E_tree": 2.0 - i / 10, "E_Z": 1.5 - i / 10} for i in range(4)], free=1.0, direct=2.5,
        name=MARKUP[6], title=RUN_NAME),
    "label_fraction_figure": lambda h: plots.label_fraction_figure(
        [{"method": m, "fraction": f, "error": 0.3 - f / 10} for m in (RUN_NAME, MARKUP[9]) for f in (0.1, 0.5)],
        metric=MARKUP[10], title=FILE_NAME),
    "labelled_points_figure": lambda h: plots.labelled_points_figure(
        h["X"][:, :2], classes=h["y"], class_names=CLASSES, labelled=np.arange(h["X"].shape[0]) % 4 == 0,
        axes=(MARKUP[3], MARKUP[4]), title=RUN_NAME, subtitle=NOTE),
    "leaf_class_bars": lambda h: plots.leaf_class_bars(np.ones((2, 3)), [3, 4], CLASSES, title=RUN_NAME,
                                                       subtitle=FILE_NAME),
    "feature_trajectory_figure": lambda h: plots.feature_trajectory_figure(
        [{MARKUP[11]: 10 - i, "n_features": 14 - i, "lam": i / 10} for i in range(5)], count="n_features",
        x=MARKUP[11], schedule="lam", schedule_label=MARKUP[12], n_inputs=14),
    "feature_ranking_figure": lambda h: plots.feature_ranking_figure(
        list(h["dataset"].feature_names), np.linspace(0, 1, h["dataset"].n_features),
        np.arange(h["dataset"].n_features) % 2 == 0),
    "feature_mask_figure": lambda h: plots.feature_mask_figure(np.linspace(0, 1, 14), (2, 7)),
    "budget_trials_figure": lambda h: plots.budget_trials_figure(
        [{"index": i, "n_features": 3 + i, "val_accuracy": 0.5 + i / 20, f"test_{MARKUP[0]}": 0.5} for i in range(5)],
        budget=5, score="val_accuracy", score_label=MARKUP[1], test_score=f"test_{MARKUP[0]}", chosen=1),
    "selection_comparison_figure": lambda h: plots.selection_comparison_figure(
        [{"method": m, "n_features": 3, MARKUP[3]: 0.8, "test_auc": 0.7} for m in (RUN_NAME, MARKUP[2])],
        metrics=[MARKUP[3], "test_auc"]),
    "bandit_curve_figure": lambda h: plots.bandit_curve_figure(_bands(), y_title=MARKUP[4], title=RUN_NAME,
                                                               subtitle=NOTE, reference=_reference()),
    "bandit_score_figure": lambda h: plots.bandit_score_figure(_bands(), task="classification",
                                                               reference=_reference()),
    "bandit_reward_figure": lambda h: plots.bandit_reward_figure(_bands(), task="classification"),
    "bandit_regret_figure": lambda h: plots.bandit_regret_figure(_bands()),
    "class_balance_figure": lambda h: plots.class_balance_figure([3, 4, 5], CLASSES, title=RUN_NAME),
    "target_histogram": lambda h: plots.target_histogram(np.arange(20.0), name=TARGET),
    "sample_images_figure": lambda h: plots.sample_images_figure(h["X"][:3], (2, 7), labels=CLASSES),
    "split_histogram": lambda h: plots.split_histogram(h["tree"], _node(h), h["X"][:, 0], h["tree"].class_index(h["y"]),
                                                       label=MARKUP[5], part=MARKUP[6]),
    "regions_figure": lambda h: plots.regions_figure(
        np.arange(3.0), np.arange(2.0), np.array([[0, 1, 2], [2, 1, 0]]), names=CLASSES, points=h["X"][:6, :2],
        point_values=np.arange(6) % 3, feature_names=(MARKUP[7], MARKUP[8]), held_label=RUN_NAME, units=NOTE),
    "sample_image_figure": lambda h: plots.sample_image_figure(h["X"][0], (2, 7), title=RUN_NAME, subtitle=CLASSES[0]),
}
#: Public names of treeviz.plots that build no figure.
NOT_BUILDERS = {"CLASS_PALETTE", "DIVERGING", "NODE_TRACE_NAME", "PATH_FIGURES", "TreeFigureOptions", "class_color",
                "node_from_selection"}


def test_every_public_figure_builder_has_a_case():
    assert set(plots.__all__) - NOT_BUILDERS == set(BUILDERS)


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_every_figure_builder_draws_names_as_text(hostile, builder):
    fig = BUILDERS[builder](hostile)
    assert figure_leaks(fig) == []


def test_the_tree_and_its_panels_draw_every_name_as_text(hostile):
    """The names are drawn (escaped), not dropped: class names in the legend and the hover, the
    regression target's name in the colour bar, feature names in the node panel and heatmap."""
    tree, regression = hostile["tree"], hostile["regression"]
    fig = plots.tree_figure(tree, stats=hostile["stats"])
    drawn = json.dumps(fig.to_dict(), ensure_ascii=False)
    assert any(plot_text(c) in drawn for c in CLASSES)
    assert figure_leaks(fig) == []
    reg = plots.tree_figure(regression, X=hostile["regression_X"])
    assert plot_text(TARGET) in json.dumps(reg.to_dict(), ensure_ascii=False)
    assert figure_leaks(reg) == []
    panel = node_panel(tree, _node(hostile), (2, 7))
    assert figure_leaks(panel.bars) == [] and figure_leaks(panel.image) == []
    heat = plots.weights_heatmap(tree).to_dict()
    assert all(x in [plot_text(n) for n in tree.feature_names] for x in heat["data"][0]["x"])


# ---------------------------------------------------------------------------- every page

@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory):
    """A run store filled by :func:`tests.hostile_names.hostile_store` (built once for the module)."""
    root = tmp_path_factory.mktemp("hostile") / "store"
    records = hostile_store(root)
    return root, records


def _app_on(page: str, home, source):
    shutil.copytree(source, home, dirs_exist_ok=True)
    at = new_app()
    at.session_state[state.DATASET] = hostile_dataset()  # the hostile data set is the current one
    at.run()
    return open_page(at, page)


@pytest.mark.slow  # every page with ten stored runs: the full tier
@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_shows_hostile_names_as_text(home, hostile_home, page):
    source, _ = hostile_home
    at = _app_on(page, home, source)
    assert not at.exception, [e.value for e in at.exception]
    assert page_leaks(at) == []


@pytest.mark.slow
def test_every_run_of_the_hostile_store_shows_its_names_as_text(home, hostile_home):
    """The explorer and routing of each stored run (a forest, a clustering tree, an embedding,
    LapTAO, a bandit tree, CART, the λ path's TAO trees), with the node panel on a leaf and a sample's
    path shown: every prediction, class and rule line is text."""
    source, records = hostile_home
    at = _app_on("explorer", home, source)
    for record in records:
        at.sidebar.selectbox(key=state.RUN_ID).set_value(record.run_id).run()
        for page in ("explorer", "routing", "features", "clustering", "embeddings", "semi_supervised"):
            open_page(at, page)
            assert not at.exception, (page, record.family, [e.value for e in at.exception])
            assert page_leaks(at) == [], (page, record.family)
        open_page(at, "explorer")
        tree = state.run_model(record.run_id).to_trees()[0]
        if tree.n_nodes > 1:
            at.number_input(key="explorer.node").set_value(int(tree.leaves[0])).run()
            at.checkbox(key="explorer.show_path").check().run()
            assert page_leaks(at) == [], record.family


def test_the_page_check_finds_a_raw_name(home):
    """The page check itself: a caption with a raw name is found."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from tests.hostile_names import RUN_NAME

        st.caption(f"**{RUN_NAME}**")

    at = AppTest.from_function(script, default_timeout=SCRIPT_S).run()
    assert page_leaks(at)
