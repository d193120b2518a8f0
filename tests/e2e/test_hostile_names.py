"""Names are text, in a real browser: every page, an exported HTML figure, an SVG and the report,
for runs whose data set, file, feature, class, target and run names and notes come from the hostile
corpus (``tests/hostile_names.py``).

Every request the browser makes is intercepted: the test fails when one leaves the app's origin
(a file opened from disk may load only ``file:`` and ``data:`` addresses). It also fails when a
hostile string became an element: an attribute pointing at the corpus's host or a ``javascript:``
address (an ``img``, an ``a``, a styled ``span`` or ``tspan``), or an element whose own text is one
of the corpus's ``tvz-…`` markers (the text inside a tag of a name: escaped, it sits inside a
longer text).
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import DRAWN, WAIT_MS, open_page, serve_store, settled, watch_requests
from tests.hostile_names import FILE_NAME, hostile_csv, hostile_store
from treeviz.plots import TreeFigureOptions, tree_figure, weights_heatmap
from treeviz.plots.export import figure_html, figure_image
from treeviz.services.store.runs import RunStore
from treeviz.services.views.run_view import RunView
from treeviz.ui.pages import PAGES
from treeviz.ui.report import run_report

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

#: The elements a name's markup made: attributes pointing at the corpus's host or a javascript:
#: address (text-holding attributes aside), and elements whose own text is exactly a marker.
HOSTILE_ELEMENTS = r"""() => {
  const found = [];
  const textual = new Set(['title', 'value', 'alt', 'placeholder', 'label']);
  for (const e of document.querySelectorAll('*')) {
    for (const a of e.attributes) {
      if (a.name.startsWith('data-') || a.name.startsWith('aria-') || textual.has(a.name)) continue;
      if (/evil\.invalid|javascript:/i.test(a.value)) found.push(`<${e.tagName} ${a.name}="${a.value.slice(0, 80)}">`);
    }
    const own = [...e.childNodes].filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join('').trim();
    if (/^tvz-[a-z0-9-]+$/.test(own)) found.push(`<${e.tagName}> made from a name: ${own}`);
  }
  return found;
}"""


@pytest.fixture(scope="module")
def hostile_home(tmp_path_factory):
    home = tmp_path_factory.mktemp("hostile-home")
    return home, hostile_store(home)


@pytest.fixture(scope="module")
def hostile_url(hostile_home):
    yield from serve_store(hostile_home[0])


def test_every_page_shows_hostile_names_as_text_and_stays_on_its_origin(hostile_url, page):
    outside = watch_requests(page.context, (hostile_url, "data:", "blob:"))
    made: dict[str, list[str]] = {}

    def check(where: str) -> None:
        found = page.evaluate(HOSTILE_ELEMENTS)
        if found:
            made[where] = found

    page.goto(hostile_url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settled(page)
    # the hostile file uploaded under its hostile name: the flash, the columns' expander, the sidebar
    page.get_by_text("Upload a file").click()
    settled(page)
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
        files=[{"name": FILE_NAME, "mimeType": "text/csv", "buffer": hostile_csv()}])
    page.get_by_text("Columns of", exact=False).first.wait_for()
    settled(page)
    check("Data, after the upload")
    for spec in PAGES:
        open_page(page, spec.title)
        check(spec.title)
        if spec.key == "explorer":  # a sample's path: its prediction and true class, its rules
            page.get_by_text("Highlight a sample's path").click()
            page.get_by_text(re.compile(r"^Path of \w+ row 0$")).wait_for()
            settled(page)
            check("Tree explorer, a sample's path")
        if spec.key == "predict":  # the hostile table's rows predicted: notes, the table, the summary
            page.locator("input[type=file]").first.set_input_files(
                files=[{"name": FILE_NAME, "mimeType": "text/csv", "buffer": hostile_csv()}])
            page.get_by_text("row(s) predicted by", exact=False).wait_for()
            settled(page)
            check("Predict, after the upload")
    assert made == {}, made
    assert outside == [], outside


def _opened(browser, path, selector: str) -> tuple[list[str], list[str]]:
    """Open a file the app exports in its own browser context; the requests that were not to the
    file itself (or data:), and the elements made from names."""
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    try:
        outside = watch_requests(context, ("file:", "data:", "blob:"))
        page = context.new_page()
        page.goto(path.as_uri())
        page.wait_for_selector(selector, timeout=WAIT_MS)
        if selector == ".js-plotly-plot":
            page.wait_for_function(DRAWN, timeout=WAIT_MS)
        return outside, page.evaluate(HOSTILE_ELEMENTS)
    finally:
        context.close()


#: The families whose reports every tier opens, one run each: a hard tree with its routing, an
#: oblique tree with its weights and λ path, and a latent clustering tree with its curves. The deep
#: tier opens the report of every run.
REPORT_FAMILIES = ("cart", "tao", "latent")


def _check_exports(browser, hostile_home, tmp_path, families) -> None:
    home, records = hostile_home
    if families is not None:
        records = [next(r for r in records if r.family == family) for family in families]
    store = RunStore(home)
    cart = next(r for r in records if r.family == "cart")
    view = RunView.build(store.load_model(cart.run_id), store.load_prepared(cart.run_id), "train")
    tree = view.tree
    files = {}
    for name, fig in (("tree", tree_figure(tree, stats=view.stats, options=TreeFigureOptions(family_label=cart.name))),
                      ("heatmap", weights_heatmap(tree))):
        files[f"{name}.html"] = figure_html(fig, name=cart.name)
    (tmp_path / "tree.svg").write_bytes(figure_image(tree_figure(tree, stats=view.stats), "svg"))
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    for record in records:  # every family's report: its tree, curves, weights, routing, λ path, rules
        report = tmp_path / f"report-{record.family}-{record.run_id}.html"
        report.write_text(run_report(store, record.run_id), encoding="utf-8")
    checked = [*sorted(tmp_path.glob("*.html")), tmp_path / "tree.svg"]
    results = {}
    for path in checked:
        outside, made = _opened(browser, path, "svg" if path.suffix == ".svg" else ".js-plotly-plot")
        if outside or made:
            results[path.name] = (outside, made)
    assert len(checked) == len(records) + 3
    assert results == {}, results


def test_exported_figures_and_the_report_show_hostile_names_as_text(browser, hostile_home, tmp_path):
    _check_exports(browser, hostile_home, tmp_path, REPORT_FAMILIES)


@pytest.mark.deep(covered_by="tests/e2e/test_hostile_names.py::"
                           "test_exported_figures_and_the_report_show_hostile_names_as_text")
def test_every_familys_report_shows_hostile_names_as_text(browser, hostile_home, tmp_path):
    _check_exports(browser, hostile_home, tmp_path, None)
