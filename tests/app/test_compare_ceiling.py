"""Compare's black-box ceiling in the app (issue 52, item 5): one click trains it on the runs' split (a
background job), a caption line says its score beside the best tree's, both Pareto plots draw it as a
reference line, and it is kept for the tab but never stored as a run or offered as a tree; the explorer's
node browser lists the rows that reach the selected node."""

import time

import pytest

from tests.app.conftest import WAIT_S, assert_clean, chart_specs, new_app, open_page
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.ceiling import LABEL, train_ceiling


def _references(at) -> list[float]:
    return [s["layout"]["meta"]["reference"]["score"] for s in chart_specs(at)
            if "front" in s["layout"].get("meta", {}) and "reference" in s["layout"]["meta"]]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_one_click_trains_the_ceiling_and_compare_draws_it_as_a_reference(home):
    store = RunStore(home)
    wine = prepare(load_dataset("wine"), PrepConfig(seed=1))
    for depth in (1, 2):
        train_run("cart", "classification", {"max_depth": depth}, wine, store=store)
    at = new_app().run()
    open_page(at, "compare")
    assert_clean(at)
    assert _references(at) == [] and not any("Reference, not a tree" in c.value for c in at.caption)
    at.button(key="compare.ceiling").click().run()  # a background job
    deadline = time.monotonic() + WAIT_S
    while not any("Reference, not a tree" in c.value for c in at.caption) and time.monotonic() < deadline:
        assert_clean(at)
        time.sleep(0.3)
        at.run()
    assert_clean(at)
    expected = train_ceiling(wine, "classification").metrics["test_accuracy"]
    [line] = [c.value for c in at.caption if "Reference, not a tree" in c.value]
    assert f"{LABEL} · test accuracy {expected:.4f}" in line and "not stored as a run" in line
    assert _references(at) == [expected, expected]
    at.run()  # kept for the tab: no second click, no button
    assert _references(at) == [expected, expected]
    assert not [b for b in at.button if b.key == "compare.ceiling"]
    assert len(store.list()) == 2
    for side in ("compare.left", "compare.right"):  # the tree choosers offer the two runs only
        assert sorted(at.selectbox(key=side).options) == [f"{r.name} · CART" for r in sorted(
            store.list(), key=lambda r: r.name)]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_explorer_lists_the_rows_that_reach_the_selected_node(home):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, iris, store=store)
    at = new_app().run()
    open_page(at, "explorer")
    at.number_input(key="explorer.node").set_value(1).run()
    assert_clean(at)
    counts = store.load_model(record.run_id).to_tree().node_stats(iris.X_train).count
    [text] = [m.value for m in at.markdown if "train rows reach" in m.value]
    assert text.startswith(f"**{int(counts[1])}** train rows reach")
    table = at.dataframe[-1].value
    assert len(table) == counts[1] and list(table.columns[:5]) == ["row", "row of the split", "true", "predicted",
                                                                  "misclassified"]
