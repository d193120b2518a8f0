"""The run store neither follows nor writes through symbolic links below runs/ and datasets/: a run
or data set folder that is a link, or a link in a run folder, is left out with a sentence saying
so; deleting never removes a link's target; saving and importing never write where a link stands.
Each test checks that the outside target is unchanged afterwards."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import time
import zipfile
from pathlib import Path

import pytest

from models.ground.errors import TreevizError
from tests.treeviz.test_runs import save
from treeviz.services.store import atomic
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.record import new_run_id
from treeviz.services.store.runs import NAMING_LOCK


@pytest.fixture()
def outside(tmp_path):
    """A folder outside the store, with a file in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("not the store's")
    return folder


def snapshot(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) with a hash of its bytes: what must not change."""
    if not path.exists():
        return {}
    if path.is_file():
        return {path.name: hashlib.sha256(path.read_bytes()).hexdigest()}
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(path.rglob("*"))}


def test_a_run_folder_that_is_a_link_is_left_out_and_never_deleted_through(store, prepared, outside):
    _, kept = save(store, prepared)
    target = outside / "a run"
    shutil.copytree(store.runs_dir / kept.run_id, target)
    linked = new_run_id()
    (store.runs_dir / linked).symlink_to(target, target_is_directory=True)
    before = snapshot(outside)
    assert [r.run_id for r in store.list()] == [kept.run_id]
    assert len(store.problems) == 1 and linked in store.problems[0] and "symbolic link" in store.problems[0]
    for action in (store.get, store.load_model, store.delete):
        with pytest.raises(TreevizError, match="symbolic link"):
            action(linked)
    assert store.history(linked) == []
    assert (store.runs_dir / linked).is_symlink() and snapshot(outside) == before


@pytest.mark.parametrize("name", ["run.json", "config.json", "weights.safetensors"])
def test_a_run_file_that_is_a_link_is_not_read(store, prepared, outside, name):
    _, a = save(store, prepared)
    _, b = save(store, prepared)
    path = store.runs_dir / a.run_id / name
    moved = outside / name
    shutil.move(path, moved)
    path.symlink_to(moved)
    before = snapshot(outside)
    assert [r.run_id for r in store.list()] == [b.run_id]
    assert len(store.problems) == 1 and f"its {name} is a symbolic link" in store.problems[0]
    with pytest.raises(TreevizError, match="symbolic link"):
        store.get(a.run_id) if name == "run.json" else store.load_model(a.run_id)
    assert snapshot(outside) == before


def test_a_linked_history_is_neither_shown_nor_exported(store, prepared, outside):
    _, a = save(store, prepared)
    secret = outside / "secret.json"
    secret.write_text('[{"secret": 1}]')
    history = store.runs_dir / a.run_id / "history.json"
    history.unlink()
    history.symlink_to(secret)
    assert store.history(a.run_id) == []
    with zipfile.ZipFile(io.BytesIO(export_zip(store, a.run_id))) as zf:
        assert "history.json" not in zf.namelist()
        assert all(b"secret" not in zf.read(n) for n in zf.namelist())


def test_deleting_a_run_never_touches_what_its_links_point_to(store, prepared, outside):
    _, a = save(store, prepared)
    folder = store.runs_dir / a.run_id
    (folder / "to_a_folder").symlink_to(outside, target_is_directory=True)
    (folder / "to_a_file").symlink_to(outside / "keep.txt")
    before = snapshot(outside)
    store.delete(a.run_id)
    assert not folder.exists() and store.list() == []
    assert snapshot(outside) == before
    assert [p.name for p in store.runs_dir.iterdir()] == []  # no leftover either


def test_a_data_set_folder_that_is_a_link_is_not_read(store, prepared, outside):
    _, a = save(store, prepared)
    fp = a.dataset_fingerprint
    folder = store.datasets_dir / fp
    shutil.move(folder, outside / fp)
    folder.symlink_to(outside / fp, target_is_directory=True)
    before = snapshot(outside)
    with pytest.raises(TreevizError, match="symbolic link"):
        store.load_dataset(fp)
    with pytest.raises(TreevizError, match="symbolic link"):
        store.load_prepared(a.run_id)
    assert store.dataset_files(fp) is None
    assert [d["fingerprint"] for d in store.list_datasets()] == []
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", ["dangling", "folder"])
def test_saving_never_writes_through_a_linked_data_set_folder(store, prepared, outside, planted):
    fp = prepared.dataset.fingerprint
    store.datasets_dir.mkdir(parents=True)
    target = outside / "not yet there" if planted == "dangling" else outside
    (store.datasets_dir / fp).symlink_to(target, target_is_directory=True)
    before = snapshot(outside)
    _, a = save(store, prepared)
    folder = store.datasets_dir / fp
    assert folder.is_dir() and not folder.is_symlink()
    assert store.load_prepared(a.run_id).fingerprint == prepared.fingerprint
    assert snapshot(outside) == before and not (outside / "not yet there").exists()
    assert [p.name for p in store.datasets_dir.iterdir()] == [fp]  # the link went, not into the trash


@pytest.mark.parametrize("planted", ["dangling", "folder"])
def test_importing_never_writes_through_a_link_at_the_run_folder(store, prepared, outside, planted):
    _, a = save(store, prepared)
    data = export_zip(store, a.run_id)
    store.delete(a.run_id)
    target = outside / "not yet there" if planted == "dangling" else outside
    (store.runs_dir / a.run_id).symlink_to(target, target_is_directory=True)
    before = snapshot(outside)
    record = import_zip(store, data)
    assert record.run_id != a.run_id  # the id a link stands on is taken: a new one
    assert [r.run_id for r in store.list()] == [record.run_id]
    assert (store.runs_dir / a.run_id).is_symlink()
    assert snapshot(outside) == before and not (outside / "not yet there").exists()


def test_the_naming_lock_is_never_opened_through_a_link(store, prepared, outside):
    store.root.mkdir(parents=True)
    target = outside / "created through the lock"
    (store.root / NAMING_LOCK).symlink_to(target)
    _, a = save(store, prepared)  # a default name: chosen under the lock
    assert a.name.endswith("#1") and not target.exists()
    assert not (store.root / NAMING_LOCK).is_symlink()


def test_atomic_writes_never_go_through_a_link(tmp_path, outside):
    parent = tmp_path / "parent"
    parent.mkdir()
    before = snapshot(outside)
    (parent / "taken").symlink_to(outside / "new", target_is_directory=True)
    assert atomic.publish_folder({"a.txt": b"x"}, parent, "taken") is False
    assert not (outside / "new").exists()
    with pytest.raises(OSError):
        atomic.write_synced(parent / "taken", b"x")
    (parent / "file").symlink_to(outside / "keep.txt")
    atomic.replace_file(parent / "file", b"replaced")  # the link itself is replaced
    assert (parent / "file").read_bytes() == b"replaced" and not (parent / "file").is_symlink()
    (parent / "folder").symlink_to(outside, target_is_directory=True)
    atomic.discard_folder(parent / "folder", parent)
    assert sorted(p.name for p in parent.iterdir()) == ["file", "taken"]
    assert snapshot(outside) == before


def test_leftovers_that_are_links_are_removed_without_their_target(store, outside):
    store.runs_dir.mkdir(parents=True)
    link = store.runs_dir / ".trash-old-1234"
    link.symlink_to(outside, target_is_directory=True)
    past = time.time() - 10_000
    os.utime(link, (past, past), follow_symlinks=False)
    before = snapshot(outside)
    assert store.remove_leftovers() == 1
    assert not os.path.lexists(link) and snapshot(outside) == before
