"""``predict``: a stored run's or a model file's predictions for the rows of a table, as CSV."""

from __future__ import annotations

import argparse
import io
import json
import warnings
import zipfile
from pathlib import Path
from typing import Any

from models.ground.errors import TreevizError
from treeviz.cli.common import OK, PROG, note, open_store, read_model_bytes, read_table_file, write_output
from treeviz.services.data import Dataset, prepare
from treeviz.services.data.dataset import ARRAYS, DATASET_JSON
from treeviz.services.data.pipeline import Pipeline, load_model, pipeline_parts
from treeviz.services.data.upload import ENCODINGS
from treeviz.services.store.archive import DATASET_PREFIX, read_run_zip, run_preprocessing
from treeviz.services.store.files import RUN_JSON
from treeviz.services.store.record import RUN_ID_RE, RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.services.views.predict import (  # noqa: F401 - spreadsheet_safe and FORMULA_STARTS: also this module's API
    FORMULA_STARTS,
    model_task,
    offers_proba,
    predict_table,
    predictions_csv,
    spreadsheet_safe,
)

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Predict the rows of a table with a stored run or a model file."


def epilog() -> str:
    """Which columns the table needs, and an example."""
    return ("The table's columns are those of the training data (one-hot and date columns are encoded as\n"
            "at upload) or the model's feature names; other columns are ignored. A run (id, folder or\n"
            "zip) also brings its preprocessing (imputation and scaling); a plain model file does not.\n\n"
            f"example:\n  {PROG} predict 20250101-120000-000000-abcdef new_rows.csv --proba --out pred.csv")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The model, the table and the output, beside the shared ``--home``."""
    parser.add_argument("model", metavar="MODEL", help="a run id, a run folder, a run zip or a model file/folder")
    parser.add_argument("table", metavar="TABLE", help="a CSV/TSV/Parquet file of rows to predict")
    parser.add_argument("-o", "--out", metavar="FILE", help="write the CSV here (default: stdout)")
    parser.add_argument("--proba", action="store_true", help="add one probability column per class (classifiers)")
    parser.add_argument("--keep", action="append", default=[], metavar="COLUMN",
                        help="copy this input column to the output, e.g. an id (repeatable)")
    parser.add_argument("--encoding", choices=ENCODINGS, default="auto", help="the table's text encoding")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")


def _run_folder_store(path: Path) -> RunStore | None:
    """The store a run folder (``<root>/runs/<run_id>``) belongs to, or None for another folder."""
    if (path / RUN_JSON).is_file() and path.parent.name == "runs" and RUN_ID_RE.fullmatch(path.name):
        return RunStore(path.parent.parent)
    return None


def _model_file(spec: Any) -> Any:
    """A model file's estimator or Pipeline (a file without preprocessing is noted by the predict
    service, so load_model's warning is not repeated)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return load_model(spec)


def load_predictor(spec: str, args: argparse.Namespace) -> tuple[Any, Any, str]:
    """The model ``spec`` names, what preprocesses its rows and a description.

    ``spec`` is a run id in the store, a run folder, a run zip or a model file (folder or zip). The
    preprocessing is the one the model file carries; for an older file without one, a run's is
    rebuilt from its data (a run zip's data set inside), and a plain model file has none (None).
    """
    model, prep, what = _predictor(spec, args)
    return (*pipeline_parts(model, prep), what)


def _predictor(spec: str, args: argparse.Namespace) -> tuple[Any, Any, str]:
    path = Path(spec).expanduser()
    if not path.exists():
        if RUN_ID_RE.fullmatch(spec):
            store = open_store(args)
            record = store.get(spec)
            return store.load_model(spec), run_preprocessing(store, spec), f"run {spec} '{record.name}'"
        raise TreevizError(f"There is no run or model file {spec!r}; give a run id (`{PROG} list`) or the "
                           "path of a model file or run zip.")
    if path.is_dir():
        store = _run_folder_store(path)
        if store is not None:
            record = store.get(path.name)
            return store.load_model(path.name), run_preprocessing(store, path.name), f"run {path.name} '{record.name}'"
        return _model_file(path), None, f"model {path}"
    data = read_model_bytes(path, "model file")
    model = _model_file(data)
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except zipfile.BadZipFile:  # pragma: no cover - load_model read it as a zip already
        names = set()
    if RUN_JSON in names and DATASET_PREFIX + DATASET_JSON in names and not isinstance(model, Pipeline):
        files = read_run_zip(data)
        record = RunRecord.from_dict(json.loads(files[RUN_JSON].decode("utf-8")))
        dataset = Dataset.from_files(files[DATASET_PREFIX + DATASET_JSON], files[DATASET_PREFIX + ARRAYS],
                                     record.dataset_fingerprint)
        prepared = prepare(dataset, record.prep_config)
        if prepared.fingerprint != record.prepared_fingerprint:
            raise TreevizError(f"The data in {path.name} cannot be rebuilt exactly (its preprocessing fingerprint "
                               "differs), so its rows cannot be preprocessed as in training.")
        return model, prepared, f"run zip {path.name} '{record.name}'"
    return model, None, f"model {path.name}"


def cmd_predict(args: argparse.Namespace) -> int:
    """``predict``: a model's predictions for the rows of a table, as CSV (:mod:`treeviz.services.views.predict`)."""
    model, prepared, what = load_predictor(args.model, args)
    table_path = Path(args.table).expanduser()
    df = read_table_file(table_path, args.encoding)
    missing = [c for c in args.keep if c not in df.columns]
    if missing:
        raise TreevizError(f"--keep names column(s) {', '.join(repr(c) for c in missing)} that "
                           f"{table_path.name} lacks.")
    if args.proba and not offers_proba(model):
        raise TreevizError(f"--proba needs a classifier; {what} is a model for {model_task(model)}.")
    # the Predict page's service: a kept column the model does not read is not noted as ignored
    result = predict_table(df, model, prepared, keep=list(dict.fromkeys(args.keep)), proba=args.proba,
                           name=table_path.name, what=what)
    for text in result.notes:
        note(args, f"note: {text}")
    write_output(args.out, predictions_csv(result.frame), args, "predictions")
    return OK
