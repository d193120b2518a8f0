"""The app stays on its own origin: every request of every page, with no run and with a run of every
view's family, goes to the app's server, and the browser logs no error (the page icon ships with the
app; a Material icon name made every browser fetch it from a font CDN, which fails offline)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import open_page, serve_store, settled, watch_requests
from tests.hostile_names import store_of_every_view
from treeviz.services.data import load_dataset
from treeviz.ui.pages import PAGES

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier


@pytest.fixture(scope="module", params=["no run", "a run of every view"])
def served(request, tmp_path_factory):
    home = tmp_path_factory.mktemp("offline-home")
    if request.param != "no run":
        store_of_every_view(home, load_dataset("iris"))
    yield from serve_store(home)


def test_every_page_requests_only_the_apps_own_origin(served, page):
    outside = watch_requests(page.context, (served, "data:", "blob:"))
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(served)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settled(page)
    icon = page.evaluate("() => [...document.querySelectorAll('link[rel~=icon]')].map(l => l.href)")
    assert icon and all(href.startswith(served) for href in icon), icon
    for spec in PAGES:
        open_page(page, spec.title)
    assert outside == [], outside
    assert errors == [], errors
