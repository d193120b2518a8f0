"""Every page renders, with and without runs, and its controls work."""

import json

import numpy as np
import pytest

from tests.app.conftest import PAGES, assert_clean, chart_specs, new_app, node_trace, open_page, texts
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore


def make_run(home, key="breast_cancer", depth=4, name=None, scaling="standard"):
    prepared = prepare(load_dataset(key), PrepConfig(scaling=scaling))
    task = prepared.dataset.task
    return train_run("cart", task, {"max_depth": depth}, prepared, store=RunStore(home), name=name)


def app_on(page):
    at = new_app().run()
    return open_page(at, page)


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_without_any_run(home, page):
    at = app_on(page)
    assert_clean(at)
    assert at.title
    if page in ("explorer", "routing", "runs"):
        assert any("No run" in i or "No runs" in i for i in texts(at.info))


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders_with_a_run(home, page):
    record = make_run(home)
    at = app_on(page)
    assert_clean(at)
    if page in ("explorer", "routing", "runs"):
        assert chart_specs(at), f"{page} shows figures for {record.name}"


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_explorer_node_panel_path_and_zoom(home):
    record = make_run(home, depth=4)
    at = app_on("explorer")
    tree = RunStore(home).load_model(record.run_id).to_tree()
    # default node: the root, a decision node with its rule in the data's own units
    rule = next(m for m in texts(at.markdown) if m.startswith("**Right if**"))
    assert tree.feature_names[int(np.flatnonzero(tree.weight[0])[0])] in rule
    assert "Nodes" in [m.label for m in at.metric]
    # select a leaf by number: the panel shows what it predicts
    leaf = int(tree.leaves[0])
    at.number_input(key="explorer.node").set_value(leaf).run()
    assert_clean(at)
    assert any(m.startswith("**Predicts:**") for m in texts(at.markdown))
    # highlight one test sample's path: a path table, the prediction and the rule text
    at.checkbox(key="explorer.show_path").check().run()
    at.number_input(key="explorer.row").set_value(3).run()
    assert_clean(at)
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    path_trace = next(t for t in spec["data"] if t.get("name") == "sample path")
    assert len(path_trace["x"]) > 0
    assert any(c.value.startswith("IF ") for c in at.code)
    assert any(m.startswith("**Prediction:**") for m in texts(at.markdown))
    # zoom into a decision node: only its subtree is drawn
    node = int(tree.children_left[0])
    at.number_input(key="explorer.node").set_value(node).run()
    at.button(key="explorer.zoom").click().run()
    assert_clean(at)
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    shown_ids = {int(c[0]) for c in node_trace(spec)["customdata"]}
    assert shown_ids == set(tree.subtree_nodes(node, max_levels=4).tolist())
    at.button(key="explorer.unzoom").click().run()
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    assert len(node_trace(spec)["customdata"]) == tree.n_nodes


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_explorer_rules_switch_between_units(home):
    make_run(home, key="iris", depth=2)
    at = app_on("explorer")
    raw_rule = next(m for m in texts(at.markdown) if m.startswith("**Right if**"))
    at.checkbox(key="explorer.units").uncheck().run()
    scaled_rule = next(m for m in texts(at.markdown) if m.startswith("**Right if**"))
    assert raw_rule != scaled_rule
    # iris petal thresholds are positive in cm, the standardised ones are not all positive
    assert float(raw_rule.split()[-1].strip("`")) > 0


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_explorer_shows_weight_images_for_image_data(home):
    make_run(home, key="digits", depth=5)
    at = app_on("explorer")
    assert_clean(at)
    images = [s for s in chart_specs(at) if s["layout"].get("meta", {}).get("image_shape") == [8, 8]]
    assert images, "a digits decision node is drawn as an 8x8 weight image"
    z = np.asarray(images[0]["data"][0]["z"])
    assert z.shape == (8, 8) and np.count_nonzero(z) == 1


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_explorer_regression_run_and_run_switching(home):
    make_run(home, key="diabetes", depth=3, name="diabetes tree")
    second = make_run(home, key="iris", depth=2, name="iris tree")
    at = app_on("explorer")
    assert_clean(at)
    assert at.sidebar.selectbox(key="treeviz.run_id").value == second.run_id
    diabetes = next(r for r in RunStore(home).list() if r.name == "diabetes tree")
    at.sidebar.selectbox(key="treeviz.run_id").set_value(diabetes.run_id).run()
    assert_clean(at)
    assert any("diabetes tree" in c for c in texts(at.caption))
    at.selectbox(key="explorer.part").set_value("test").run()
    assert_clean(at)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_routing_page_flows_and_regression_message(home):
    record = make_run(home, key="wine", depth=3)
    at = app_on("routing")
    assert_clean(at)
    specs = chart_specs(at)
    sankey = next(s for s in specs if s["data"] and s["data"][0]["type"] == "sankey")
    prepared = RunStore(home).load_prepared(record.run_id)
    root_links = [v for v, src in zip(sankey["data"][0]["link"]["value"], sankey["data"][0]["link"]["source"])
                  if src == 0]
    assert sum(root_links) == prepared.train_idx.size
    at.selectbox(key="routing.part").set_value("test").run()
    at.checkbox(key="routing.normalize").check().run()
    assert_clean(at)
    make_run(home, key="diabetes", depth=2)
    at = app_on("routing")
    assert any("Class routing follows the classes" in i for i in texts(at.info))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_runs_page_rename_delete_download_and_import(home):
    record = make_run(home, key="iris", depth=2, name="first")
    at = app_on("runs")
    assert_clean(at)
    assert at.dataframe[0].value["name"].tolist() == ["first"]
    at.text_input(key=f"runs.name.{record.run_id}").set_value("renamed").run()
    at.button(key="runs.rename").click().run()
    assert_clean(at)
    assert RunStore(home).get(record.run_id).name == "renamed"
    archive = export_zip(RunStore(home), record.run_id)
    # delete needs the confirmation box
    at.checkbox(key=f"runs.confirm.{record.run_id}").check().run()
    at.button(key="runs.delete").click().run()
    assert_clean(at)
    assert RunStore(home).list() == []
    assert any("No runs yet" in i for i in texts(at.info))
    # import the exported archive back
    at.file_uploader(key="runs.import").set_value(("run.zip", archive, "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert_clean(at)
    assert any("Imported" in s for s in texts(at.success))
    assert [r.name for r in RunStore(home).list()] == ["renamed"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_runs_page_refuses_a_foreign_zip_with_a_sentence(home):
    make_run(home, key="iris", depth=2)
    at = app_on("runs")
    at.file_uploader(key="runs.import").set_value(("evil.zip", b"PK\x03\x04 not really", "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert not at.exception
    assert at.error and "Traceback" not in at.error[0].value


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_damaged_run_folder_is_reported_not_fatal(home):
    record = make_run(home, key="iris", depth=2)
    (RunStore(home).runs_dir / record.run_id / "run.json").write_text("{broken")
    make_run(home, key="wine", depth=2)
    at = app_on("runs")
    assert not at.exception
    assert any(record.run_id in w for w in texts(at.warning))
    assert len(at.dataframe[0].value) == 1
    json.dumps(chart_specs(at))


def damage_record(home, run_id, **fields):
    """Edit a stored run.json by hand (as someone with access to the folder could)."""
    path = RunStore(home).runs_dir / run_id / "run.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_run_with_a_huge_depth_is_skipped_with_a_note(home):
    bad = make_run(home, key="iris", depth=2)
    damage_record(home, bad.run_id, depth=10**30)  # once broke the table on every load
    make_run(home, key="wine", depth=2)
    at = app_on("runs")
    assert_clean(at)
    assert any(bad.run_id in w and "depth" in w for w in texts(at.warning))
    assert len(at.dataframe[0].value) == 1
    assert any("left out" in c for c in texts(at.sidebar.caption))
    assert any("everyone who can open it sees, exports and deletes every run" in c for c in texts(at.caption))
