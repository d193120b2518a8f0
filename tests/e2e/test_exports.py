"""Exported files open in chromium with no network: a figure's standalone HTML and a run's report
render every figure."""

import pytest

from tests.e2e.conftest import WAIT_MS
from treeviz.plots import tree_figure
from treeviz.plots.export import figure_html
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.ui.report import run_report

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

RENDERED = "() => [...document.querySelectorAll('.js-plotly-plot')].filter(d => d.querySelector('.main-svg')).length"


def open_offline(browser, path):
    """The file in a browser context with the network switched off (any request would fail)."""
    context = browser.new_context(offline=True, viewport={"width": 1300, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    requests = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    return context, page, requests


def test_a_figures_html_renders_offline(browser, tmp_path):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    model, _ = train_run("cart", "classification", {"max_depth": 3}, prepared)
    path = tmp_path / "tree.html"
    path.write_text(figure_html(tree_figure(model.to_tree()), name="tree"), encoding="utf-8")
    context, page, requests = open_offline(browser, path)
    try:
        page.wait_for_function(f"{RENDERED} === 1")
        assert page.locator("g.scatterlayer .trace .points path.point").count() >= 7  # the tree's nodes
        assert [u for u in requests if not u.startswith("file:")] == []
    finally:
        context.close()


@pytest.mark.parametrize("family, task, data, params", [
    ("tao", "classification", "digits", {"depth": 3, "max_iter": 3}),
    ("tree_embedding", "embedding", "iris", {"depth": 2, "n_mu": 2, "free_iter": 100, "perplexity": 10.0}),
])
def test_a_run_report_renders_every_figure_offline(browser, tmp_path, family, task, data, params):
    store = RunStore(tmp_path / "store")
    record = train_run(family, task, params, prepare(load_dataset(data), PrepConfig(seed=0)), store=store)
    path = tmp_path / "report.html"
    path.write_text(run_report(store, record.run_id), encoding="utf-8")
    context, page, requests = open_offline(browser, path)
    try:
        expected = int(page.locator("body").get_attribute("data-figures"))
        assert expected >= 4
        page.wait_for_function(f"{RENDERED} === {expected}")
        assert page.locator(".js-plotly-plot").count() == expected
        for heading in ("Data", "Hyperparameters", "Metrics", "Training curves", "Node weights", "Rules"):
            assert page.get_by_role("heading", name=heading, exact=True).count() == 1, heading
        assert [u for u in requests if not u.startswith("file:")] == []
    finally:
        context.close()
