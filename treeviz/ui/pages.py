"""The app's pages, defined once: app.py's navigation and every page switch use this table.

The page scripts live in ``app_pages/``, not ``pages/``: with a ``pages/`` folder next to
``app.py``, Streamlit 1.67 switches to its legacy multipage mode whenever a page URL is opened
directly (and in ``AppTest``), running the page without ``app.py``, so without navigation and
without the shared sidebar.

A page with a ``view`` shows what only some families offer (``Family.offers(view)``); it is in the
navigation when at least one registered family offers that view.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from models.registry import families

#: The app's icon (the browser tab's), served by the app itself: the app makes no request outside its
#: own origin, so it works offline (``tests/e2e/test_offline.py``).
ICON = Path(__file__).resolve().parent / "assets" / "icon.png"


@dataclass(frozen=True)
class PageSpec:
    key: str
    path: str
    title: str
    icon: str
    default: bool = False
    view: str | None = None


PAGES: tuple[PageSpec, ...] = (
    PageSpec("data", "app_pages/data.py", "Data", ":material/table_chart:", default=True),
    PageSpec("train", "app_pages/train.py", "Train", ":material/model_training:"),
    PageSpec("explorer", "app_pages/explorer.py", "Tree explorer", ":material/account_tree:"),
    PageSpec("routing", "app_pages/routing.py", "Routing", ":material/alt_route:"),
    PageSpec("lambda_path", "app_pages/pruning.py", "Pruning / λ path", ":material/content_cut:",
             view="lambda_path"),
    PageSpec("features", "app_pages/features.py", "Features", ":material/filter_alt:", view="features"),
    PageSpec("clustering", "app_pages/clustering.py", "Clustering", ":material/bubble_chart:",
             view="clustering"),
    PageSpec("embeddings", "app_pages/embeddings.py", "Embeddings", ":material/scatter_plot:", view="embedding"),
    PageSpec("semi_supervised", "app_pages/semi_supervised.py", "Semi-supervised", ":material/label:",
             view="semi_supervised"),
    PageSpec("bandit", "app_pages/bandit.py", "Bandit feedback", ":material/casino:", view="bandit"),
    PageSpec("predict", "app_pages/predict.py", "Predict", ":material/online_prediction:"),
    PageSpec("compare", "app_pages/compare.py", "Compare", ":material/leaderboard:"),
    PageSpec("runs", "app_pages/runs.py", "Runs", ":material/history:"),
)
_SPECS = {p.key: p for p in PAGES}
_built: dict[str, st.Page] = {}


def page(key: str) -> st.Page:
    """The ``st.Page`` of a page (made once per process, inside a script run)."""
    if key not in _built:
        spec = _SPECS[key]
        _built[key] = st.Page(spec.path, title=spec.title, icon=spec.icon, default=spec.default)
    return _built[key]


def navigation_pages() -> list[st.Page]:
    """The pages in the navigation: every common page, and each view page some family offers."""
    offered = {view for view in {p.view for p in PAGES if p.view}
               if any(f.offers(view) for f in families().values())}
    return [page(p.key) for p in PAGES if p.view is None or p.view in offered]


def switch_to(key: str) -> None:
    """Go to another page (``st.switch_page`` with the page's one ``st.Page``)."""
    st.switch_page(page(key))
