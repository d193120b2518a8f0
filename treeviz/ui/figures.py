"""Every figure of the app, drawn one way: the plotly chart with its camera button set to a useful
file name, and a download menu beside it offering standalone HTML (offline), PNG, SVG and PDF.

The files are made only when a button is clicked (Streamlit calls the ``data`` function then), so
drawing a page costs nothing extra. Files leave out the selection ring, and a PDF's title is the
figure's readable name (treeviz.plots.export). Where image export is not available (no kaleido, or no
Chromium for it), the menu says what to install and still offers HTML.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
import streamlit as st

from treeviz.plots.export import IMAGE_FORMATS, MIME, camera_config, export_name, figure_bytes, image_support

LABELS = {"html": "HTML (interactive, offline)", "png": "PNG", "svg": "SVG", "pdf": "PDF"}


def show_figure(fig: go.Figure, *, key: str, name: str | tuple[str, ...], where: Any = None, **chart: Any) -> Any:
    """Draw ``fig`` (``st.plotly_chart`` with ``key`` and the extra ``chart`` arguments, in the
    container ``where`` or the page) and its download menu; ``name`` (e.g. the run's name and the
    view) names the files (see :func:`treeviz.plots.export.export_name`). Returns what
    ``st.plotly_chart`` returns."""
    box = where if where is not None else st
    parts = (name,) if isinstance(name, str) else tuple(name)
    filename = export_name(*parts)
    title = " · ".join(str(p) for p in parts if str(p)) or filename  # a PDF's title: the readable name
    config = {**camera_config(filename), **chart.pop("config", {})}
    event = box.plotly_chart(fig, key=key, config=config, **chart)
    with box.popover("Download", icon=":material/download:", help="Save this figure as a file."):
        missing = image_support()
        for fmt in ("html", *IMAGE_FORMATS):
            st.download_button(LABELS[fmt], data=_maker(fig, fmt, filename, title), file_name=f"{filename}.{fmt}",
                               mime=MIME[fmt], key=f"{key}.download.{fmt}", on_click="ignore",
                               disabled=fmt != "html" and missing is not None)
        if missing:
            st.caption(missing)
    return event


def _maker(fig: go.Figure, fmt: str, filename: str, title: str):
    """The function Streamlit calls on a click to make the file (it runs outside the script)."""
    return lambda: figure_bytes(fig, fmt, name=filename, title=title)
