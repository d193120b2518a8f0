"""Small things a researcher sees: the upload limit the widget states, one file-name style, a PDF's
title, exports without the selection ring, stable family colours, bands within a metric's range,
the forest heatmap's colour scale, the SQL export's row key."""

from __future__ import annotations

import re
import sqlite3
import tomllib
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from sklearn.datasets import load_iris

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from models.registry import families
from treeviz.cli.main import main
from treeviz.plots import TreeFigureOptions, pareto_figure, tree_figure
from treeviz.plots import export as ex
from treeviz.plots.forest import agreement_range, forest_summary_figure
from treeviz.plots.style import family_color, line_color
from treeviz.readers.codegen import sql_query
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.data.upload import MAX_UPLOAD_MB
from treeviz.services.experiments.training import train_run
from treeviz.services.views.bandit import curve_bands, final_table, reference_band
from treeviz.ui.labels import family_index, family_name

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- upload limit

def test_the_upload_widget_states_the_apps_own_limit():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB


# ---------------------------------------------------------------------------- file names

def test_every_download_name_has_one_style():
    run = "TAO sparse on iris #1"
    assert ex.export_name(run) == "tao-sparse-on-iris-1"
    assert ex.export_name(run, "report") == "tao-sparse-on-iris-1_report"
    assert ex.export_name(run, "tree") == "tao-sparse-on-iris-1_tree"


def test_the_runs_page_names_its_zip_like_its_report():
    page = (ROOT / "app_pages" / "runs.py").read_text()
    names = re.findall(r"file_name=(.+),", page)
    assert names and all("export_name(" in n for n in names), names


# ---------------------------------------------------------------------------- selection ring

def ringed_figure() -> go.Figure:
    return go.Figure([go.Scatter(x=[0, 1], y=[0, 1], name="nodes"),
                      go.Scatter(x=[0], y=[0], name=ex.SELECTION_TRACE, showlegend=False)])


def test_exports_leave_out_the_selection_ring_and_the_page_keeps_it():
    fig = ringed_figure()
    out = ex.without_selection(fig)
    assert [t.name for t in out.data] == ["nodes"]
    assert [t.name for t in fig.data] == ["nodes", ex.SELECTION_TRACE]  # the shown figure is untouched
    html = ex.figure_html(fig, name="x")
    assert '"name":"selected"' not in html.replace(" ", "")


def test_a_legend_entry_named_selected_is_not_a_ring():
    fig = go.Figure([go.Scatter(x=[0], y=[0], name=ex.SELECTION_TRACE, showlegend=True)])
    assert ex.without_selection(fig) is fig


def test_the_tree_diagrams_ring_is_the_one_exports_drop():
    X, y = load_iris(return_X_y=True)
    fig = tree_figure(CARTClassifier(max_depth=2).fit(X, y).to_tree(), X=X, y=y, options=TreeFigureOptions(selected=0))
    assert any(ex._is_selection(t) for t in fig.data)
    assert not any(ex._is_selection(t) for t in ex.without_selection(fig).data)


# ---------------------------------------------------------------------------- PDF title

KALEIDO_PDF = (b"%PDF-1.4\n1 0 obj\n<</Title (Kaleido-fier)\n/Producer (Skia/PDF m156)>>\nendobj\n"
               b"2 0 obj\n<</Type /Catalog>>\nendobj\nxref\n0 3\n0000000000 65535 f \n0000000009 00000 n \n"
               b"0000000073 00000 n \ntrailer\n<</Size 3\n/Root 2 0 R\n/Info 1 0 R>>\nstartxref\n110\n%%EOF\n")


def pdf_title(data: bytes) -> str:
    """The title of the last info dictionary in ``data`` (what a reader shows)."""
    [*_, last] = re.findall(rb"/Title\s*(<FEFF[0-9A-F]*>|\((?:\\.|[^\\)])*\))", data)
    if last.startswith(b"<"):
        return bytes.fromhex(last[5:-1].decode()).decode("utf-16-be")
    return last[1:-1].decode("latin-1")


def test_a_pdf_gets_the_figures_name_as_its_title():
    out = ex.pdf_with_title(KALEIDO_PDF, "TAO forest on iris #1 · tree")
    assert out.startswith(KALEIDO_PDF)  # an incremental update: the original bytes stay as they were
    assert pdf_title(out) == "TAO forest on iris #1 · tree"
    assert b"/Producer (Skia/PDF m156)" in out[len(KALEIDO_PDF):]  # the other entries are kept
    # The new cross-reference section is where startxref says, and its entry points at the new object.
    xref = int(re.findall(rb"startxref\s*(\d+)", out)[-1])
    assert out[xref:].startswith(b"xref\n1 1\n")
    offset = int(out[xref + 9:xref + 19])
    assert out[offset:].startswith(b"1 0 obj\n")
    assert b"/Prev 110" in out[xref:] and b"/Root 2 0 R" in out[xref:]


def test_a_pdf_it_cannot_read_comes_back_as_it_was():
    assert ex.pdf_with_title(b"%PDF-1.7 with an xref stream", "x") == b"%PDF-1.7 with an xref stream"


@pytest.mark.slow  # seconds on a 2-core machine: kaleido starts Chromium
def test_a_rendered_pdf_is_titled_and_has_no_ring():
    if ex.image_support():
        pytest.skip(ex.image_support())
    fig = ringed_figure()
    pdf = ex.figure_bytes(fig, "pdf", name="run_tree", title="My run · tree")
    assert pdf_title(pdf) == "My run · tree"
    assert b"Kaleido-fier" not in pdf[pdf.rindex(b"obj"):]
    svg = ex.figure_bytes(fig, "svg").decode()
    assert svg.count('class="trace scatter') == 1


# ---------------------------------------------------------------------------- family colours

def pareto_colours(points):
    fig = pareto_figure(points, size_label="leaves", score_label="accuracy")
    return {t.name: t.marker.color for t in fig.data if t.name != "Pareto front"}


def test_a_family_keeps_its_colour_whichever_runs_are_shown():
    keys = list(families())
    a, b = keys[0], keys[3]
    both = [{"size": 3, "score": 0.9, "family": a, "family_index": family_index(a), "name": "r1"},
            {"size": 5, "score": 0.8, "family": b, "family_index": family_index(b), "name": "r2"}]
    alone = [both[1]]
    assert pareto_colours(both)[b] == pareto_colours(alone)[b] == line_color(3)
    assert pareto_colours(both)[a] == line_color(0)
    assert family_index("no-such-family") is None


def test_without_an_index_the_colour_comes_from_the_name():
    assert family_color("My family") == family_color("My family")
    assert family_color("x", 2) == line_color(2)


# ---------------------------------------------------------------------------- bandit bands

def test_bandit_bands_stay_within_the_metrics_range():
    rows = [{"method": "m", "seed": s, "queries": 10, "val_score": v, "avg_reward": v, "val_rmse": 0.01 * v,
             "regret": -v} for s, v in enumerate([1.0, 0.3, 1.0])]
    [score] = curve_bands(rows, "val_score")
    assert score["low"][0] >= 0.0 and score["high"][0] <= 1.0
    assert score["high"][0] == 1.0  # the t interval reaches past 1 and is clipped
    [rmse] = curve_bands(rows, "val_rmse")
    assert rmse["low"][0] == 0.0
    [regret] = curve_bands(rows, "regret")
    assert regret["high"][0] > 0  # regret has no bound
    refs = [{"method": "ref", "seed": s, "reference": v} for s, v in enumerate([0.99, 0.5, 1.0])]
    band = reference_band(rows + refs)
    assert 0.0 <= band["low"] and band["high"] <= 1.0
    assert reference_band(refs, "regression")["high"] > 1.0
    table = final_table(rows + refs, "classification")
    assert table[-1]["± (95% CI)"] >= 0


# ---------------------------------------------------------------------------- forest heatmap

def test_the_agreement_heatmap_spans_the_datas_range():
    matrix = np.array([[0.99, 0.95], [0.95, 0.97]])
    assert agreement_range(matrix) == (0.95, 0.99)
    low, high = agreement_range(np.ones((2, 2)))
    assert low < high == 1.0
    X, y = load_iris(return_X_y=True)
    trees = [CARTClassifier(max_depth=d).fit(X, y).to_tree() for d in (2, 3)]
    fig = forest_summary_figure(trees, X)
    [heat] = [t for t in fig.data if t.type == "heatmap"]
    shown = np.asarray(heat.z, dtype=float)
    assert heat.zmin == shown.min() and heat.zmax == shown.max()


# ---------------------------------------------------------------------------- SQL row key

@pytest.fixture(scope="module")
def iris_tree():
    X, y = load_iris(return_X_y=True)
    return CARTClassifier(max_depth=2).fit(X, y).to_tree(), X


def test_the_sql_query_selects_the_row_key_first(iris_tree):
    tree, X = iris_tree
    plain = sql_query(tree)
    assert '"id"' not in plain
    keyed = sql_query(tree, key="id")
    assert 'SELECT\n  "id",\n  CASE' in keyed
    db = sqlite3.connect(":memory:")
    names = list(tree.feature_names)
    db.execute("CREATE TABLE data (id INTEGER, " + ", ".join(f'"{n}" REAL' for n in names) + ")")
    db.executemany(f"INSERT INTO data VALUES (?, {', '.join('?' * len(names))})",
                   [[i, *map(float, row)] for i, row in enumerate(X)])
    got = dict(db.execute(keyed).fetchall())
    assert sorted(got) == list(range(len(X)))
    assert [str(got[i]) for i in range(len(X))] == [r[0] for r in db.execute(plain)]
    with pytest.raises(TreevizError, match="output column"):
        sql_query(tree, key="prediction")


def test_the_cli_passes_key_through(home, capsys):
    assert main(["train", "-q", "-d", "iris", "-f", "cart", "-p", "max_depth=2"]) == 0
    run_id = capsys.readouterr().out.strip()
    assert main(["export", run_id, "--sql", "--key", "row_id"]) == 0
    assert 'SELECT\n  "row_id",\n' in capsys.readouterr().out
    assert main(["export", run_id, "--sql"]) == 0
    assert '"row_id"' not in capsys.readouterr().out


def test_a_tree_diagram_is_titled_with_its_familys_own_name():
    """Titles read "TAO forest tree", not "Tao forest tree": the page passes the family's label."""
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    model, _ = train_run("cart", "classification", {"max_depth": 2}, prepared)
    tree = model.to_tree()
    def title(label: str) -> str:
        return tree_figure(tree, options=TreeFigureOptions(family_label=label)).layout.title.text

    assert title(family_name("tao_forest")).startswith("TAO forest tree")
    assert title(family_name("dgt_bandit")).startswith("DGT-Bandit tree")
    assert tree_figure(tree).layout.title.text.startswith("cart tree")  # no label: the Tree's family key
