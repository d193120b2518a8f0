"""The run archive: one .zip per run, written by :func:`export_zip` and read back, without trusting
it, by :func:`import_zip`. The whole format lives here.

A run zip holds the files of one run folder (``run.json``, ``history.json``, ``config.json``,
``weights.safetensors``) and, by default, its data set under ``dataset/``. Member dates are fixed,
so the same run always gives the same bytes, and the zip is also a model file that
:func:`models.persist.load_model` opens directly.

Importing refuses, with a sentence, anything that could harm the machine or mislead the user:
paths outside the archive, too many or too large members, pickled models, a model that does not
load through :func:`models.persist.load_model` (JSON and safetensors only), and a ``run.json``
that disagrees with its model (estimator class, family or number of features).
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from dataclasses import replace

from models.persist import load_model, zip_bytes
from treeviz.data.dataset import ARRAYS, DATASET_JSON, Dataset
from treeviz.errors import TreevizError
from treeviz.jsonio import dumps_json
from treeviz.runs import CONFIG_JSON, HISTORY_JSON, RUN_JSON, WEIGHTS, RunRecord, RunStore, new_run_id

DATASET_PREFIX = "dataset/"
#: Import limits: total unpacked bytes, and number of members, of a run zip.
MAX_IMPORT_BYTES = 1024**3
MAX_IMPORT_MEMBERS = 32
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth", ".sav", ".dill")
_RUN_FILES = (RUN_JSON, HISTORY_JSON, CONFIG_JSON, WEIGHTS)
_MEMBERS = (*_RUN_FILES, DATASET_PREFIX + DATASET_JSON, DATASET_PREFIX + ARRAYS)


def export_zip(store: RunStore, run_id: str, *, include_dataset: bool = True) -> bytes:
    """A zip of the run: model files, run.json, history.json and, by default, its data set."""
    path = store.run_path(run_id)
    record = store.get(run_id)
    files = {n: (path / n).read_bytes() for n in _RUN_FILES if (path / n).is_file()}
    if include_dataset:
        dataset_files = store.dataset_files(record.dataset_fingerprint)
        if dataset_files is not None:
            files.update({DATASET_PREFIX + n: data for n, data in dataset_files.items()})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():  # fixed dates: the same run gives the same bytes
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data,
                        compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def import_zip(store: RunStore, data: bytes) -> RunRecord:
    """Add a run from :func:`export_zip` bytes to ``store``, after checking every part of it.

    The run keeps its id unless the store already has it (then it gets a new one).
    """
    files = read_run_zip(data)
    try:
        record = RunRecord.from_dict(json.loads(files[RUN_JSON].decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise TreevizError("The zip's run.json is not valid JSON.") from None
    try:
        model = load_model(zip_bytes({CONFIG_JSON: files[CONFIG_JSON], WEIGHTS: files[WEIGHTS]}))
    except TreevizError:
        raise
    except Exception as err:
        raise TreevizError(f"The zip's model cannot be loaded ({type(err).__name__}: {err}); "
                           "the file was refused.") from None
    if type(model).__name__ != record.estimator or model.family_key != record.family:
        raise TreevizError(
            f"The zip's run.json describes a {record.estimator} of the family '{record.family}' but its "
            f"model is a {type(model).__name__} of the family '{model.family_key}'; the file was refused."
        )
    n_features = record.dataset.get("n_features")
    if n_features is not None and getattr(model, "n_features_in_", n_features) != n_features:
        raise TreevizError("The zip's model and its data set disagree on the number of features.")
    if DATASET_PREFIX + DATASET_JSON in files and DATASET_PREFIX + ARRAYS in files:
        dataset = Dataset.from_files(files[DATASET_PREFIX + DATASET_JSON], files[DATASET_PREFIX + ARRAYS],
                                     record.dataset_fingerprint)
        store.store_dataset(dataset)
    if store.exists(record.run_id):
        record = replace(record, run_id=new_run_id())
    out = {n: files[n] for n in (CONFIG_JSON, WEIGHTS)}
    out[HISTORY_JSON] = files.get(HISTORY_JSON, dumps_json(list(getattr(model, "history_", []))))
    return store.publish_run(record, out)


def read_run_zip(data: bytes) -> dict[str, bytes]:
    """The members of a run zip, checked for traversal, size and pickles."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    except (zipfile.BadZipFile, ValueError):
        raise TreevizError("This file is not a zip archive; a treeviz run export is a .zip file.") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_IMPORT_MEMBERS:
            raise TreevizError(
                f"This zip has {len(infos)} files, too many for a treeviz run; it was refused."
            )
        for info in infos:
            name = info.filename
            parts = name.replace("\\", "/").split("/")
            if name.startswith(("/", "\\")) or "\\" in name or ":" in name or ".." in parts:
                raise TreevizError(
                    f"The zip member {name!r} points outside the archive, so the file was refused."
                )
        if sum(i.file_size for i in infos) > MAX_IMPORT_BYTES:
            raise TreevizError(
                f"This zip unpacks to more than {MAX_IMPORT_BYTES / 1024**2:.0f} MiB, too large "
                "for a treeviz run; it was refused."
            )
        by_name = {i.filename: i for i in infos}
        tops = {n.split("/", 1)[0] for n in by_name}
        if RUN_JSON not in by_name and len(tops) == 1 and all("/" in n for n in by_name):
            top = tops.pop() + "/"  # zipped a whole folder: look inside it
            by_name = {n[len(top):]: i for n, i in by_name.items()}
        missing = [n for n in (RUN_JSON, CONFIG_JSON, WEIGHTS) if n not in by_name]
        if missing:
            pickles = [n for n in by_name if n.lower().endswith(PICKLE_SUFFIXES)]
            if pickles:
                raise TreevizError(
                    f"This zip holds a pickled model ({pickles[0]}), which treeviz never opens "
                    "because a pickle can run code; export the run from treeviz instead."
                )
            if RUN_JSON in missing and CONFIG_JSON in by_name and WEIGHTS in by_name:
                raise TreevizError(
                    "This zip is a model file without a run record; open it with "
                    "models.persist.load_model instead of importing it as a run."
                )
            raise TreevizError(f"This zip is not a treeviz run export: it lacks {', '.join(missing)}.")
        try:
            return {n: zf.read(by_name[n]) for n in _MEMBERS if n in by_name}
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, zlib.error) as err:
            raise TreevizError(f"This zip is damaged ({err}); export the run again.") from None
