"""Reading the HTML that a notebook shows for a model: the inlined plotly.js bundle, the figure's
traces, and any address outside the notebook."""

from __future__ import annotations

import json
import re

#: The plotly.js bundle written into an output (one <script> element, opening with its licence).
PLOTLY_JS = re.compile(r"<script[^>]*>\s*/\*\*\s*\*\s*plotly\.js v.*?</script>", re.S)
#: An element that would load something: a src or href attribute, or a CSS url(...)/@import.
LOADS = re.compile(r"""<[a-z]+\b[^>]*\b(?:src|href)\s*=|url\(|@import""", re.I)


def without_plotly_js(html: str) -> str:
    """The output with the plotly.js bundle taken out (the library's own source names web
    addresses, map tile servers among them, that a tree figure never fetches)."""
    return PLOTLY_JS.sub("", html)


def outside_requests(text: str) -> list[str]:
    """What in an output (plotly.js taken out) points outside the notebook: web addresses and
    elements that load a resource."""
    rest = without_plotly_js(text)
    return re.findall(r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s\"'<>]*", rest, re.I) + LOADS.findall(rest)


def figure_traces(html: str) -> list[dict]:
    """The traces that the output's ``Plotly.newPlot`` draws."""
    start = html.index("Plotly.newPlot(")
    data_at = html.index("[", html.index(",", start))
    traces, _ = json.JSONDecoder().raw_decode(html, data_at)
    return traces


def header(html: str) -> str:
    """The card's header as text."""
    found = re.search(r'<div class="treeviz-card-header"[^>]*>(.*?)</div>', html, re.S)
    assert found, "no treeviz header in the output"
    return re.sub(r"<[^>]+>", "", found.group(1))
