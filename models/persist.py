"""Model files: ``config.json`` + ``weights.safetensors``, in a folder or a zip. Never pickle.

A model file is data only. Loading one reads JSON and safetensors (both formats that cannot
run code), looks the class up in :mod:`models.registry` by name (so only treeviz's own
estimators can be instantiated), re-validates the parameters against the registry schema, and
hands the arrays to the estimator's ``_restore_state``. A file uploaded by a stranger can at
worst fail to load, with a sentence saying why.

Layout of ``config.json``::

    {"format": "treeviz.model", "version": 1,
     "family": "cart", "estimator": "CARTClassifier",
     "params": {...},            # get_params() without "device", JSON values only
     "learned": {...},           # the estimator's JSON-ready learned attributes
     "history": [...],           # history_
     "context": {...},           # free-form: data fingerprint, feature names, run id, ...
     "versions": {"treeviz": ..., "numpy": ..., "scikit-learn": ..., "torch": ...},
     "preprocessing": {...}}     # version 2, optional: the fitted preprocessing's JSON part

A version-2 file may carry the fitted preprocessing in front of the estimator (what
:class:`treeviz.services.data.pipeline.Preprocessing` stores): its JSON under ``"preprocessing"`` and
its arrays in the weights file under names starting with :data:`PREPROCESSING_PREFIX`. This module
keeps them as data (:func:`load_parts`); the estimator is restored from the rest. A file without
preprocessing is written as version 1, which every treeviz reads.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load, save

from models.ground import __version__
from models.ground.errors import TreevizError
from models.ground.jsonio import check_version, json_default
from models.registry import get_family, registered_class

FORMAT = "treeviz.model"
#: The model file version this treeviz writes when the file carries preprocessing, the newest it reads
#: (a file without preprocessing is written as version 1, so older treeviz versions read it).
VERSION = 2
#: The oldest model file version this treeviz reads (:func:`models.ground.jsonio.check_version`).
MIN_VERSION = 1
CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.safetensors"
#: Arrays of the preprocessing are stored in the weights file under this prefix.
PREPROCESSING_PREFIX = "preprocessing/"
# A zip bigger than this once unpacked is refused (zip bombs).
MAX_UNPACKED_BYTES = 2 * 1024**3


def _versions() -> dict[str, str]:
    import torch  # deferred: torch is heavy and CART models do not need it

    # the installed distribution's version, read without importing scikit-learn (a second on import)
    return {"treeviz": __version__, "numpy": np.__version__, "scikit-learn": metadata.version("scikit-learn"),
            "torch": torch.__version__}


#: A preprocessing as a model file stores it: its JSON part and its arrays.
PreprocessingState = tuple[dict[str, Any], dict[str, np.ndarray]]


def model_bytes(estimator: Any, *, context: dict[str, Any] | None = None,
                preprocessing: PreprocessingState | None = None) -> dict[str, bytes]:
    """The two files of a model, as bytes: ``{"config.json": ..., "weights.safetensors": ...}``;
    ``preprocessing`` (JSON and arrays) is stored with it when given (a version-2 file)."""
    # A user's subclass is saved as the registered estimator it derives from: that is the class a
    # model file can name and load (loading never imports code the file names).
    family, registered = registered_class(type(estimator))
    learned, arrays = estimator._learned_state()
    # The device is where a model runs, not part of the model: a file saved on a GPU machine
    # loads anywhere (estimators default to device="auto").
    params = {k: v for k, v in estimator.get_params(deep=False).items() if k != "device"}
    config = {
        "format": FORMAT,
        "version": 1 if preprocessing is None else VERSION,
        "family": family.key,
        "estimator": registered.__name__,
        "params": params,
        "learned": learned,
        "history": list(getattr(estimator, "history_", [])),
        "context": dict(context or {}),
        "versions": _versions(),
    }
    if preprocessing is not None:
        config["preprocessing"], prep_arrays = preprocessing
        if any(k.startswith(PREPROCESSING_PREFIX) for k in arrays):
            raise TreevizError("The estimator's arrays use the preprocessing's names; it cannot be saved with one.")
        arrays = {**arrays, **{PREPROCESSING_PREFIX + k: v for k, v in prep_arrays.items()}}
    try:
        config_text = json.dumps(config, indent=1, allow_nan=True, default=json_default)
    except TypeError as err:
        raise TreevizError(f"The model has a parameter that cannot be saved as JSON: {err}.") from err
    clean = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
    return {CONFIG_NAME: config_text.encode("utf-8"), WEIGHTS_NAME: save(clean)}


def save_model(estimator: Any, path: str | os.PathLike, *, context: dict[str, Any] | None = None,
               preprocessing: PreprocessingState | None = None) -> str:
    """Write ``estimator`` (and ``preprocessing``, when given) to ``path``: a ``.zip`` file, or else a
    folder. Returns the path.

    Folders are written atomically: a temporary sibling folder is filled, then renamed.
    """
    files = model_bytes(estimator, context=context, preprocessing=preprocessing)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".zip":
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".zip.tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(zip_bytes(files))
        os.replace(tmp, path)
        return str(path)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.tmp"))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return str(path)


def zip_bytes(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def read_model_files(path_or_bytes: str | os.PathLike | bytes) -> dict[str, bytes]:
    """Read ``config.json`` and ``weights.safetensors`` from a folder, a zip path or zip bytes."""
    try:
        return _read_model_files(path_or_bytes)
    except TreevizError:
        raise
    except Exception as err:  # damaged zip: bad deflate data, encrypted or unknown compression, ...
        raise TreevizError(f"This model file is damaged and cannot be read ({_reason(err)}); "
                           "save or export the model again.") from None


def _reason(err: Exception) -> str:
    text = " ".join(str(err).split())[:120]
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _read_model_files(path_or_bytes: str | os.PathLike | bytes) -> dict[str, bytes]:
    if isinstance(path_or_bytes, (bytes, bytearray)):
        return _read_zip(io.BytesIO(path_or_bytes))
    path = Path(path_or_bytes)
    if path.is_dir():
        missing = [n for n in (CONFIG_NAME, WEIGHTS_NAME) if not (path / n).is_file()]
        if missing:
            raise TreevizError(f"The model folder {path} lacks {', '.join(missing)}.")
        return {n: (path / n).read_bytes() for n in (CONFIG_NAME, WEIGHTS_NAME)}
    if not path.exists():
        raise TreevizError(f"There is no model file at {path}.")
    with open(path, "rb") as fh:
        return _read_zip(fh)


def _read_zip(fh: Any) -> dict[str, bytes]:
    try:
        with zipfile.ZipFile(fh) as zf:
            infos: dict[str, zipfile.ZipInfo] = {}
            for info in zf.infolist():
                if info.is_dir():
                    continue
                base = info.filename.rsplit("/", 1)[-1]
                if base in (CONFIG_NAME, WEIGHTS_NAME) and base in infos:
                    raise TreevizError(f"This zip holds {base} twice, so it is not a treeviz model; "
                                       "save or export the model again.")
                infos[base] = info
            missing = [n for n in (CONFIG_NAME, WEIGHTS_NAME) if n not in infos]
            if missing:
                raise TreevizError(
                    f"This zip is not a treeviz model: it lacks {', '.join(missing)}."
                )
            if sum(infos[n].file_size for n in (CONFIG_NAME, WEIGHTS_NAME)) > MAX_UNPACKED_BYTES:
                raise TreevizError("This model file unpacks to more than 2 GiB and was refused.")
            return {n: read_member(zf, infos[n], MAX_UNPACKED_BYTES) for n in (CONFIG_NAME, WEIGHTS_NAME)}
    except zipfile.BadZipFile as err:
        raise TreevizError("This file is not a zip archive; a treeviz model is a .zip or a folder.") from err


def read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A zip member's bytes, read no further than ``limit`` (a header may understate the size)."""
    with zf.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TreevizError(f"The zip member {info.filename!r} unpacks to more than {limit} bytes and was refused.")
    return data


def load_model(path_or_bytes: str | os.PathLike | bytes) -> Any:
    """Load the estimator of a model written by :func:`save_model` (folder, ``.zip`` path, or zip
    bytes); a preprocessing the file carries is left out (:func:`load_parts` gives it).

    Raises :class:`TreevizError` with a sentence for anything that is not a valid treeviz model:
    whatever goes wrong while reading it becomes one, and so does a tree whose split weights or
    biases are not finite numbers (it would route every row the same way).
    """
    return load_parts(path_or_bytes)[0]


def load_parts(path_or_bytes: str | os.PathLike | bytes) -> tuple[Any, PreprocessingState | None]:
    """The estimator of a model file, and the preprocessing it carries (JSON and arrays; None when
    it carries none), checked as :func:`load_model` checks the estimator."""
    files = read_model_files(path_or_bytes)
    try:
        estimator, preprocessing = _load(files)
        check_finite_routing(estimator)
        _check_predicts(estimator)
    except TreevizError:
        raise
    except Exception as err:
        raise TreevizError(f"The model file is damaged or not a treeviz model ({_reason(err)}); "
                           "it was not loaded.") from None
    return estimator, preprocessing


def _split_preprocessing(config: dict[str, Any], arrays: dict[str, np.ndarray]
                         ) -> tuple[PreprocessingState | None, dict[str, np.ndarray]]:
    """The preprocessing a model file carries (None when its config has none), and the estimator's arrays."""
    prep = {k[len(PREPROCESSING_PREFIX):]: v for k, v in arrays.items() if k.startswith(PREPROCESSING_PREFIX)}
    rest = {k: v for k, v in arrays.items() if not k.startswith(PREPROCESSING_PREFIX)}
    state = config["preprocessing"] if isinstance(config.get("preprocessing"), dict) else None
    return (None if state is None else (state, prep)), rest


def preprocessing_of(files: dict[str, bytes]) -> PreprocessingState | None:
    """Only the preprocessing of a model file's two files (None when it carries none), without building
    the estimator: for a run whose model was checked when it was stored."""
    config = json.loads(files[CONFIG_NAME].decode("utf-8"))
    if not isinstance(config, dict) or "preprocessing" not in config:
        return None
    try:
        arrays = load(files[WEIGHTS_NAME])
    except (SafetensorError, ValueError, OSError) as err:
        raise TreevizError(f"The model's weights file is damaged ({err}).") from err
    return _split_preprocessing(config, arrays)[0]


def _load(files: dict[str, bytes]) -> tuple[Any, PreprocessingState | None]:
    try:
        config = json.loads(files[CONFIG_NAME].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise TreevizError("The model's config.json is not valid JSON.") from err
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise TreevizError("This is not a treeviz model (config.json has no 'treeviz.model' format).")
    check_version(config, what="The model's config.json", kind="model files", oldest=MIN_VERSION, newest=VERSION,
                  again=f"export the model again with a treeviz that writes version {VERSION} (this one does)")
    for key, kind in (("params", dict), ("learned", dict), ("history", list), ("context", dict),
                      ("preprocessing", dict)):
        if not isinstance(config.get(key, kind()), kind):
            raise TreevizError(f"The model's config.json has a malformed '{key}' (not a JSON {kind.__name__}).")
    family = get_family(str(config.get("family", "")))
    cls = family.class_by_name(str(config.get("estimator", "")))
    params = family.validate_params(config.get("params", {}), task=family.task_of_class(cls))
    try:
        arrays = load(files[WEIGHTS_NAME])
    except (SafetensorError, ValueError, OSError) as err:
        raise TreevizError(f"The model's weights file is damaged ({err}).") from err
    preprocessing, arrays = _split_preprocessing(config, arrays)
    estimator = cls(**params)
    try:
        estimator._restore_state(config.get("learned", {}), arrays)
    except (KeyError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise TreevizError(
            f"The model file does not match {cls.__name__} (missing or malformed {_reason(err)})."
        ) from err
    estimator.history_ = list(config.get("history", []))
    estimator.model_context_ = dict(config.get("context", {}))
    return estimator, preprocessing


def _check_predicts(estimator: Any) -> None:
    """The loaded model answers for one row (and a classifier's probabilities have one column
    per class): a file whose parts do not fit together is refused here, not at the first use."""
    X = np.zeros((1, int(estimator.n_features_in_)))
    out = estimator.predict(X) if hasattr(estimator, "predict") else estimator.transform(X)
    if np.asarray(out).shape[0] != 1:
        raise TreevizError("The model file's parts do not fit together (it does not give one answer per row); "
                           "it was not loaded.")
    if hasattr(estimator, "predict_proba") and hasattr(estimator, "classes_"):
        proba = np.asarray(estimator.predict_proba(X))
        if proba.shape != (1, len(estimator.classes_)):
            raise TreevizError("The model file's classes do not match its class scores; it was not loaded.")


def check_finite_routing(estimator: Any) -> None:
    """Refuse a model whose trees have split weights, biases or linear leaves that are not
    finite numbers (NaN compares false, so every row would take one path)."""
    for tree in estimator.to_trees():
        parts = [tree.weight, tree.bias] + ([] if tree.leaf_weight is None else [tree.leaf_weight])
        if not all(np.isfinite(p).all() for p in parts):
            raise TreevizError("The model's split weights or biases are not all finite numbers, so it "
                               "cannot route rows; the file was refused.")


def read_config(path_or_bytes: str | os.PathLike | bytes) -> dict[str, Any]:
    """Only the parsed ``config.json`` of a model (for listings, without loading weights)."""
    files = read_model_files(path_or_bytes)
    try:
        config = json.loads(files[CONFIG_NAME].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise TreevizError("The model's config.json is not valid JSON.") from err
    if not isinstance(config, dict):
        raise TreevizError("This is not a treeviz model (its config.json is not a JSON object).")
    return config
