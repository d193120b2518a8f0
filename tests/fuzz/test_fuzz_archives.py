"""Fuzz: model files, run zips and imported run records, as a stranger could craft them.

Each input is either refused with a :class:`TreevizError` (and nothing is stored), or accepted,
and then everything that reads a run works on it: the Runs page's table and the Compare page's
leaderboard (converted to Arrow exactly as ``st.dataframe`` does), the HTML report, and
predictions of the loaded model on the run's own data.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.dataframe_util import convert_pandas_df_to_arrow_bytes

from models.ground.errors import TreevizError
from models.persist import CONFIG_NAME, WEIGHTS_NAME, load_model
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.record import RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.services.views.compare import groups, score_of
from treeviz.ui.report import run_report
from treeviz.ui.run_tables import leaderboard, run_rows


class Source:
    """A valid run zip, its members, its model files and rows to predict."""

    def __init__(self, zip_bytes: bytes, members: dict[str, bytes], X: np.ndarray) -> None:
        self.zip_bytes, self.members, self.X = zip_bytes, members, X
        self.model_files = {n: members[n] for n in (CONFIG_NAME, WEIGHTS_NAME)}

    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return "Source(a CART run on iris)"


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> Source:
    store = RunStore(tmp_path_factory.mktemp("source"))
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, prepared, store=store)
    data = export_zip(store, record.run_id)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    return Source(data, members, prepared.X_test)


#: Accepted runs whose report was already checked (identical runs are not checked twice).
_REPORTED: set[str] = set()


def check_import(data: bytes) -> None:
    """The property: refused with a sentence and nothing stored, or accepted and usable."""
    with tempfile.TemporaryDirectory() as tmp:
        store = RunStore(Path(tmp) / "home")
        try:
            record = import_zip(store, data)
        except TreevizError as err:
            assert str(err).strip(), "an empty refusal"
            runs = store.runs_dir
            assert not runs.exists() or not any(p.is_dir() for p in runs.iterdir())
            assert not any(p for p in Path(tmp).iterdir() if p.name != "home")
            return
        check_usable(store, record)


def check_usable(store: RunStore, record: RunRecord) -> None:
    records = store.list()
    assert [r.run_id for r in records] == [record.run_id] and store.problems == []
    convert_pandas_df_to_arrow_bytes(pd.DataFrame(run_rows(records)))
    for group in groups(records):
        score = score_of(group.task, group.runs)
        convert_pandas_df_to_arrow_bytes(pd.DataFrame(leaderboard(group.runs, score)))
    model = store.load_model(record.run_id)
    has_data = store.dataset_files(record.dataset_fingerprint) is not None
    X = store.load_prepared(record.run_id).X_test if has_data else np.zeros((3, model.n_features_in_))
    assert np.asarray(model.predict(X)).shape[0] == X.shape[0]
    folder = store.run_path(record.run_id)
    key = hashlib.sha256(b"".join((folder / n).read_bytes() for n in sorted(p.name for p in folder.iterdir()))
                         + bytes([has_data])).hexdigest()
    if key not in _REPORTED:
        try:
            assert run_report(store, record.run_id).startswith("<!doctype html>")
        except TreevizError:
            assert not has_data  # a run imported without its data set: the report says so
        _REPORTED.add(key)


# ---------------------------------------------------------------------- byte mutations
def mutate(data: bytes, draw_edits: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for position, value in draw_edits:
        out[position % len(out)] = value
    return bytes(out[:cut] if cut is not None else out)


edits = st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=8)
cuts = st.one_of(st.none(), st.integers(0, 2**31))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@given(edits=edits, cut=cuts)
def test_byte_mutated_run_zips_are_refused_or_usable(source, edits, cut):
    data = mutate(source.zip_bytes, edits, None if cut is None else cut % (len(source.zip_bytes) + 1))
    check_import(data)


@given(which=st.sampled_from(["zip", CONFIG_NAME, WEIGHTS_NAME]), edits=edits, cut=cuts)
def test_byte_mutated_model_files_are_refused_or_predict(source, which, edits, cut):
    with tempfile.TemporaryDirectory() as tmp:
        if which == "zip":
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for name, member in source.model_files.items():
                    zf.writestr(name, member)
            good = buf.getvalue()
            target: Path = Path(tmp) / "model.zip"
            target.write_bytes(mutate(good, edits, None if cut is None else cut % (len(good) + 1)))
        else:
            target = Path(tmp) / "model"
            target.mkdir()
            for name, member in source.model_files.items():
                if name == which:
                    member = mutate(member, edits, None if cut is None else cut % (len(member) + 1))
                (target / name).write_bytes(member)
        try:
            model = load_model(target)
        except TreevizError as err:
            assert str(err).strip()
            return
        assert np.asarray(model.predict(source.X)).shape[0] == source.X.shape[0]


# ---------------------------------------------------------------------- structural mutations
NAMES = ["run.json", "history.json", "config.json", "weights.safetensors", "dataset/dataset.json",
         "dataset/arrays.safetensors"]
ODD_NAMES = ["../run.json", "/etc/run.json", "a/run.json", "run.JSON", "model.pkl", "dataset/x.bin", "c:run.json"]
LOCAL, CENTRAL = b"PK\x03\x04", b"PK\x01\x02"

operations = st.one_of(
    st.tuples(st.just("duplicate"), st.sampled_from(NAMES), st.binary(max_size=40)),
    st.tuples(st.just("drop"), st.sampled_from(NAMES)),
    st.tuples(st.just("encrypt"), st.sampled_from(NAMES)),
    st.tuples(st.just("method"), st.sampled_from(NAMES), st.sampled_from([0, 8, 12, 14, 99, 6])),
    st.tuples(st.just("version"), st.sampled_from(NAMES), st.sampled_from([20, 45, 63, 64, 99])),
    st.tuples(st.just("rename"), st.sampled_from(NAMES), st.sampled_from(ODD_NAMES + NAMES)),
    st.tuples(st.just("extra"), st.sampled_from(ODD_NAMES), st.binary(max_size=40)),
)


def build(members: list[list]) -> bytes:
    """A zip of ``[name, data, method, flags, version]`` entries; odd methods, flags and versions
    are written into the headers after zipfile wrote them."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # duplicate names are the point
        for name, data, method, _, _ in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method if method in (0, 8, 12, 14) else 0
            zf.writestr(info, data)
    out = bytearray(buf.getvalue())
    for name, _, method, flags, version in members:
        for signature, fields in ((LOCAL, {8: method, 6: flags, 4: version}),
                                  (CENTRAL, {10: method, 8: flags, 6: version})):
            at = 0
            while (at := out.find(signature, at)) >= 0:
                name_at = at + (30 if signature == LOCAL else 46)
                if out[name_at:name_at + len(name.encode())] == name.encode():
                    for offset, value in fields.items():
                        if value is not None:
                            out[at + offset:at + offset + 2] = int(value).to_bytes(2, "little")
                at += 4
    return bytes(out)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@given(ops=st.lists(operations, min_size=1, max_size=4))
def test_structurally_mutated_run_zips_are_refused_or_usable(source, ops):
    members = [[n, source.members[n], 8, None, None] for n in NAMES]
    for op in ops:
        entries = [m for m in members if m[0] == op[1]]
        if op[0] == "duplicate" and entries:
            members.append([op[1], op[2], 8, None, None])
        elif op[0] == "drop":
            members = [m for m in members if m[0] != op[1]]
        elif op[0] == "encrypt":
            for m in entries:
                m[3] = 1
        elif op[0] == "method":
            for m in entries:
                m[2] = op[2]
        elif op[0] == "version":
            for m in entries:
                m[4] = op[2]
        elif op[0] == "rename":
            for m in entries:
                m[0] = op[2]
        elif op[0] == "extra":
            members.append([op[1], op[2], 8, None, None])
    check_import(build(members))


# ---------------------------------------------------------------------- record mutations
FIELDS = [*RunRecord.__dataclass_fields__, "format", "version"]
SUBKEYS = ["test_accuracy", "n_features", "n_samples", "name", "scaling", "seed", "test_size", "max_depth",
           "value", "id", "kind", "budget", "index", "criterion"]
SPECIAL_TEXT = ["\x1b[2J\x1b[31mowned", "a\u202eb", "\ud800", "x" * 300, "", " ", "0.93", "NaN",
                "20260101-000000-000000-abcdef", "0123456789abcdef", "cart", "finished", "2026-01-01T00:00:00"]
leaves = (st.none() | st.booleans() | st.integers(-(10**40), 10**40) | st.integers(-3, 300) | st.floats()
          | st.text(max_size=20) | st.sampled_from(SPECIAL_TEXT))
json_values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8) | st.sampled_from(SUBKEYS), inner, max_size=4),
                           max_leaves=12)
DROP = object()
changes = st.tuples(st.sampled_from(FIELDS), st.none() | st.sampled_from(SUBKEYS) | st.text(max_size=6),
                    json_values | st.just(DROP))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@given(edits=st.lists(changes, min_size=1, max_size=3))
def test_records_with_random_fields_are_refused_or_usable(source, edits):
    run = json.loads(source.members["run.json"])
    for field, subkey, value in edits:
        holder, key = (run[field], subkey) if subkey is not None and isinstance(run.get(field), dict) else (run, field)
        if value is DROP:
            holder.pop(key, None)
        else:
            holder[key] = value
    text = json.dumps(run, allow_nan=True).encode("utf-8", "surrogatepass")
    data = build([[n, text if n == "run.json" else source.members[n], 8, None, None] for n in NAMES])
    check_import(data)


def test_the_fuzz_source_itself_is_accepted(source):
    """The unmutated zip is accepted and usable (so the properties above are not vacuous)."""
    check_import(source.zip_bytes)
    assert math.isfinite(json.loads(source.members["run.json"])["metrics"]["test_accuracy"])
