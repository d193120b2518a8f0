"""The figures' text does not overlap at the widths a page gives them in 1100 and 1400 px windows.

With the sidebar open, the app's main column is 800 and 1100 px wide in those windows, less
80 px of padding each side (measured in chromium): a full-width figure gets 640 and 940 px. Each
figure is built from a real run the way its page builds it, rendered by plotly.js in chromium at
that width (its standalone HTML, which fills the window as a page's ``use_container_width``
does), and every piece of text plotly drew (titles, subtitles, subplot titles, legend entries,
colour bars, axis titles and tick labels, Sankey labels) is measured. No two text boxes may
overlap. A screenshot of each is saved to ``tests/e2e/artifacts/``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from models.registry import get_family
from tests.e2e.conftest import ARTIFACTS, WAIT_MS
from treeviz.plots import class_flow_figure, embedding_panels, forest_summary_figure, lambda_path_figure
from treeviz.plots.export import figure_html
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep, sweep_table
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser: the full tier

WIDTHS = (640, 940)  # the figure widths in 1100 and 1400 px windows (see above)

#: Every text element plotly draws, with its box (in page pixels), tick labels and colour bars included.
TEXT_BOXES = """() => [...document.querySelectorAll(
    '.gtitle, .g-gtitle text, .annotation-text, .legendtext, .colorbar text, .node-label, .xtitle, .ytitle, '
    + '.xtick text, .ytick text')]
  .map(e => { const r = e.getBoundingClientRect();
              return {text: e.textContent, x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; })
  .filter(b => b.text.trim() && b.x1 - b.x0 > 0 && b.y1 - b.y0 > 0)"""


#: Resolves once the text boxes have stayed the same for ten animation frames in a row: plotly's
#: second layout pass (legends, colour bars, automargins) is done, however long it took (it gives
#: up after 10 000 frames, when the overlap check then measures what is drawn).
SETTLED = f"""() => new Promise(done => {{
  let last = null, same = 0, frames = 0;
  const look = () => {{
    const now = JSON.stringify(({TEXT_BOXES})());
    same = now === last ? same + 1 : 0;
    last = now;
    if (same >= 10 || ++frames > 10000) done(same >= 10); else requestAnimationFrame(look);
  }};
  requestAnimationFrame(look);
}})"""


def overlaps(boxes, tolerance: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of text boxes that overlap by more than ``tolerance`` pixels both ways."""
    out = []
    for a, b in itertools.combinations(boxes, 2):
        dx = min(a["x1"], b["x1"]) - max(a["x0"], b["x0"])
        dy = min(a["y1"], b["y1"]) - max(a["y0"], b["y0"])
        if dx > tolerance and dy > tolerance:
            out.append((a["text"], b["text"]))
    return out


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """The four figures the issue found crowded, each from a real run."""
    out = {}
    digits = prepare(load_dataset("digits"), PrepConfig(seed=0))
    cart, _ = train_run("cart", "classification", {"max_depth": 6}, digits)
    tree = cart.to_tree()
    out["sankey, depth 6"] = class_flow_figure(tree, digits.X_test, digits.labels("test"), max_levels=6)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    forest, _ = train_run("tao_forest", "classification", dict(get_family("tao_forest").test_params, n_trees=4), iris)
    out["forest summary"] = forest_summary_figure(forest.to_trees(), iris.X_test)
    family = get_family("tao")
    store = RunStore(tmp_path_factory.mktemp("home"))
    results = run_sweep("tao", "classification", dict(family.test_params), iris, [1e-3, 1e-2, 1e-1, 1.0],
                        param=family.lambda_path.param, store=store)
    out["λ path"] = lambda_path_figure(sweep_table(store, [r.record for r in results]),
                                       param=family.lambda_path.param)
    Z = np.asarray(iris.X_train[:, :2])
    panels = [{"title": title, "Z": Z + i, "note": f"E = {1.234 * (i + 1):.3f} · 5-NN accuracy 0.9{i}"}
              for i, title in enumerate(("Tree embedding", "Free embedding Z0", "Direct fit F0 (TAO)",
                                         "CART fit to Z0", "UMAP"))]
    out["embedding comparison"] = embedding_panels(
        panels, classes=iris.labels("train"), subtitle="every panel: the training points; E is the embedding's "
        "objective on them, lower is better; 5-NN accuracy and trustworthiness on the test points")
    return out


@pytest.mark.parametrize("width", WIDTHS)
def test_no_two_pieces_of_text_overlap(browser, figures, tmp_path, width):
    found = {}
    for name, fig in figures.items():
        path = tmp_path / f"{name}.html"
        path.write_text(figure_html(fig, name=name), encoding="utf-8")
        context = browser.new_context(offline=True, viewport={"width": width, "height": 1000})
        try:
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            page.goto(path.as_uri())
            page.wait_for_selector(".main-svg")
            page.evaluate(SETTLED)  # plotly's second layout pass (legends, colour bars) is done
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"overlap_{name.replace(' ', '_')}_{width}.png"), full_page=True)
            bad = overlaps(page.evaluate(TEXT_BOXES))
            if bad:
                found[name] = (len(bad), bad[:3])
        finally:
            context.close()
    assert not found, found
