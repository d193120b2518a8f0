"""The Runs page tells what happened: imports get a name no other run has, Rename and Delete
say that they happened and the sidebar's run chooser shows it at once, and a run's preparation
and parameters read as text ("—" where a value is missing, never "None")."""

import pytest
from sklearn.datasets import load_breast_cancer

from models.cart.estimators import CARTClassifier
from tests.app.conftest import assert_clean, new_app, open_page, texts
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.preprocess import PrepConfig, prepare
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.runs import RunStore
from treeviz.ui import state


@pytest.fixture(scope="module")
def prepared():
    raw = load_breast_cancer()
    ds = Dataset(name="bc", X=raw.data, y=raw.target, feature_names=tuple(raw.feature_names),
                 task="classification", class_names=tuple(raw.target_names))
    return prepare(ds, PrepConfig())


def saved_run(root, prepared, name="my tree"):
    est = CARTClassifier(max_depth=2).fit(prepared.X_train, prepared.labels("train"))
    return RunStore(root).save(est, prepared, name=name, metrics={"test_accuracy": 0.9})


def sidebar_names(at) -> list[str]:
    boxes = [b for b in at.sidebar.selectbox if b.key == state.RUN_ID]
    return list(boxes[0].options) if boxes else []  # AppTest gives the shown labels


@pytest.mark.slow  # an import rebuilds and checks the run's prepared data: seconds
def test_importing_the_same_zip_twice_gives_two_names(tmp_path, prepared):
    store = RunStore(tmp_path / "home")
    record = saved_run(tmp_path / "home", prepared)
    data = export_zip(store, record.run_id)
    names = [import_zip(store, data).name, import_zip(store, data).name]
    assert names == ["my tree (2)", "my tree (3)"]
    assert len({r.name for r in store.list()}) == 3


def test_rename_to_a_taken_name_keeps_names_unique(tmp_path, prepared):
    store = RunStore(tmp_path / "home")
    a = saved_run(tmp_path / "home", prepared, "a")
    saved_run(tmp_path / "home", prepared, "b")
    assert store.rename(a.run_id, "b").name == "b (2)"
    assert store.rename(a.run_id, "a").name == "a"
    assert store.rename(a.run_id, "a").name == "a"  # its own name is not taken by itself


@pytest.mark.slow  # several app reruns: seconds
def test_rename_and_delete_say_so_and_update_the_sidebar(home, prepared):
    record = saved_run(home, prepared)
    at = new_app()
    at.run()
    open_page(at, "runs")
    assert_clean(at)
    at.text_input(key=f"runs.name.{record.run_id}").set_value("renamed tree")
    at.button(key="runs.rename").click().run()
    assert_clean(at)
    assert any("Renamed 'my tree' to 'renamed tree'" in s for s in texts(at.success))
    assert any(n.startswith("renamed tree") for n in sidebar_names(at))
    at.checkbox(key=f"runs.confirm.{record.run_id}").check().run()
    at.button(key="runs.delete").click().run()
    assert_clean(at)
    assert any("Deleted 'renamed tree'" in s for s in texts(at.success))
    assert sidebar_names(at) == []  # the only run is gone from the chooser at once


def test_run_details_read_as_text(home, prepared):
    saved_run(home, prepared)
    at = new_app()
    at.run()
    open_page(at, "runs")
    assert_clean(at)
    markdown = " ".join(texts(at.markdown))
    assert "scaling: standard · test 20 % · validation 10 % · seed 0" in markdown
    assert "max_depth: 2" in markdown
    assert "{" not in markdown
    for frame in at.dataframe:
        assert "None" not in frame.value.astype(str).to_numpy().ravel().tolist()
