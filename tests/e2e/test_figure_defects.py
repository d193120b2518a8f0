"""Issue 52's figure defects, as a user sees them in chromium: tree titles that repeat no word
(Tree explorer, Compare), a class legend naming every colour of the latent tree's node bars, a
sample path in a colour no class has and a selection ring that leaves the node's id readable, log
axes labelled in full numbers (Compare, Semi-supervised), and a Routing Sankey in tree order with
every node labelled.

Small runs are stored before the server starts: on digits a latent tree of depth 3 (8 leaves for 10
classes, so some classes lead no node but show in the bars), CART at depths 4 and 7 and a TAO tree;
on moons a small LapTAO run. Every assertion reads the drawn SVG.
"""

from __future__ import annotations

import itertools
import math

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TRAINING_MS, serve_store
from tests.e2e.test_browser import choose, pick_sidebar_run, settle
from tests.treeviz.figure_checks import MIN_DELTA_E, branch_code, nearest_class_difference, rgb_of
from treeviz.plots import style
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

#: The tree diagram on screen (not a previous run's that Streamlit marks stale), as drawn.
TREE = """() => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
    g => !g.closest('[data-stale="true"]') && g.layout && g.layout.meta && g.layout.meta.node_trace !== undefined);
  if (!gd || !gd.querySelector('.main-svg')) return null;
  const traces = [...gd.querySelectorAll('.scatterlayer .trace')];
  const box = e => { const r = e.getBoundingClientRect(); return {x0: r.left, x1: r.right, y0: r.top, y1: r.bottom}; };
  const index = name => gd.data.findIndex(t => t.name === name);
  const nodes = traces[gd.layout.meta.node_trace];
  const ring = index('selected') >= 0 ? traces[index('selected')].querySelector('path.point') : null;
  const path = index('sample path') >= 0 ? traces[index('sample path')].querySelector('path.js-line') : null;
  return {
    title: gd.querySelector('.gtitle').textContent,
    legend: [...gd.querySelectorAll('.legend .traces')].map(t => ({text: t.querySelector('.legendtext').textContent,
      fill: (t.querySelector('.legendpoints path') || {style: {}}).style.fill})),
    bars: [...gd.querySelectorAll('.shapelayer path')].map(p => p.style.fill).filter(f => f),
    nodeFills: [...nodes.querySelectorAll('path.point')].map(p => p.style.fill),
    ids: [...nodes.querySelectorAll('.textpoint text')].map(t => ({text: t.textContent, box: box(t)})),
    ring: ring ? {box: box(ring), width: parseFloat(ring.style.strokeWidth)} : null,
    pathStroke: path ? path.style.stroke : null,
  }; }"""

#: Every figure's title and its x tick labels with their centres.
AXES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(g => !g.closest('[data-stale="true"]')
  && g.querySelector('.main-svg')).map(gd => ({
    title: gd.querySelector('.gtitle') ? gd.querySelector('.gtitle').textContent : '',
    type: gd._fullLayout.xaxis ? gd._fullLayout.xaxis.type : null,
    ticks: [...gd.querySelectorAll('.xtick text')].map(t => ({text: t.textContent, at: t.__data__.x}))}))"""

#: The Sankey's nodes as drawn: node id (from the trace's customdata), label and rectangle.
SANKEY = """() => { const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
    g => !g.closest('[data-stale="true"]') && g.data && g.data[0] && g.data[0].type === 'sankey');
  if (!gd || !gd.querySelector('.sankey-node')) return null;
  return [...gd.querySelectorAll('.sankey-node')].map(g => {
    const r = g.querySelector('.node-rect').getBoundingClientRect(), label = g.querySelector('.node-label');
    return {id: gd.data[0].node.customdata[g.__data__.index], label: label ? label.textContent : '',
            x: Math.round(r.left), y0: r.top, y1: r.bottom}; }); }"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The stored runs (name -> record) and their trees, and the server's URL."""
    home = tmp_path_factory.mktemp("treeviz-home-figures")
    store = RunStore(home)
    digits = prepare(load_dataset("digits"), PrepConfig(seed=0))
    records = {}
    for family, params, name in (("latent", {"depth": 3, "max_epochs": 3}, "Latent digits"),
                                 ("cart", {"max_depth": 4}, "CART4 digits"), ("cart", {"max_depth": 7}, "CART7 digits"),
                                 ("tao", {"depth": 2, "max_iter": 2}, "TAO digits")):
        records[name] = train_run(family, "classification", params, digits, store=store, name=name)
    moons = prepare(load_dataset("moons"), PrepConfig(seed=0))
    laptao = {"labelled_fraction": 0.1, "depth": 2, "n_mu": 3, "tao_iter": 3}
    records["LapTAO moons"] = train_run("laptao", "classification", laptao, moons, store=store, name="LapTAO moons")
    trees = {name: store.load_model(r.run_id).to_tree() for name, r in records.items()}
    return home, records, trees


@pytest.fixture(scope="module")
def url(runs):
    yield from serve_store(runs[0])


def open_with_run(page, url: str, title: str, run_name: str) -> None:
    """Open page ``title`` with ``run_name`` picked in the sidebar."""
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=title, exact=True).click()
    page.get_by_role("heading", name=title, exact=True).wait_for()
    settle(page)
    pick_sidebar_run(page, run_name)
    caption = page.get_by_test_id("stCaptionContainer").filter(has_text=f"{run_name} ·")
    expect(caption.first).to_be_visible()  # the page shows this run
    page.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')")
    settle(page)


def repeated_words(title: str) -> list[str]:
    words = [w.strip("·,()").lower() for w in title.split() if w.strip("·,()")]
    return sorted({w for w in words if words.count(w) > 1})


def assert_full_number_ticks(ticks: list[dict]) -> None:
    """Log-axis tick labels that read as the numbers at their places (``at``: plotly's position of
    the tick, the logarithm of its value), in increasing order."""
    values = [float(t["text"].replace(",", "").replace("−", "-")) for t in ticks]
    assert len(values) >= 2 and values == sorted(values) and len(set(values)) == len(values), ticks
    for t, v in zip(ticks, values):
        assert math.log10(v) == pytest.approx(t["at"], abs=1e-6), t


def explorer_diagram(page, url: str, run_name: str, *, path: bool = False) -> dict:
    """The run's diagram in the Tree explorer as drawn (with a sample's path when ``path``)."""
    open_with_run(page, url, "Tree explorer", run_name)
    if path:
        box = page.get_by_role("checkbox", name="Highlight a sample's path").first
        for _ in range(3):  # a click that lands during a rerun is lost
            if box.is_checked():
                break
            page.get_by_text("Highlight a sample's path").first.click()  # the label: the box is covered
            settle(page)
        expect(box).to_be_checked()
    page.wait_for_function(f"() => {{ const t = ({TREE})(); return t && t.ids.length"
                           + (" && t.pathStroke; }" if path else "; }"))
    return page.evaluate(TREE)


def test_explorer_title_says_tree_once(runs, url, page):
    """Defect 1: "Latent trees tree" on the latent run's diagram."""
    seen = explorer_diagram(page, url, "Latent digits")
    assert not repeated_words(seen["title"]), seen["title"]
    assert seen["title"] == f"Latent trees · depth {runs[2]['Latent digits'].max_depth}"


def test_explorer_legend_names_every_class_the_bars_show(runs, url, page):
    """Defect 2: 8 leaves for 10 digits, so some classes lead no node, yet every digit shows in
    some node's class-mix bar; the legend names each colour drawn."""
    tree = runs[2]["Latent digits"]
    seen = explorer_diagram(page, url, "Latent digits")
    assert seen["bars"]  # the class-mix bars are drawn (15 nodes)
    legend = {e["fill"]: e["text"] for e in seen["legend"] if e["fill"]}
    shown = set(seen["bars"]) | {f for f in seen["nodeFills"] if f != "rgb(255, 255, 255)"}
    class_fills = {"rgb({}, {}, {})".format(*rgb_of(style.class_color(k))): name
                   for k, name in enumerate(tree.output_names)}
    coloured = {class_fills[f] for f in shown if f in class_fills}
    assert coloured == set(tree.output_names)
    assert set(legend.values()) >= coloured, (sorted(legend.values()), sorted(coloured))
    for fill, name in legend.items():  # each entry in its class's colour
        assert class_fills.get(fill) == name


def test_explorer_path_colour_and_selection_ring(runs, url, page):
    """Defect 3: the sample's path in a colour far from every class colour (for colour-blind eyes
    too), and the ring of the selected node (node 0 by default) clear of that node's id, on the
    depth-7 tree's six levels (small markers: the old ring crossed the id by 3 px)."""
    seen = explorer_diagram(page, url, "CART7 digits", path=True)
    stroke = "#{:02X}{:02X}{:02X}".format(*rgb_of(seen["pathStroke"]))
    assert stroke not in {c.upper() for c in style.CLASS_PALETTE}
    assert nearest_class_difference(stroke) >= MIN_DELTA_E, stroke

    ring, box = seen["ring"], next(t["box"] for t in seen["ids"] if t["text"] == "0")
    cx, cy = (ring["box"]["x0"] + ring["box"]["x1"]) / 2, (ring["box"]["y0"] + ring["box"]["y1"]) / 2
    outer = (ring["box"]["x1"] - ring["box"]["x0"]) / 2 + ring["width"] / 2
    dx = max(box["x0"] - cx, 0.0, cx - box["x1"])
    dy = max(box["y0"] - cy, 0.0, cy - box["y1"])
    assert math.hypot(dx, dy) > outer, (ring, box)  # the ring does not reach the id's text


def test_compare_titles_and_the_decision_node_axis(runs, url, page):
    """Defects 1 and 7 on Compare: the side-by-side trees' titles, and full numbers on the log axes."""
    page.goto(url)
    page.get_by_role("heading", name="Data", exact=True).wait_for()
    settle(page)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name="Compare", exact=True).click()
    page.get_by_role("heading", name="Compare", exact=True).wait_for()
    choose(page, "Data set", "digits")
    page.wait_for_function(f"() => ({AXES})().filter(f => f.title.includes('· depth')).length === 2"
                           f" && ({AXES})().some(f => f.title.includes('against decision nodes') && f.ticks.length)")
    figures = page.evaluate(AXES)
    titles = [f["title"] for f in figures if "· depth" in f["title"]]
    assert all(not repeated_words(t) for t in titles), titles
    for size in ("decision nodes", "nonzero weights"):
        axis = next(f for f in figures if f"against {size}" in f["title"])
        assert axis["type"] == "log"
        assert_full_number_ticks(axis["ticks"])


def test_semi_supervised_label_curve_axis(runs, url, page):
    """Defect 7 on Semi-supervised: the labelled-fraction axis reads 1, 2, 5, 10, 20."""
    open_with_run(page, url, "Semi-supervised", "LapTAO moons")
    page.get_by_role("spinbutton", name="Labelled subsets").fill("1")
    page.keyboard.press("Enter")
    settle(page)
    page.get_by_role("button", name="Run", exact=True).click()
    page.wait_for_function(f"() => ({AXES})().some(f => f.title.includes('fraction of labelled') && f.ticks.length)",
                           timeout=TRAINING_MS)
    axis = next(f for f in page.evaluate(AXES) if "fraction of labelled" in f["title"])
    assert axis["type"] == "log"
    assert_full_number_ticks(axis["ticks"])
    assert {"1", "5", "10", "20"} <= {t["text"] for t in axis["ticks"]}


def test_routing_sankey_in_tree_order_with_every_node_labelled(runs, url, page):
    """Defect 11: at the Sankey's default depth 4, each level's nodes run top to bottom in tree order,
    without overlapping, and every node, the deepest level's too, carries its id."""
    _, _, trees = runs
    tree = trees["CART4 digits"]
    open_with_run(page, url, "Routing", "CART4 digits")
    page.wait_for_function(f"() => ({SANKEY})() !== null")
    nodes = page.evaluate(SANKEY)
    depths = {int(tree.node_depth[n["id"]]) for n in nodes}
    assert depths == set(range(5))
    assert all(n["label"] == f"node {n['id']}" for n in nodes), [n for n in nodes if n["label"] != f"node {n['id']}"]
    columns: dict[int, list[dict]] = {}
    for n in nodes:
        columns.setdefault(n["x"], []).append(n)
    assert len(columns) == 5
    for column in columns.values():
        column.sort(key=lambda n: n["y0"])
        ids = [n["id"] for n in column]
        assert ids == sorted(ids, key=lambda v: branch_code(tree, v)), ids
        assert all(a["y1"] <= b["y0"] + 0.5 for a, b in itertools.pairwise(column))
