"""The run store: round trips, atomic writes, rename/delete, zip export and guarded import."""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import textwrap
import time
import zipfile
from datetime import UTC
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from models.persist import load_model, zip_bytes
from treeviz.services.data.dataset import Dataset
from treeviz.services.data.preprocess import PrepConfig, prepare
from treeviz.services.store import archive as run_archive
from treeviz.services.store import record as record_mod
from treeviz.services.store import runs as runs_mod
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore, default_root

REPO = Path(__file__).resolve().parents[2]


def breast_cancer() -> Dataset:
    b = load_breast_cancer()
    return Dataset(name="breast_cancer", X=b.data, y=b.target, feature_names=tuple(b.feature_names),
                   task="classification", class_names=tuple(b.target_names), source="sklearn",
                   meta={"origin": "test"})


def diabetes() -> Dataset:
    d = load_diabetes()
    return Dataset(name="diabetes", X=d.data, y=d.target, feature_names=tuple(d.feature_names),
                   task="regression", target_name="progression")


def fit_cart(prepared, **params):
    est = CARTClassifier(**params)
    return est.fit(prepared.X_train, prepared.labels("train"),
                   eval_set=(prepared.X_val, prepared.labels("val")))


def save(store, prepared, **kw):
    est = fit_cart(prepared, max_depth=kw.pop("max_depth", 3))
    metrics = {"test_accuracy": est.score(prepared.X_test, prepared.labels("test"))}
    return est, store.save(est, prepared, family="cart", task="classification",
                           params=est.get_params(), metrics=metrics, duration_s=0.5, **kw)


def test_default_root_honours_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TREEVIZ_HOME", str(tmp_path / "tv"))
    assert default_root() == tmp_path / "tv"
    monkeypatch.delenv("TREEVIZ_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_root() == tmp_path / "xdg" / "treeviz"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_root() == tmp_path / "home" / ".local" / "share" / "treeviz"
    monkeypatch.setenv("TREEVIZ_HOME", str(tmp_path / "env"))
    assert RunStore().root == tmp_path / "env"


def test_empty_store_lists_nothing(store):
    assert store.list() == [] and store.problems == []
    assert not store.root.exists()  # nothing is written until a run is saved


def test_round_trip_through_a_new_store(store, prepared):
    est, record = save(store, prepared)
    other = RunStore(store.root)  # another tab / process
    listed = other.list()
    assert [r.run_id for r in listed] == [record.run_id]
    got = other.get(record.run_id)
    assert got == record
    assert got.name == "CART on breast_cancer #1"
    assert (got.family, got.estimator, got.task, got.status) == ("cart", "CARTClassifier",
                                                                 "classification", "finished")
    assert got.dataset["n_samples"] == 569 and got.dataset_fingerprint == prepared.dataset.fingerprint
    assert got.prep == prepared.config.to_dict() and got.prepared_fingerprint == prepared.fingerprint
    tree = est.to_tree()
    assert (got.n_nodes, got.n_leaves, got.depth) == (tree.n_nodes, tree.n_leaves, tree.max_depth)
    assert got.created_at.utcoffset().total_seconds() == 0
    loaded = other.load_model(record.run_id)
    assert np.array_equal(loaded.predict_proba(prepared.X_test), est.predict_proba(prepared.X_test))
    assert np.array_equal(loaded.predict(prepared.X_test), est.predict(prepared.X_test))
    assert other.history(record.run_id) == est.history_
    on_disk = json.loads((store.runs_dir / record.run_id / "run.json").read_text())
    assert RunRecord.from_dict(on_disk) == record


def test_load_prepared_reproduces_the_arrays(store, prepared):
    _, record = save(store, prepared)
    again = RunStore(store.root).load_prepared(record.run_id)
    for part in ("train", "val", "test"):
        assert np.array_equal(again.X(part), prepared.X(part))
        assert np.array_equal(again.labels(part), prepared.labels(part))
    assert again.fingerprint == prepared.fingerprint
    assert again.dataset.name == "breast_cancer" and again.dataset.meta == {"origin": "test"}


def test_regression_dataset_is_stored_once(store):
    prep = prepare(diabetes(), PrepConfig(scaling="quantile"))
    from models.cart.estimators import CARTRegressor

    est = CARTRegressor(max_depth=2).fit(prep.X_train, prep.labels("train"))
    a = store.save(est, prep, metrics={"test_rmse": np.float64(3.5), "bad": float("nan")})
    b = store.save(est, prep)
    assert a.run_id != b.run_id and a.family == "cart" and a.task == "regression"
    assert a.metrics == {"test_rmse": 3.5, "bad": None}
    assert [p.name for p in store.datasets_dir.iterdir()] == [prep.dataset.fingerprint]
    assert np.array_equal(store.load_prepared(b.run_id).X_test, prep.X_test)
    assert b.name.endswith("#2")


def test_load_prepared_sentences_for_missing_or_changed_data(store, prepared):
    from safetensors.numpy import save as st_save

    _, record = save(store, prepared)
    arrays = store.datasets_dir / record.dataset_fingerprint / "arrays.safetensors"
    X = prepared.dataset.X.copy()
    X[0, 0] += 1.0
    arrays.write_bytes(st_save({"X": X, "y": prepared.dataset.y}))
    with pytest.raises(TreevizError, match="changed after the run was saved"):
        store.load_prepared(record.run_id)
    arrays.unlink()
    with pytest.raises(TreevizError, match="not in the run store"):
        store.load_prepared(record.run_id)


def test_saves_never_overwrite_and_both_stores_see_them(store, prepared):
    other = RunStore(store.root)
    _, a = save(store, prepared)
    _, b = save(other, prepared, name="mine")
    assert a.run_id != b.run_id
    assert {r.run_id for r in store.list()} == {r.run_id for r in other.list()} == {a.run_id, b.run_id}
    assert store.list()[0].run_id == b.run_id  # newest first
    assert store.get(a.run_id) == a


def test_a_failed_save_leaves_no_run(store, prepared, monkeypatch):
    save(store, prepared)

    def crash(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(runs_mod.os, "rename", crash)
    with pytest.raises(OSError):
        save(store, prepared)
    monkeypatch.undo()
    assert len(store.list()) == 1 and store.problems == []
    assert [p.name for p in store.runs_dir.iterdir() if p.name.startswith(".")] == []


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_crash_mid_save_is_ignored_and_reported(store, prepared, monkeypatch):
    """Kill a real process inside the rename: its temporary folder must not become a run."""
    _, kept = save(store, prepared)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO)!r})
        import numpy as np
        from sklearn.datasets import load_iris
        from models.cart.estimators import CARTClassifier
        from treeviz.services.store import runs
        from treeviz.services.data.dataset import Dataset
        from treeviz.services.data.preprocess import prepare
        iris = load_iris()
        ds = Dataset(name="iris", X=iris.data, y=iris.target, feature_names=tuple(iris.feature_names),
                     task="classification", class_names=tuple(iris.target_names))
        prep = prepare(ds)
        est = CARTClassifier(max_depth=2).fit(prep.X_train, prep.labels("train"))
        store = runs.RunStore({str(store.root)!r})
        store.store_dataset(ds)
        runs.os.rename = lambda a, b: os._exit(3)   # power cut between write and rename
        store.save(est, prep)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 3, proc.stderr
    leftovers = [p for p in store.runs_dir.iterdir() if p.name.startswith(".tmp-")]
    assert len(leftovers) == 1 and (leftovers[0] / "config.json").is_file()
    assert [r.run_id for r in store.list()] == [kept.run_id]
    assert store.problems == []  # fresh: could be another process still writing
    monkeypatch.setattr(runs_mod, "STALE_TMP_S", -1.0)
    assert [r.run_id for r in store.list()] == [kept.run_id]
    assert len(store.problems) == 1 and "did not finish" in store.problems[0]
    assert store.remove_leftovers(older_than_s=-1.0) == 1
    assert store.list() and store.problems == []


def test_half_written_and_corrupt_run_folders_are_skipped(store, prepared):
    _, good = save(store, prepared)
    _, broken = save(store, prepared)
    (store.runs_dir / broken.run_id / "weights.safetensors").unlink()
    _, corrupt = save(store, prepared)
    (store.runs_dir / corrupt.run_id / "run.json").write_text("{not json")
    (store.runs_dir / "20990101-000000-000000-abcdef").mkdir()
    (store.runs_dir / "notes").mkdir()
    (store.runs_dir / "README.txt").write_text("stray file")
    assert [r.run_id for r in store.list()] == [good.run_id]
    text = " ".join(store.problems)
    assert len(store.problems) == 4
    assert "weights.safetensors" in text and "not readable JSON" in text and "'notes'" in text
    with pytest.raises(TreevizError, match="cannot be opened"):
        store.get(broken.run_id)


def test_rename_and_delete(store, prepared):
    _, a = save(store, prepared)
    _, b = save(store, prepared)
    renamed = store.rename(a.run_id, "  best   tree ")
    assert renamed.name == "best tree" and RunStore(store.root).get(a.run_id).name == "best tree"
    with pytest.raises(TreevizError, match="empty"):
        store.rename(a.run_id, "   ")
    store.delete(a.run_id)
    assert [r.run_id for r in store.list()] == [b.run_id]
    with pytest.raises(TreevizError, match="no run"):
        store.get(a.run_id)
    with pytest.raises(TreevizError):
        store.delete(a.run_id)
    assert store.load_model(b.run_id) is not None  # the shared data set and other runs survive
    assert store.load_prepared(b.run_id).fingerprint == prepared.fingerprint


@pytest.mark.parametrize("bad", ["../etc", "..", "", "a/b", None])
def test_bad_run_ids_are_refused(store, bad):
    with pytest.raises(TreevizError, match="not a run id"):
        store.get(bad)


def test_export_import_round_trip(store, prepared, tmp_path):
    est, record = save(store, prepared)
    data = export_zip(store, record.run_id)
    assert data == export_zip(store, record.run_id)  # deterministic bytes
    assert np.array_equal(load_model(data).predict(prepared.X_test), est.predict(prepared.X_test))
    fresh = RunStore(tmp_path / "elsewhere")
    imported = import_zip(fresh, data)
    assert imported == record
    assert np.array_equal(fresh.load_model(record.run_id).predict_proba(prepared.X_test),
                          est.predict_proba(prepared.X_test))
    assert np.array_equal(fresh.load_prepared(record.run_id).X_val, prepared.X_val)
    assert fresh.history(record.run_id) == est.history_
    again = import_zip(store, data)  # same store: a copy under a new id, the original untouched
    assert again.run_id != record.run_id and store.get(record.run_id) == record
    assert len(store.list()) == 2
    no_data = RunStore(tmp_path / "nodata")
    import_zip(no_data, export_zip(store, record.run_id, include_dataset=False))
    with pytest.raises(TreevizError, match="not in the run store"):
        no_data.load_prepared(record.run_id)


def members_of(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def test_import_refuses_unsafe_zips(store, prepared, monkeypatch, tmp_path):
    est, record = save(store, prepared)
    good = members_of(export_zip(store, record.run_id))
    target = RunStore(tmp_path / "target")
    pickled = pickle.dumps(est)
    cases = {
        "pickle": ({"run.json": good["run.json"], "model.pkl": pickled}, "pickle"),
        "traversal": ({**good, "../../evil.sh": b"rm -rf ~"}, "outside the archive"),
        "absolute": ({**good, "/etc/passwd": b"x"}, "outside the archive"),
        "not a run": ({"config.json": good["config.json"],
                       "weights.safetensors": good["weights.safetensors"]}, "without a run record"),
        "lacks": ({"run.json": good["run.json"]}, "lacks config.json"),
        "pickled weights": ({**good, "weights.safetensors": pickled}, "damaged"),
        "wrong class": ({**good, "config.json": good["config.json"].replace(
            b'"CARTClassifier"', b'"CARTRegressor"')}, None),
        "bad dataset": ({**good, "dataset/arrays.safetensors": good["weights.safetensors"]}, None),
    }
    for label, (members, pattern) in cases.items():
        with pytest.raises(TreevizError, match=pattern) as info:
            import_zip(target, zip_bytes(members))
        assert str(info.value).endswith("."), label
    with pytest.raises(TreevizError, match="not a zip"):
        import_zip(target, b"\x80\x04 definitely a pickle")
    monkeypatch.setattr(run_archive, "MAX_IMPORT_BYTES", 1024 * 1024)
    with pytest.raises(TreevizError, match="too large"):
        import_zip(target, zip_bytes({**good, "history.json": b" " * (2 * 1024 * 1024)}))
    assert target.list() == [] and not target.runs_dir.exists()


def test_import_accepts_a_zipped_folder(store, prepared, tmp_path):
    _, record = save(store, prepared)
    good = members_of(export_zip(store, record.run_id))
    wrapped = zip_bytes({f"my run/{n}": d for n, d in good.items()})
    assert import_zip(RunStore(tmp_path / "t"), wrapped).run_id == record.run_id


def test_record_from_dict_rejects_tampering(store, prepared):
    _, record = save(store, prepared)
    base = record.to_dict()
    for change in ({"dataset_fingerprint": "../../x"}, {"run_id": "../x"}, {"status": "odd"},
                   {"format": "other"}, {"metrics": []}, {"version": 99}):
        with pytest.raises(TreevizError):
            RunRecord.from_dict({**base, **change})
    short = dict(base)
    del short["params"]
    with pytest.raises(TreevizError, match="params"):
        RunRecord.from_dict(short)


def test_run_ids_sort_by_time():
    from datetime import datetime, timedelta

    t = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    ids = [record_mod.new_run_id(t) for _ in range(3)]
    later = record_mod.new_run_id(t + timedelta(microseconds=1))
    assert ids[0].startswith("20260102-030405-678901-")
    assert all(record_mod.RUN_ID_RE.fullmatch(i) for i in [*ids, later])
    assert len(set(ids)) == 3 and max(ids) < later
    assert not record_mod.RUN_ID_RE.fullmatch(ids[0] + "\n")


# ---------------------------------------------------------------------- crafted imports (issue 19)
def crafted(good: dict[str, bytes], *, record=None, drop=(), members=None) -> bytes:
    """A run zip from ``good``'s members with run.json fields replaced (``record``), fields left out
    (``drop``) and members replaced (``members``)."""
    run = json.loads(good["run.json"])
    run.update(record or {})
    for key in drop:
        run.pop(key)
    out = {**good, "run.json": json.dumps(run).encode()}
    out.update(members or {})
    return zip_bytes(out)


@pytest.fixture()
def good_zip(store, prepared):
    _, record = save(store, prepared)
    return members_of(export_zip(store, record.run_id))


@pytest.fixture()
def target(tmp_path):
    return RunStore(tmp_path / "target")


def refused(target, data, pattern):
    with pytest.raises(TreevizError, match=pattern) as info:
        import_zip(target, data)
    assert str(info.value).endswith(".") and "\n" not in str(info.value)
    assert target.list() == []


def test_import_refuses_a_huge_depth(good_zip, target):
    refused(target, crafted(good_zip, record={"depth": 10**30}), "depth")
    refused(target, crafted(good_zip, record={"n_nodes": -3}), "n nodes")


def test_import_refuses_text_metrics(good_zip, target):
    refused(target, crafted(good_zip, record={"metrics": {"test_accuracy": "0.93, trust me"}}), "test_accuracy")
    refused(target, crafted(good_zip, record={"metrics": {"test_accuracy": float("nan")}}), "finite")


def test_import_refuses_nan_split_weights(good_zip, target):
    from safetensors.numpy import load as st_load
    from safetensors.numpy import save as st_save

    arrays = st_load(good_zip["weights.safetensors"])
    arrays["weight"] = arrays["weight"].copy()
    arrays["weight"][0] = np.nan
    refused(target, crafted(good_zip, members={"weights.safetensors": st_save(arrays)}), "not all finite")


def test_import_refuses_a_model_beside_another_data_set(good_zip, target, prepared):
    other = breast_cancer()
    other = Dataset(name=other.name, X=other.X * 2.0, y=other.y, feature_names=other.feature_names,
                    task=other.task, class_names=other.class_names)  # same shape, other numbers
    files = other.to_files()
    swapped = {"dataset_fingerprint": other.fingerprint,
               "prepared_fingerprint": prepare(other, prepared.config).fingerprint,
               "dataset": {**json.loads(good_zip["run.json"])["dataset"], "fingerprint": other.fingerprint}}
    refused(target, crafted(good_zip, record=swapped, members={"dataset/dataset.json": files["dataset.json"],
                                     "dataset/arrays.safetensors": files["arrays.safetensors"]}), "other data")
    iris = load_iris_dataset()
    files = iris.to_files()
    run = json.loads(good_zip["run.json"])
    swapped = {"dataset_fingerprint": iris.fingerprint, "dataset": {"name": "iris"},
               "prepared_fingerprint": prepare(iris, prepared.config).fingerprint}
    config = json.loads(good_zip["config.json"])
    config["context"] = {}  # a model file saved without its data's fingerprints
    assert run["dataset"]["n_features"] == 30
    refused(target, crafted(good_zip, record=swapped, members={
        "config.json": json.dumps(config).encode(), "dataset/dataset.json": files["dataset.json"],
        "dataset/arrays.safetensors": files["arrays.safetensors"]}), "30 features but its data set has 4")


def load_iris_dataset() -> Dataset:
    from sklearn.datasets import load_iris

    i = load_iris()
    return Dataset(name="iris", X=i.data, y=i.target, feature_names=tuple(i.feature_names),
                   task="classification", class_names=tuple(i.target_names))


def test_import_refuses_a_bad_preparation(good_zip, target):
    prep = json.loads(good_zip["run.json"])["prep"]
    refused(target, crafted(good_zip, record={"prep": {**prep, "test_size": 0.6, "val_size": 0.5}}), "prep")
    refused(target, crafted(good_zip, record={"prep": {**prep, "test_size": "a lot"}}), "prep")
    refused(target, crafted(good_zip, record={"prep": {**prep, "seed": prep["seed"] + 1}}), "preparation does not")


def test_import_refuses_names_with_escape_codes_or_too_long(good_zip, target):
    refused(target, crafted(good_zip, record={"name": "\x1b]0;owned\x07\x1b[2J"}), "control character")
    refused(target, crafted(good_zip, record={"name": "x" * 5_000_000}), "run.json")
    refused(target, crafted(good_zip, record={"notes": ["fine", "\x1b[31mred"]}), "control character")
    refused(target, crafted(good_zip, record={"dataset": {"name": "\u202eevil"}}), "control character")


def test_import_refuses_an_oversized_history(good_zip, target):
    bomb = b"[" + b" " * (40 * 1024**2) + b"]"  # 40 MiB that deflate to about 40 KiB
    refused(target, crafted(good_zip, members={"history.json": bomb}), "history.json unpacks to")


def test_import_refuses_duplicate_members(good_zip, target):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, pytest.warns(UserWarning, match="Duplicate"):
        for name, data in good_zip.items():
            zf.writestr(name, data)
        zf.writestr("run.json", good_zip["run.json"].replace(b'"finished"', b'"cancelled"'))
    refused(target, buf.getvalue(), "twice")


def test_import_refuses_parameters_that_differ_from_the_model(good_zip, target):
    params = json.loads(good_zip["run.json"])["params"]
    refused(target, crafted(good_zip, record={"params": {**params, "max_depth": 12}}), "max_depth")
    refused(target, crafted(good_zip, record={"n_leaves": 1}), "tree size")


def patched(data: bytes, member: str, offsets: dict[bytes, int], value: bytes) -> bytes:
    """``data`` with ``value`` written at ``offsets[signature]`` into every header (local and
    central) of ``member``."""
    out = bytearray(data)
    for signature, offset in offsets.items():
        at = 0
        while (at := out.find(signature, at)) >= 0:
            name_at = at + (30 if signature == b"PK\x03\x04" else 46)
            if out[name_at:name_at + len(member)] == member.encode():
                out[at + offset:at + offset + len(value)] = value
            at += 4
    return bytes(out)


LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"


@pytest.mark.parametrize(("what", "offsets", "value", "pattern"), [
    ("encrypted", {LOCAL: 6, CENTRAL: 8}, b"\x01\x00", "encrypted"),
    ("unknown compression", {LOCAL: 8, CENTRAL: 10}, b"\x63\x00", "compression"),
    ("version needed 7.0", {LOCAL: 4, CENTRAL: 6}, b"\x46\x00", "damaged"),
])
def test_import_refuses_odd_zip_headers(good_zip, target, what, offsets, value, pattern):
    refused(target, patched(zip_bytes(good_zip), "run.json", offsets, value), pattern)


def test_import_refuses_damaged_deflate_data(good_zip, target):
    data = bytearray(zip_bytes(good_zip))
    at = data.find(b"PK\x03\x04")  # the first member, run.json: break its compressed bytes
    start = at + 30 + int.from_bytes(data[at + 26:at + 28], "little") + int.from_bytes(data[at + 28:at + 30], "little")
    data[start:start + 16] = b"\xff" * 16
    refused(target, bytes(data), "damaged")


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_two_processes_saving_at_once_get_different_default_names(store, prepared, monkeypatch):
    """Each save lists the runs, then publishes; both must not pick '#1'."""
    import threading

    real, gate = runs_mod.publish_folder, threading.Barrier(2, timeout=30)
    monkeypatch.setattr(runs_mod, "publish_folder", lambda *a: (time.sleep(0.3), real(*a))[1])
    est = fit_cart(prepared, max_depth=2)
    names = []

    def one():
        other = RunStore(store.root)  # its own store and lock handle, as another process has
        gate.wait()
        names.append(other.save(est, prepared, family="cart").name)

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(names) == ["CART on breast_cancer #1", "CART on breast_cancer #2"]
