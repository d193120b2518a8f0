"""The Compare page with runs of three families on one data set, and every figure's download menu."""

import json

import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, open_page, texts
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_compare_three_families_on_one_data_set(home):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    for family, params in (("cart", {"max_depth": 3}), ("tao", {"depth": 2, "max_iter": 3}),
                           ("latent", {"depth": 2, "max_epochs": 5})):
        train_run(family, "classification", params, iris, store=store)
    train_run("cart", "regression", {"max_depth": 2}, prepare(load_dataset("diabetes"), PrepConfig(seed=0)),
              store=store)
    at = new_app().run()
    open_page(at, "compare")
    assert_clean(at)
    assert at.selectbox(key="compare.group").value == "iris · classification · 3 run(s)"
    board = at.dataframe[0].value
    assert len(board) == 3 and list(board.columns[:3]) == ["run", "family", "test accuracy"]
    assert board["test accuracy"].is_monotonic_decreasing
    fronts = [s for s in chart_specs(at) if "front" in s["layout"].get("meta", {})]
    assert len(fronts) == 2 and all(len(s["layout"]["meta"]["families"]) == 3 for s in fronts)
    assert all(s["layout"]["meta"]["front"] for s in fronts)  # someone is always on the front
    trees = [s for s in chart_specs(at) if "node_trace" in s["layout"].get("meta", {})]
    assert len(trees) == 2  # the two runs side by side
    # every figure has its download menu: HTML, PNG, SVG and PDF
    keys = [b.key for b in at.get("download_button")]
    for figure in ("compare.pareto.n_nonzero_weights", "compare.tree.left", "compare.routing.right"):
        assert [k for k in keys if k.startswith(f"{figure}.download.")] == [
            f"{figure}.download.{fmt}" for fmt in ("html", "png", "svg", "pdf")]
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"HTML (interactive, offline)", "PNG", "SVG", "PDF"} <= labels
    # another data set's runs
    at.selectbox(key="compare.group").set_value("diabetes · regression · 1 run(s)").run()
    assert_clean(at)
    assert list(at.dataframe[0].value.columns[:3]) == ["run", "family", "test R²"]
    assert any("Train a second model" in i.value for i in at.info)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_run_with_text_metrics_is_skipped_with_a_note(home):
    store = RunStore(home)
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    bad = train_run("cart", "classification", {"max_depth": 2}, iris, store=store)
    for depth in (1, 3):
        train_run("cart", "classification", {"max_depth": depth}, iris, store=store)
    path = store.runs_dir / bad.run_id / "run.json"
    record = json.loads(path.read_text())
    record["metrics"]["test_accuracy"] = "0.99 (trust me)"  # once a TypeError on the Compare page
    path.write_text(json.dumps(record))
    at = new_app().run()
    open_page(at, "compare")
    assert_clean(at)
    assert any(bad.run_id in w and "test_accuracy" in w for w in texts(at.warning))
    assert len(at.dataframe[0].value) == 2
