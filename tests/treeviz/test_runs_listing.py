"""The run store's listing: a run deleted while the store lists is left out quietly, and records are
parsed once and kept by the identity of their run.json (inode, mtime, size), so a listing with
nothing changed parses nothing while every change made by another store (another process) shows at
once: a rename (a new run.json through os.replace), a delete, a new run, a file rewritten in place."""

from __future__ import annotations

import os
import pickle
import shutil
import time
from pathlib import Path

from models import registry
from tests.treeviz.test_runs import save
from treeviz.services.store import runs as runs_mod
from treeviz.services.store.runs import RunStore
from treeviz.ui import run_tables as run_tables_mod
from treeviz.ui.run_tables import run_rows


class Scanned(list):
    """Entries already read from a folder, usable as ``os.scandir``'s result (also in ``with``)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def delete_after_scandir(monkeypatch, store: RunStore, run_id: str) -> None:
    """Make the next scan of the store's runs folder return its entries, then have another store
    (another process) delete ``run_id`` before the listing reads it."""
    real = os.scandir

    def scandir(path=".", *args):
        if isinstance(path, (str, os.PathLike)) and Path(path) == store.runs_dir:
            with real(path) as scan:
                entries = Scanned(scan)
            monkeypatch.setattr(runs_mod.os, "scandir", real)
            RunStore(store.root).delete(run_id)
            return entries
        return real(path, *args)

    monkeypatch.setattr(runs_mod.os, "scandir", scandir)


def test_a_run_deleted_while_the_store_lists_is_left_out_quietly(store, prepared, monkeypatch):
    _, a = save(store, prepared)
    _, b = save(store, prepared)
    delete_after_scandir(monkeypatch, store, a.run_id)
    assert [r.run_id for r in store.list()] == [b.run_id]
    assert store.problems == []


def test_a_run_deleted_while_a_store_that_knows_it_lists_is_left_out_quietly(store, prepared, monkeypatch):
    _, a = save(store, prepared)
    _, b = save(store, prepared)
    assert len(store.list()) == 2  # the store now keeps both records
    delete_after_scandir(monkeypatch, store, b.run_id)
    assert [r.run_id for r in store.list()] == [a.run_id]
    assert store.problems == []


def test_a_second_listing_parses_no_run_json(store, prepared, parsed):
    saved = [save(store, prepared)[1] for _ in range(4)]
    reader = RunStore(store.root)  # the saves listed through ``store`` (default names)
    parsed.clear()
    first = reader.list()
    assert sorted(parsed) == sorted(r.run_id for r in saved)
    parsed.clear()
    assert reader.list() == first
    assert reader.get(saved[0].run_id) == saved[0]
    assert parsed == []


def test_the_listing_sees_what_another_store_changes(store, prepared, parsed):
    other = RunStore(store.root)  # another process on the same folder
    _, a = save(store, prepared)
    _, b = save(store, prepared)
    _, c = save(store, prepared)
    store.list()
    parsed.clear()
    other.rename(a.run_id, "renamed elsewhere")  # a new run.json through os.replace: a new inode
    other.delete(b.run_id)
    _, d = save(other, prepared, name="new elsewhere")
    parsed.clear()
    listed = {r.run_id: r.name for r in store.list()}
    assert listed == {a.run_id: "renamed elsewhere", c.run_id: c.name, d.run_id: "new elsewhere"}
    assert sorted(parsed) == sorted([a.run_id, d.run_id])  # only what changed was read
    assert store.get(a.run_id).name == "renamed elsewhere"


def test_a_run_json_rewritten_in_place_is_read_again(store, prepared):
    _, a = save(store, prepared)
    assert store.list()[0].name == a.name
    path = store.runs_dir / a.run_id / "run.json"
    data = path.read_text().replace(f'"name": "{a.name}"', '"name": "edited by hand, in place"')
    path.write_text(data)  # the same inode: its size and modification time tell
    assert [r.name for r in store.list()] == ["edited by hand, in place"]
    path.write_text("{broken")
    assert store.list() == [] and "not readable JSON" in store.problems[0]


def test_a_run_that_loses_its_weights_is_reported_at_once(store, prepared):
    _, a = save(store, prepared)
    assert len(store.list()) == 1
    (store.runs_dir / a.run_id / "weights.safetensors").unlink()
    assert store.list() == [] and "weights.safetensors" in store.problems[0]


def age(folder: Path, seconds: float) -> None:
    """Date the run folder ``folder`` ``seconds`` back (its files stay as they are)."""
    when = time.time() - seconds
    os.utime(folder, (when, when))


def test_an_old_run_folder_that_changes_is_checked_again(store, prepared, parsed, tmp_path):
    runs = [save(store, prepared)[1] for _ in range(4)]
    for r in runs:
        age(store.runs_dir / r.run_id, 3600)  # older than RACY_S: an unchanged folder is trusted
    reader = RunStore(store.root)
    assert len(reader.list()) == 4
    parsed.clear()
    assert len(reader.list()) == 4 and parsed == []
    gone, edited, linked = (store.runs_dir / r.run_id for r in runs[:3])
    (gone / "weights.safetensors").unlink()  # the folder's modification time changes
    text = (edited / "run.json").read_text().replace(f'"name": "{runs[1].name}"', '"name": "edited in place"')
    (edited / "run.json").write_text(text)  # in place: only run.json's own identity changes
    (tmp_path / "elsewhere").mkdir()
    shutil.move(linked / "config.json", tmp_path / "elsewhere" / "config.json")
    (linked / "config.json").symlink_to(tmp_path / "elsewhere" / "config.json")
    RunStore(store.root).rename(runs[3].run_id, "renamed")  # another process: a new run.json
    parsed.clear()
    listed = {r.run_id: r.name for r in reader.list()}
    assert listed == {runs[1].run_id: "edited in place", runs[3].run_id: "renamed"}
    assert sorted(parsed) == sorted([runs[1].run_id, runs[3].run_id])
    problems = " ".join(reader.problems)
    assert "lacks weights.safetensors" in problems and "config.json is a symbolic link" in problems


def test_a_change_in_the_same_clock_tick_as_the_listing_is_not_missed(store, prepared, tmp_path):
    _, a = save(store, prepared)
    folder = store.runs_dir / a.run_id
    reader = RunStore(store.root)
    assert len(reader.list()) == 1  # the folder was modified just now: not trusted yet
    before = os.stat(folder)
    (tmp_path / "elsewhere").mkdir()
    shutil.move(folder / "weights.safetensors", tmp_path / "elsewhere" / "w")
    (folder / "weights.safetensors").symlink_to(tmp_path / "elsewhere" / "w")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))  # as if within the same tick
    assert reader.list() == [] and "symbolic link" in reader.problems[0]


def test_a_store_sent_to_a_worker_leaves_its_records_behind(store, prepared):
    save(store, prepared)
    store.list()
    copy = pickle.loads(pickle.dumps(store))
    assert copy._records == {} and copy.root == store.root
    assert [r.run_id for r in copy.list()] == [r.run_id for r in store.list()]


def test_rows_made_once_per_record_follow_a_changed_record(store, prepared, monkeypatch):
    _, a = save(store, prepared, name="first name")
    made = []
    monkeypatch.setattr(run_tables_mod, "headline_text", lambda r: made.append(r.run_id) or "metric")
    assert run_rows(store.list())[0]["name"] == "first name"
    assert run_rows(store.list())[0]["name"] == "first name"
    assert made == [a.run_id]  # the same record: its row is made once
    RunStore(store.root).rename(a.run_id, "second name")
    assert run_rows(store.list())[0]["name"] == "second name"
    assert made == [a.run_id, a.run_id]
    registry.reload()  # the families found again: every row is made again (it names the family)
    assert run_rows(store.list())[0]["name"] == "second name" and len(made) == 3
