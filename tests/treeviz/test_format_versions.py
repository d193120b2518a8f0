"""Format versions are checked in both directions: a model file (``config.json``), a run record
(``run.json``) or a stored data set (``dataset.json``) whose version is older than the oldest this
treeviz reads, newer than its own, or not a whole number is refused with a sentence saying which
versions this treeviz reads and what to do, by ``load_model``, ``treeviz predict``, ``treeviz
import`` and the run store alike."""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd
import pytest

from models import persist
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from models.persist import load_model, model_bytes, zip_bytes
from treeviz.cli import common
from treeviz.cli.main import main
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.data import dataset as dataset_module
from treeviz.services.data.dataset import Dataset
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.runs import RunStore

#: Versions no treeviz wrote or this one cannot read, and values that are no version at all.
BAD = [0, -1, 2, 99, True, False, 1.0, 1.5, "1", None, [1], {"v": 1}]
#: The same for model files, which this treeviz reads in versions 1 and 2 (2 carries preprocessing).
BAD_MODEL = [3 if v == 2 else v for v in BAD]
MODEL_READS = "reads model files of version 1 to 2"


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def with_json(files: dict[str, bytes], name: str, **changes) -> dict[str, bytes]:
    """``files`` with the JSON member ``name`` changed (a value of ``...`` removes the key)."""
    data = json.loads(files[name])
    for key, value in changes.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    return {**files, name: json.dumps(data).encode()}


@pytest.fixture(scope="module")
def run_zip(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("source"))
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, prepared, store=store)
    return store.load_model(record.run_id), members(export_zip(store, record.run_id))


def test_this_treeviz_reads_version_one_of_each_format():
    assert (persist.MIN_VERSION, persist.VERSION) == (1, 2)
    assert (dataset_module.DATASET_MIN_VERSION, dataset_module.DATASET_VERSION) == (1, 1)


@pytest.mark.parametrize("version", BAD_MODEL, ids=repr)
def test_load_model_refuses_a_version_it_does_not_read(run_zip, version):
    model, _ = run_zip
    files = with_json(model_bytes(model), "config.json", version=version)
    with pytest.raises(TreevizError, match=MODEL_READS) as info:
        load_model(zip_bytes(files))
    message = str(info.value)
    assert repr(version) in message and "\n" not in message
    what_to_do = "upgrade treeviz" if isinstance(version, int) and not isinstance(version, bool) and version > 2 \
        else "export the model again"
    assert what_to_do in message


def test_load_model_refuses_a_model_file_without_a_version(run_zip):
    model, _ = run_zip
    with pytest.raises(TreevizError, match="has no version"):
        load_model(zip_bytes(with_json(model_bytes(model), "config.json", version=...)))
    assert load_model(zip_bytes(model_bytes(model))).get_params() == model.get_params()  # version 1 loads


@pytest.mark.parametrize("version", [0, 3, "1"], ids=repr)
def test_predict_refuses_a_model_file_of_another_version(run_zip, home, capsys, tmp_path, version):
    model, files = run_zip
    rows = tmp_path / "rows.csv"
    pd.DataFrame(load_dataset("iris").X[:3], columns=model.feature_names_).to_csv(rows, index=False)
    plain = tmp_path / "model.zip"
    plain.write_bytes(zip_bytes(with_json(model_bytes(model), "config.json", version=version)))
    whole = tmp_path / "run.zip"
    whole.write_bytes(zip_bytes(with_json(files, "config.json", version=version)))
    for path in (plain, whole):
        code = main(["predict", str(path), str(rows)])
        out, err = capsys.readouterr()
        assert code == common.USER_ERROR, out
        assert MODEL_READS in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize(("member", "version", "words"), [
    ("config.json", 0, MODEL_READS),
    ("config.json", 3, MODEL_READS),
    ("config.json", True, MODEL_READS),
    ("run.json", 0, "version"),
    ("run.json", 2, "newer treeviz"),
    ("dataset/dataset.json", 0, "reads data sets of version 1"),
    ("dataset/dataset.json", 2, "reads data sets of version 1"),
    ("dataset/dataset.json", "1", "reads data sets of version 1"),
    ("dataset/dataset.json", ..., "has no version"),
])
def test_import_refuses_a_run_zip_with_a_file_of_another_version(run_zip, home, capsys, tmp_path, member, version,
                                                                words):
    _, files = run_zip
    assert member in files
    path = tmp_path / "run.zip"
    path.write_bytes(zip_bytes(with_json(files, member, version=version)))
    code = main(["import", str(path)])
    _, err = capsys.readouterr()
    assert code == common.USER_ERROR, err
    assert words in err and "Traceback" not in err and err.count("\n") == 1
    target = RunStore(tmp_path / "target")
    with pytest.raises(TreevizError, match=words):
        import_zip(target, zip_bytes(with_json(files, member, version=version)))
    assert target.list() == []


def test_the_unchanged_zip_imports(run_zip, tmp_path):
    _, files = run_zip
    record = import_zip(RunStore(tmp_path / "target"), zip_bytes(files))
    assert record.family == "cart"


@pytest.mark.parametrize("version", [0, 2, 1.0, None], ids=repr)
def test_a_stored_data_set_of_another_version_is_refused(version):
    files = load_dataset("iris").to_files()
    info = json.loads(files["dataset.json"])
    info["version"] = version
    with pytest.raises(TreevizError, match="reads data sets of version 1"):
        Dataset.from_files(json.dumps(info).encode(), files["arrays.safetensors"])
    info["version"], info["format"] = 1, "something.else"
    with pytest.raises(TreevizError, match="not a treeviz data set"):
        Dataset.from_files(json.dumps(info).encode(), files["arrays.safetensors"])
    assert Dataset.from_files(files["dataset.json"], files["arrays.safetensors"]).name == "iris"


@pytest.mark.parametrize(("version", "words"), [
    (0, "an older format"), (2, "newer treeviz"), ("1", "not a whole number"), (1.0, "not a whole number"),
    (..., "has no version"),
], ids=repr)
def test_a_tree_description_of_another_version_is_refused(run_zip, version, words):
    model, _ = run_zip
    tree = model.to_tree()
    data = json.loads(tree.to_json())
    if version is ...:
        data.pop("version")
    else:
        data["version"] = version
    with pytest.raises(TreevizError, match=words) as info:
        Tree.from_dict(data)
    assert "reads tree descriptions of version 1" in str(info.value)
    assert Tree.from_json(tree.to_json()).equals(tree)
