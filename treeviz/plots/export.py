"""Figures leave the app: standalone HTML that works offline, and PNG, SVG or PDF images.

* :func:`figure_html` writes a whole HTML page with plotly.js inlined (about 4.7 MB), so it opens
  with no network.
* :func:`figure_image` renders PNG, SVG or PDF through kaleido, which drives a Chromium browser on
  this machine (Debian's ``chromium`` package; ``bash scripts/test.sh`` installs it). Without
  kaleido or a browser, :func:`image_support` says what to install, and HTML still works.
* :func:`export_name` makes one file name from a run's name and the view ("cart-on-iris-1_tree"),
  and :func:`camera_config` sets the plot's own camera button to the same name and a sharp scale.
  Every download uses it: figures, the run report, the run zip and the rules/code files.
* Exports leave out the selection ring (the trace named :data:`SELECTION_TRACE` that the tree
  diagram draws around the clicked node): a file shows the tree, not where the mouse was.
* A PDF's title (what a reader's window and tab show) is the figure's name, not kaleido's
  "Kaleido-fier": :func:`pdf_with_title` appends an incremental update with a new info dictionary.

Large figures are exported as they are drawn: the figure builders already bound what they draw
(a tree diagram draws class-mix bars for at most 100 nodes and labels for at most 40 leaves, and
says so in its subtitle), so a tree of thousands of nodes exports in seconds.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import unicodedata
from html import escape
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio

from models.ground.errors import TreevizError

IMAGE_FORMATS = ("png", "svg", "pdf")
FORMATS = ("html", *IMAGE_FORMATS)
MIME = {"html": "text/html", "png": "image/png", "svg": "image/svg+xml", "pdf": "application/pdf"}
#: Pixel density of PNG exports and of the camera button (2 = sharp on high-density screens and in print).
SCALE = 2
#: Size of an exported image when the figure does not set one.
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1000, 600
#: Browsers kaleido can drive, looked up on the PATH (``BROWSER_PATH`` overrides, as for kaleido).
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Name of the trace that rings the selected node (treeviz.plots.tree_diagram); exports drop it.
SELECTION_TRACE = "selected"


def export_name(*parts: str) -> str:
    """A file name (without extension) from display texts: lower case, accents dropped, anything
    but letters, digits, dots and dashes turned into dashes, parts joined by ``_``."""
    out = []
    for part in parts:
        text = unicodedata.normalize("NFKD", str(part)).encode("ascii", "ignore").decode("ascii").lower()
        text = re.sub(r"[^a-z0-9.]+", "-", text).strip("-.")
        if text:
            out.append(text[:60])
    return "_".join(out) or "figure"


def camera_config(name: str, *, scale: int = SCALE) -> dict[str, Any]:
    """The plotly ``config`` that makes the camera button save ``name``.png at ``scale``."""
    return {"toImageButtonOptions": {"format": "png", "filename": name, "scale": scale}, "displaylogo": False}


def without_selection(fig: go.Figure) -> go.Figure:
    """A copy of ``fig`` without the selection ring (legend-less traces named :data:`SELECTION_TRACE`);
    ``fig`` itself is left as it is (the page still shows the ring)."""
    kept = [t for t in fig.data if not _is_selection(t)]
    if len(kept) == len(fig.data):
        return fig
    out = go.Figure(fig)
    out.data = [t for t in out.data if not _is_selection(t)]
    return out


def figure_html(fig: go.Figure, *, name: str = "figure") -> str:
    """The figure as a standalone HTML page with plotly.js inlined: it opens offline."""
    fig = without_selection(fig)
    html = pio.to_html(fig, full_html=True, include_plotlyjs=True, config=camera_config(name),
                       default_width="100%", default_height=f"{_height(fig)}px", validate=False)
    return html.replace("<head>", f"<head>\n    <title>{escape(name)}</title>", 1)


def image_support() -> str | None:
    """None when PNG, SVG and PDF export works here; otherwise the sentence saying what to install."""
    if not _kaleido_installed():
        return ("Image export needs the kaleido package: install it with `pip install -r requirements.txt`. "
                "HTML export works without it.")
    if not (os.environ.get("BROWSER_PATH") or any(shutil.which(b) for b in BROWSERS)):
        return ("Image export needs a Chromium browser for kaleido: install Debian's `chromium` package "
                "(`apt-get install chromium`). HTML export works without it.")
    return None


def figure_image(fig: go.Figure, fmt: str, *, scale: int = SCALE, title: str | None = None) -> bytes:
    """The figure as PNG, SVG or PDF bytes (kaleido driving Chromium), at the figure's own size
    (1000 × 600 when it sets none), without the selection ring. A PDF's title metadata is ``title``,
    else the figure's own title, else "figure"."""
    fmt = fmt.lower()
    if fmt not in IMAGE_FORMATS:
        raise TreevizError(f"Figures export as {', '.join(FORMATS)}; not {fmt!r}.")
    missing = image_support()
    if missing:
        raise TreevizError(missing)
    fig = without_selection(fig)
    width = fig.layout.width or DEFAULT_WIDTH
    try:
        data = pio.to_image(fig, format=fmt, width=width, height=_height(fig), scale=scale if fmt == "png" else 1)
    except Exception as err:  # kaleido's failures (no browser it can start, a timeout) become one sentence
        raise TreevizError(f"The figure could not be rendered as {fmt.upper()} ({type(err).__name__}: {err}); "
                           "HTML export still works.") from None
    return pdf_with_title(data, title or _figure_title(fig) or "figure") if fmt == "pdf" else data


def figure_bytes(fig: go.Figure, fmt: str, *, name: str = "figure", title: str | None = None) -> bytes:
    """The figure in any of :data:`FORMATS`, as bytes (HTML in UTF-8); ``name`` is the HTML page's
    title, and ``title`` (default ``name``) a PDF's."""
    if fmt == "html":
        return figure_html(fig, name=name).encode("utf-8")
    return figure_image(fig, fmt, title=title or name)


def pdf_with_title(data: bytes, title: str) -> bytes:
    """The PDF ``data`` with ``title`` as its document title.

    The file is not rewritten: an incremental update (the PDF standard's way of amending a file) is
    appended, holding a new version of the info dictionary and a one-entry cross-reference section
    that points back at the old one. The other info entries (creator, dates) are kept. A PDF this
    cannot read (no classic trailer with an ``/Info`` entry) comes back as it was.
    """
    tail = data[-2048:]
    trailer = re.search(rb"trailer\s*<<(.*?)>>\s*startxref\s*(\d+)\s*%%EOF\s*$", tail, re.S)
    if trailer is None:
        return data
    info = re.search(rb"/Info\s+(\d+)\s+(\d+)\s+R", trailer.group(1))
    size = re.search(rb"/Size\s+(\d+)", trailer.group(1))
    if info is None or size is None:
        return data
    number, generation = int(info.group(1)), int(info.group(2))
    old = re.search(rb"(?<![0-9])%d\s+%d\s+obj\s*<<(.*?)>>\s*endobj" % (number, generation), data, re.S)
    kept = old.group(1) if old else b""
    # Drop the old title; keep the other entries (a value in parentheses may hold escaped parentheses).
    kept = re.sub(rb"/Title\s*(\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>)", b"", kept, flags=re.S)
    # UTF-16BE with a byte-order mark, written in hex: any text, no escaping.
    encoded = b"<FEFF" + title.encode("utf-16-be").hex().upper().encode("ascii") + b">"
    body = data if data.endswith(b"\n") else data + b"\n"
    start = len(body)
    obj = b"%d %d obj\n<</Title %s\n%s>>\nendobj\n" % (number, generation, encoded, kept.strip())
    xref = len(body) + len(obj)
    rest = b"".join(m.group(0) + b" " for m in re.finditer(rb"/Root\s+\d+\s+\d+\s+R", trailer.group(1)))
    update = (b"xref\n%d 1\n%010d %05d n \ntrailer\n<</Size %s %s/Info %d %d R /Prev %s>>\nstartxref\n%d\n%%%%EOF\n"
              % (number, start, generation, size.group(1), rest, number, generation, trailer.group(2), xref))
    return body + obj + update


def _kaleido_installed() -> bool:
    return importlib.util.find_spec("kaleido") is not None


def _is_selection(trace: Any) -> bool:
    return getattr(trace, "name", None) == SELECTION_TRACE and getattr(trace, "showlegend", None) is False


def _figure_title(fig: go.Figure) -> str:
    return str(fig.layout.title.text or "") if fig.layout.title else ""


def _height(fig: go.Figure) -> int:
    return int(fig.layout.height or DEFAULT_HEIGHT)
