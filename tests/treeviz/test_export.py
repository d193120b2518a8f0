"""Figure export: file names, standalone HTML, and PNG / SVG / PDF through kaleido and chromium."""

import xml.etree.ElementTree as ET

import numpy as np
import plotly.graph_objects as go
import pytest

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.plots import export as ex
from treeviz.plots import tree_figure


def small_figure() -> go.Figure:
    return go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name="points"), layout=dict(title="A small figure"))


def big_tree(depth: int = 10) -> Tree:
    """A complete oblique tree of 2^(depth+1) − 1 nodes (2047 for depth 10) on 5 features."""
    n = 2 ** (depth + 1) - 1
    inner = np.arange(n) < 2**depth - 1
    left = np.where(inner, 2 * np.arange(n) + 1, -1)
    right = np.where(inner, 2 * np.arange(n) + 2, -1)
    rng = np.random.default_rng(0)
    weight = np.where(inner[:, None], rng.standard_normal((n, 5)), 0.0)
    leaf = np.where(inner[:, None], np.nan, rng.random((n, 3)))
    return Tree(left, right, weight, np.zeros(n), leaf, output_names=("a", "b", "c"))


def test_export_names_are_safe_file_names():
    assert ex.export_name("CART on iris #1", "tree") == "cart-on-iris-1_tree"
    assert ex.export_name("Élan / λ=0.1 «run»", "") == "elan-0.1-run"
    assert ex.export_name("", "...") == "figure"
    assert ex.camera_config("x")["toImageButtonOptions"] == {"format": "png", "filename": "x", "scale": 2}


def test_html_is_standalone_with_plotly_inlined():
    html = ex.figure_html(small_figure(), name="small")
    assert html.startswith("<!doctype html>") and "<title>small</title>" in html and "A small figure" in html
    assert "<script src=" not in html  # nothing fetched from the network
    assert len(html) > 3_000_000  # plotly.js itself is inside
    assert '"filename": "small"' in html


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG\r\n\x1a\n"), ("pdf", b"%PDF-")])
def test_images_have_their_formats_magic_bytes(fmt, magic):
    data = ex.figure_image(small_figure(), fmt)
    assert data.startswith(magic) and len(data) > 1000


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_svg_is_parseable_xml_with_the_figures_text():
    data = ex.figure_image(small_figure(), "svg")
    root = ET.fromstring(data)
    assert root.tag.endswith("svg")
    assert "A small figure" in data.decode("utf-8")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_png_size_follows_the_figure_and_the_scale():
    fig = small_figure()
    fig.update_layout(width=400, height=300)
    data = ex.figure_image(fig, "png")
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (800, 600)  # scale 2


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_tree_of_two_thousand_nodes_exports_and_says_what_it_leaves_out():
    tree = big_tree()
    assert tree.n_nodes == 2047
    X = np.random.default_rng(1).standard_normal((500, 5))
    fig = tree_figure(tree, X=X, y=np.random.default_rng(2).integers(0, 3, 500))
    subtitle = fig.layout.title.subtitle.text
    assert "class-mix bars only up to 100 nodes" in subtitle and "leaf labels only up to 40 leaves" in subtitle
    assert ex.figure_image(fig, "png").startswith(b"\x89PNG")
    assert ex.figure_bytes(fig, "html", name="big").startswith(b"<!doctype html>")


def test_missing_kaleido_or_browser_is_a_sentence_and_html_still_works(monkeypatch):
    monkeypatch.setattr(ex, "_kaleido_installed", lambda: False)
    assert "kaleido" in ex.image_support()
    with pytest.raises(TreevizError, match="HTML export works without it"):
        ex.figure_image(small_figure(), "png")
    assert ex.figure_bytes(small_figure(), "html").startswith(b"<!doctype html>")
    monkeypatch.undo()
    monkeypatch.setattr(ex.shutil, "which", lambda name: None)
    monkeypatch.delenv("BROWSER_PATH", raising=False)
    assert "chromium" in ex.image_support()


def test_unknown_formats_are_refused():
    with pytest.raises(TreevizError, match="html, png, svg, pdf"):
        ex.figure_image(small_figure(), "gif")
