"""The run archive: one .zip per run, written by :func:`export_zip` and read back, without trusting
it, by :func:`import_zip`. The whole format lives here.

A run zip holds the files of one run folder (``run.json``, ``history.json``, ``config.json``,
``weights.safetensors``) and, by default, its data set under ``dataset/``. Member dates are fixed,
so the same run always gives the same bytes, and the zip is also a model file that
:func:`models.persist.load_model` opens directly.

Importing refuses, with a sentence, anything that could harm the machine or mislead the user:
paths outside the archive, too many, duplicate, encrypted or too large members (a limit per
member, and on the compression ratio), pickled models, a model that does not load through
:func:`models.persist.load_model` (JSON and safetensors only, finite split weights), a
``run.json`` that fails the check every run record passes (:meth:`RunRecord.from_dict`) or
disagrees with its model (class, family, parameters, size, number of features, data
fingerprints), and a data set that is not the model's (features, task, classes) or whose
preparation does not rebuild the run's prepared data exactly.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import replace
from typing import Any

from models.ground.errors import TreevizError
from models.ground.jsonio import dumps_json, jsonable
from models.persist import load_model, model_bytes, preprocessing_of, read_member, zip_bytes
from models.schema import ANY_DATA_TASKS
from treeviz.services.data.dataset import ARRAYS, DATASET_JSON, Dataset
from treeviz.services.data.onnx_export import export_onnx
from treeviz.services.data.pipeline import Preprocessing
from treeviz.services.data.preprocess import prepare
from treeviz.services.store.files import RUN_JSON
from treeviz.services.store.record import RunRecord, new_run_id, tree_size
from treeviz.services.store.runs import CONFIG_JSON, HISTORY_JSON, WEIGHTS, RunStore

DATASET_PREFIX = "dataset/"
#: Import limits: total unpacked bytes, and number of members, of a run zip.
MAX_IMPORT_BYTES = 1024**3
MAX_IMPORT_MEMBERS = 32
#: Largest unpacked size of each member a run zip may hold, in bytes.
MEMBER_LIMITS = {RUN_JSON: 1024**2, HISTORY_JSON: 32 * 1024**2, CONFIG_JSON: 128 * 1024**2,
                 WEIGHTS: 512 * 1024**2, DATASET_PREFIX + DATASET_JSON: 32 * 1024**2,
                 DATASET_PREFIX + ARRAYS: 512 * 1024**2}
#: A member larger than RATIO_FLOOR bytes compressed more than MAX_RATIO-fold is refused (zip bombs).
MAX_RATIO, RATIO_FLOOR = 200, 4 * 1024**2
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib", ".pt", ".pth", ".sav", ".dill")
_RUN_FILES = (RUN_JSON, HISTORY_JSON, CONFIG_JSON, WEIGHTS)
_MEMBERS = (*_RUN_FILES, DATASET_PREFIX + DATASET_JSON, DATASET_PREFIX + ARRAYS)


def export_zip(store: RunStore, run_id: str, *, include_dataset: bool = True) -> bytes:
    """A zip of the run: model files, run.json, history.json and, by default, its data set (every
    file read without following a symbolic link: :meth:`RunStore.run_files`)."""
    record = store.get(run_id)
    files = store.run_files(run_id)
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


def run_preprocessing(store: RunStore, run_id: str) -> Preprocessing:
    """The fitted preprocessing of the run: the one its model file carries, or, for a run saved before
    model files carried it, rebuilt from its data (:meth:`RunStore.load_prepared`)."""
    state = preprocessing_of(store.run_files(run_id))
    if state is not None:
        return Preprocessing.from_state(*state)
    return Preprocessing.from_prepared(store.load_prepared(run_id))


def model_file(store: RunStore, run_id: str) -> bytes:
    """The run's model file (a zip): the estimator and its fitted preprocessing, which
    :func:`treeviz.services.data.pipeline.load_model` opens as a Pipeline anywhere, with no run store.
    A run folder is that file already; one saved before model files carried the preprocessing gets it
    rebuilt from its data."""
    files = store.run_files(run_id)
    model_files = {CONFIG_JSON: files[CONFIG_JSON], WEIGHTS: files[WEIGHTS]}
    if preprocessing_of(model_files) is not None:
        return zip_bytes(model_files)
    model = load_model(zip_bytes(model_files))
    state = Preprocessing.from_prepared(store.load_prepared(run_id)).to_state()
    return zip_bytes(model_bytes(model, context=dict(getattr(model, "model_context_", {})), preprocessing=state))


def run_onnx(store: RunStore, run_id: str) -> bytes:
    """The run's ONNX model, its preprocessing inside (:func:`treeviz.services.data.onnx_export.export_onnx`)."""
    return export_onnx(store.load_model(run_id), prepared=run_preprocessing(store, run_id))


def import_zip(store: RunStore, data: bytes) -> RunRecord:
    """Add a run from :func:`export_zip` bytes to ``store``, after checking every part of it.

    The record passes the same check as a run trained here (:meth:`RunRecord.from_dict`); the
    model must load, be the record's class and family, with the record's parameters and size; the
    data set (in the zip, or already in the store) must be the one the model was trained on, and
    its preparation must rebuild the record's prepared data exactly. The run keeps its id unless
    the store already has it (then it gets a new one), and its name unless another run has it
    (then it becomes "name (2)", "name (3)", ...).
    """
    files = read_run_zip(data)
    record = RunRecord.from_dict(_json_member(files, RUN_JSON))
    history = _json_member(files, HISTORY_JSON) if HISTORY_JSON in files else []
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        raise TreevizError("The zip's history.json is not a list of training records; the file was refused.")
    model = load_model(zip_bytes({CONFIG_JSON: files[CONFIG_JSON], WEIGHTS: files[WEIGHTS]}))
    _check_model(record, model)
    packed = _zip_dataset(files, record)
    dataset = packed if packed is not None else _stored_dataset(store, record)
    if dataset is not None:
        _check_dataset(record, model, dataset)
    if packed is not None:
        store.store_dataset(packed)
    if store.exists(record.run_id):
        record = replace(record, run_id=new_run_id())
    out = {n: files[n] for n in (CONFIG_JSON, WEIGHTS)}
    out[HISTORY_JSON] = dumps_json(history)
    return store.publish_unique(record, out)  # the same zip imported twice gets "name (2)"


def _json_member(files: dict[str, bytes], name: str) -> Any:
    try:
        return json.loads(files[name].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise TreevizError(f"The zip's {name} is not valid JSON; the file was refused.") from None


def _refuse(what: str) -> TreevizError:
    return TreevizError(f"The zip's {what}; the file was refused.")


def _check_model(record: RunRecord, model: Any) -> None:
    """The model is the record's: class, family, parameters, size, data fingerprints."""
    if type(model).__name__ != record.estimator or model.family_key != record.family:
        raise _refuse(
            f"run.json describes a {record.estimator} of the family '{record.family}' but its model is a "
            f"{type(model).__name__} of the family '{model.family_key}'"
        )
    params = jsonable({k: v for k, v in model.get_params(deep=False).items() if k != "device"})
    stated = {k: v for k, v in record.params.items() if k != "device"}
    if stated != params:
        differ = sorted(k for k in set(stated) | set(params) if stated.get(k, ...) != params.get(k, ...))
        raise _refuse(f"run.json gives other parameters than its model ({', '.join(differ[:5])})")
    size = tree_size(model)
    if any(getattr(record, k) is not None and getattr(record, k) != v for k, v in size.items()):
        raise _refuse("run.json gives another tree size than its model has")
    n_features = record.dataset.get("n_features")
    if n_features is not None and getattr(model, "n_features_in_", n_features) != n_features:
        raise _refuse("model and its data set disagree on the number of features")
    context = getattr(model, "model_context_", {})
    for key in ("dataset_fingerprint", "prepared_fingerprint"):
        if key in context and context[key] != getattr(record, key):
            raise _refuse(f"model was trained on other data than its run.json names ({key.replace('_', ' ')})")


def _zip_dataset(files: dict[str, bytes], record: RunRecord) -> Dataset | None:
    if DATASET_PREFIX + DATASET_JSON not in files or DATASET_PREFIX + ARRAYS not in files:
        return None
    try:
        return Dataset.from_files(files[DATASET_PREFIX + DATASET_JSON], files[DATASET_PREFIX + ARRAYS],
                                  record.dataset_fingerprint)
    except TreevizError as err:
        raise _refuse(f"data set cannot be used ({str(err).rstrip('.')})") from None
    except Exception as err:  # a damaged data set file, whatever the reader trips on
        raise _refuse(f"data set is damaged ({type(err).__name__})") from None


def _stored_dataset(store: RunStore, record: RunRecord) -> Dataset | None:
    """The record's data set if this store already has it (so that it is checked too)."""
    if store.dataset_files(record.dataset_fingerprint) is None:
        return None
    try:
        return store.load_dataset(record.dataset_fingerprint)
    except TreevizError:
        return None  # damaged here: the import does not depend on it, loading the run will say so


def _check_dataset(record: RunRecord, model: Any, dataset: Dataset) -> None:
    """The data set is the one the model was trained on, and the record's preparation of it
    gives exactly the record's prepared data."""
    if getattr(model, "n_features_in_", dataset.n_features) != dataset.n_features:
        raise _refuse(f"model has {model.n_features_in_} features but its data set has {dataset.n_features}")
    if record.task not in ANY_DATA_TASKS and record.task != dataset.task:
        raise _refuse(f"run is a {record.task} run but its data set is a {dataset.task} data set")
    summary = jsonable(dataset.summary())
    for key in ("n_samples", "n_features", "n_classes"):
        if key in record.dataset and record.dataset[key] != summary[key]:
            raise _refuse(f"run.json and its data set disagree on {key.replace('_', ' ')}")
    classes = getattr(model, "classes_", None)
    if record.task == "classification" and classes is not None:
        unknown = {str(c) for c in classes} - set(dataset.class_names or ())
        if unknown:
            raise _refuse(f"model predicts classes its data set lacks ({', '.join(sorted(unknown)[:3])})")
    try:
        prepared = prepare(dataset, record.prep_config)
    except TreevizError as err:
        raise _refuse(f"preparation cannot be applied to its data set ({str(err).rstrip('.')})") from None
    if prepared.fingerprint != record.prepared_fingerprint:
        raise _refuse("preparation does not rebuild the prepared data the model was trained on (its "
                      "fingerprint differs)")


def read_run_zip(data: bytes) -> dict[str, bytes]:
    """The members of a run zip, checked for traversal, duplicates, size, compression and pickles."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(bytes(data)))
    except (zipfile.BadZipFile, ValueError):
        raise TreevizError("This file is not a zip archive; a treeviz run export is a .zip file.") from None
    except Exception as err:  # a damaged central directory, whatever zipfile trips on
        raise TreevizError(f"This zip is damaged ({type(err).__name__}); export the run again.") from None
    with zf:
        by_name = _checked_members(zf)
        try:
            return {n: read_member(zf, by_name[n], MEMBER_LIMITS[n]) for n in _MEMBERS if n in by_name}
        except TreevizError:
            raise
        except Exception as err:  # bad deflate data, a bad CRC, a truncated member, ...
            raise TreevizError(f"This zip is damaged ({type(err).__name__}); export the run again.") from None


def _checked_members(zf: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The run's members by name inside the run, after every check that needs no unpacking."""
    infos = [i for i in zf.infolist() if not i.is_dir()]
    if len(infos) > MAX_IMPORT_MEMBERS:
        raise TreevizError(f"This zip has {len(infos)} files, too many for a treeviz run; it was refused.")
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or "\\" in name or ":" in name or ".." in parts:
            raise TreevizError(f"The zip member {name!r} points outside the archive, so the file was refused.")
    if sum(i.file_size for i in infos) > MAX_IMPORT_BYTES:
        raise TreevizError(
            f"This zip unpacks to more than {MAX_IMPORT_BYTES / 1024**2:.0f} MiB, too large "
            "for a treeviz run; it was refused."
        )
    names = [i.filename for i in infos]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TreevizError(f"This zip holds {twice[0]!r} twice, so it is not a treeviz run export; it was refused.")
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
    for name in _MEMBERS:
        if name in by_name:
            _check_member(name, by_name[name])
    return by_name


def _check_member(name: str, info: zipfile.ZipInfo) -> None:
    """One member: not encrypted, stored or deflated, within its size limit, not a zip bomb."""
    if info.flag_bits & 0x1:
        raise TreevizError(f"The zip member {name} is encrypted; a treeviz run export never is, so it was refused.")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise TreevizError(f"The zip member {name} uses a compression treeviz does not write "
                           f"(method {info.compress_type}); export the run from treeviz again.")
    limit = MEMBER_LIMITS[name]
    if info.file_size > limit:
        raise TreevizError(f"The zip member {name} unpacks to {info.file_size / 1024**2:.1f} MiB, more than the "
                           f"{limit / 1024**2:.0f} MiB a treeviz run allows; it was refused.")
    if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
        raise TreevizError(f"The zip member {name} is compressed more than {MAX_RATIO}-fold, as a zip bomb is; "
                           "it was refused.")
