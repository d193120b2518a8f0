"""One app contract, checked on every registered family.

As scikit-learn's ``parametrize_with_checks`` runs one set of checks over every estimator, these
tests are parametrised over :func:`models.registry.families`, so a new family is driven through
the app without a line here: the Train page trains it (its first preset, then the small settings
it declares in ``test_params``) and stores a run; the sidebar, the Tree explorer, Routing, Predict,
Runs and the view pages the family offers show that run; a run leaves as a zip and comes back
with identical outputs; a family with a λ path sweeps it on the λ path page. The test-only stump
(``tests/families/stump``, registered through ``TREEVIZ_FAMILIES`` by ``tests/conftest.py`` as a
package from outside this repository would be) is among them: if a new family needed an edit in
``treeviz/``, ``app_pages/`` or ``models/registry.py``, its checks would fail.

What only one family does (TAO's weight images, the latent trees' pruned nodes, Skinny Trees'
features, LapTAO's hidden labels, the embedding map, the bandit comparison) is tested in that
family's folder, ``tests/models/<family>/test_app.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from models.registry import families, families_offering, get_family
from models.schema import TASKS
from tests.app.conftest import (
    PAGE_TABLE,
    app_on,
    assert_clean,
    chart_specs,
    fill_form,
    metric_values,
    node_trace,
    open_page,
    run_page,
    stored_run,
    texts,
    train_on_page,
    wait_for_sweep,
)
from treeviz.services.data import load_dataset
from treeviz.services.store.archive import export_zip
from treeviz.services.store.runs import RunStore
from treeviz.ui.labels import run_headline, size_label

FAMILIES = list(families())
#: The families the λ path page offers on a classification data set (the app's default, iris).
LAMBDA_PATHS = [f.key for f in families_offering("lambda_path", "classification")]
#: The built-in data set a family is checked on, by the first task it declares.
SAMPLE = {"classification": "iris", "regression": "diabetes", "clustering": "blobs", "embedding": "iris"}
#: Pages showing the sidebar's run for every family.
RUN_PAGES = ("explorer", "routing", "predict", "runs")
#: Pages showing the sidebar's run when its family offers the page's view (and, for a view that is
#: also a task, a run of that task). The λ path and Bandit pages start fits of their own instead:
#: the λ path check below, and tests/models/dgt/test_app.py.
VIEW_PAGES = {p.key: p.view for p in PAGE_TABLE if p.view and p.key not in ("lambda_path", "bandit")}
#: What a view page says to a run of a family that does not offer its view (a CART run).
NOT_THIS_VIEW = {
    "features": "This run's family does not select features",
    "clustering": "This is a classification run",
    "embeddings": "This is a classification run",
    "semi_supervised": "This run's family does not learn from unlabelled points",
}


def task_of(key: str) -> str:
    return get_family(key).tasks[0]


def first_preset(key: str) -> str:
    """The family's first preset for its task (what a user starting out picks), or "defaults"."""
    return next(iter(get_family(key).presets_for(task_of(key))), "defaults")


def outputs(model, X) -> np.ndarray:
    """What the model gives for ``X``: class probabilities, else predictions, else coordinates."""
    for method in ("predict_proba", "predict", "transform"):
        if hasattr(model, method):
            return np.asarray(getattr(model, method)(X))
    raise AssertionError(f"{type(model).__name__} neither predicts nor transforms")


def numbers_recorded(history: list[dict]) -> set[str]:
    return {k for r in history for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def check_curves(at, key: str, history: list[dict]) -> None:
    """The training curves: one panel per declared panel that the history has numbers for."""
    curves = get_family(key).curves
    if curves is None:
        return
    recorded = numbers_recorded(history)
    expected = {p.title: [k for k in p.keys if k in recorded] for p in curves.panels}
    expected = {title: keys for title, keys in expected.items() if keys}
    figure = next(s for s in chart_specs(at) if "groups" in s["layout"].get("meta", {}))
    assert expected and figure["layout"]["meta"]["groups"] == expected


def check_explorer(at, record, store: RunStore) -> None:
    """The explorer draws the run's first tree whole and counts it, with the run's headline, its
    rules, and for an ensemble a tree picker and the forest summary."""
    open_page(at, "explorer")
    assert_clean(at)
    trees = store.load_model(record.run_id).to_trees()
    tree = trees[0]
    shown = metric_values(at)
    assert shown["Nodes"] == str(tree.n_nodes)
    assert shown["Nonzero weights"] == str(tree.n_nonzero_weights())
    assert run_headline(record) is None or run_headline(record).title in shown
    assert tree.max_depth <= 6  # so the diagram's default window holds every node
    spec = next(s for s in chart_specs(at) if any(t.get("name") == "nodes" for t in s["data"]))
    assert {int(c[0]) for c in node_trace(spec)["customdata"]} == set(range(tree.n_nodes))
    assert any(c.value.startswith("IF ") for c in at.code)  # the rules
    if len(trees) > 1:
        picker = at.selectbox(key=f"explorer.tree_index.{record.run_id}")
        assert picker.options == [f"tree {i}" for i in range(len(trees))]
        forest = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("n_trees") == len(trees))
        agreement = next(t for t in forest["data"] if t["type"] == "heatmap")
        assert np.array(agreement["z"]).shape == (len(trees), len(trees))
        picker.set_value(len(trees) - 1).run()
        assert_clean(at)
        assert metric_values(at)["Nonzero weights"] == str(trees[-1].n_nonzero_weights())


def test_a_family_from_outside_the_repository_is_checked_like_the_others():
    assert "stump" in FAMILIES and "stump" in LAMBDA_PATHS


def test_every_page_of_a_run_view_says_what_to_train_for_another_run():
    assert set(NOT_THIS_VIEW) == set(VIEW_PAGES)


@pytest.mark.slow  # one training and a dozen page runs per family (seconds each on a 2-core machine)
@pytest.mark.parametrize("key", FAMILIES)
def test_the_train_page_trains_the_family_and_every_page_shows_its_run(home, key):
    family, task = get_family(key), task_of(key)
    sample = SAMPLE[task]
    data_task = load_dataset(sample).task
    at = app_on("train", sample)
    # offered by its label, with its task when the data set has another; its presets after "defaults"
    label = family.label if task == data_task else f"{family.label} · {task}"
    assert label in at.selectbox(key="train.family").options
    preset = first_preset(key)
    record = train_on_page(at, home, key, task, preset, dict(family.test_params))
    assert at.selectbox(key=f"train.preset.{key}").options == ["defaults", *family.presets_for(task)]
    assert (record.family, record.task) == (key, task)
    assert record.estimator == family.estimator_class(task).__name__
    typed = {**family.defaults(task, None if preset == "defaults" else preset),
             **family.validate_params(family.test_params, task)}
    assert {name: record.params[name] for name in typed} == typed
    check_curves(at, key, RunStore(home).history(record.run_id))
    # the new run is the sidebar's, named with its headline
    at.run()
    runs = at.sidebar.selectbox(key="treeviz.run_id")
    assert runs.value == record.run_id
    headline = run_headline(record)
    assert headline is None or headline.text() in runs.format_func(record.run_id)
    for page in (*RUN_PAGES, *[p for p, view in VIEW_PAGES.items()
                               if family.offers(view) and (view not in TASKS or view == task)]):
        open_page(at, page)
        assert_clean(at)
        if page == "routing" and task != "classification":
            assert any("Class routing follows the classes" in i for i in texts(at.info))
        elif page != "predict":
            assert chart_specs(at), page
    check_explorer(at, record, RunStore(home))


@pytest.mark.slow  # a training and the Runs page's delete and import (seconds on a 2-core machine)
@pytest.mark.parametrize("key", FAMILIES)
def test_a_run_of_the_family_leaves_as_a_zip_and_comes_back_with_the_same_outputs(home, key):
    """Each family's run zip is accepted on import (a forest's family key is its own, "tao_forest": it
    used to be refused as "a TAOForestClassifier but its model is a TAOForestClassifier")."""
    task = task_of(key)
    record = stored_run(home, key, task, SAMPLE[task], dict(get_family(key).test_params))
    store = RunStore(home)
    X = store.load_prepared(record.run_id).X_test
    before = outputs(store.load_model(record.run_id), X)
    archive = export_zip(store, record.run_id)
    at = run_page(record, "runs")
    at.checkbox(key=f"runs.confirm.{record.run_id}").check().run()
    at.button(key="runs.delete").click().run()
    assert store.list() == []
    at.file_uploader(key="runs.import").set_value((f"{key}.zip", archive, "application/zip")).run()
    at.button(key="runs.import_go").click().run()
    assert_clean(at)
    assert any("Imported" in s for s in texts(at.success))
    (imported,) = store.list()
    assert (imported.family, imported.estimator, imported.params) == (key, record.estimator, record.params)
    np.testing.assert_array_equal(outputs(store.load_model(imported.run_id), X), before)


@pytest.mark.slow  # three fits of the family from the λ path page (seconds on a 2-core machine)
@pytest.mark.parametrize("key", LAMBDA_PATHS)
def test_the_lambda_path_page_sweeps_the_familys_lambda(home, key):
    family = get_family(key)
    path = family.lambda_path
    at = app_on("lambda_path")
    at.selectbox(key="pruning.family").set_value(key).run()
    assert_clean(at)
    # the family's own range and warm start
    assert at.number_input(key=f"pruning.low.{key}").value == path.low
    assert at.number_input(key=f"pruning.high.{key}").value == path.high
    assert at.checkbox(key=f"pruning.warm.{key}").value is path.warm_start
    at.slider(key=f"pruning.count.{key}").set_value(3).run()
    shared = {k: v for k, v in family.test_params.items() if k != path.param}
    fill_form(at, f"pruning.{key}", key, "classification", shared)
    at.button(key="pruning.start").click().run()
    wait_for_sweep(at, home, 3)
    assert_clean(at)
    runs = sorted(RunStore(home).list(), key=lambda r: r.sweep["value"])
    values = [r.sweep["value"] for r in runs]
    assert len(values) == 3 and values[0] == path.low and values[-1] == path.high and values == sorted(set(values))
    assert [r.sweep["param"] for r in runs] == [path.param] * 3
    assert [r.sweep["warm_start"] for r in runs[1:]] == [path.warm_start] * 2  # the first λ has none before it
    assert all(r.params[k] == v for r in runs for k, v in family.validate_params(shared).items())
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == path.param)
    assert figure["layout"]["meta"]["values"] == values
    # the largest λ: its sizes and headline as cards, and its tree one click from the explorer
    at.select_slider(key=f"pruning.lambda.{runs[0].sweep['id']}").set_value(path.high).run()
    assert_clean(at)
    cards = metric_values(at)
    assert all(size_label(size) in cards for size in path.sizes)
    assert run_headline(runs[-1]).title in cards
    at.button(key="pruning.open").click().run()
    assert_clean(at)
    assert at.sidebar.selectbox(key="treeviz.run_id").value == runs[-1].run_id
    assert texts(at.title) == ["Tree explorer"]


@pytest.mark.slow  # a CART run (a family offering no view) on a view page (a few seconds)
@pytest.mark.parametrize("page", list(NOT_THIS_VIEW))
def test_a_view_page_says_what_to_train_for_a_run_it_does_not_show(home, page):
    record = stored_run(home, "cart", "classification", "iris", {"max_depth": 2})
    at = run_page(record, page)
    assert any(NOT_THIS_VIEW[page] in i for i in texts(at.info))
    assert not chart_specs(at)
