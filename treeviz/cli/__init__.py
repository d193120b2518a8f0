"""The command line, ``python -m treeviz``: train, sweep, grid, predict, export, report, list and import runs.

It drives the same pieces as the app, so what it does matches the app exactly:

* the model families and their parameters come from the registry (:func:`models.registry.families`):
  ``--family``, ``--preset`` and ``--param NAME=VALUE`` are checked against each family's declared
  schema, and ``--help`` lists them;
* data sets are the built-in catalogue, a CSV/TSV/Parquet file read like an upload on the Data page
  (:func:`treeviz.services.data.read_table`, :func:`treeviz.services.data.table_to_dataset`), or a saved data set;
* training goes through :func:`treeviz.services.training.train_run`, λ paths through
  :func:`treeviz.services.sweep.run_sweep` and grids (λ × depth × seed, locally or on a Dask cluster) through
  :func:`treeviz.services.grid.run_grid`, and every run lands in the run store the app reads
  (:class:`treeviz.services.runs.RunStore`, ``$TREEVIZ_HOME`` or ``--home``);
* run zips are :mod:`treeviz.services.run_archive`'s, rules are :func:`treeviz.readers.rules.rules` on
  :meth:`treeviz.services.run_view.RunView.rules_tree`, code is :mod:`treeviz.readers.codegen`'s (as the Tree
  explorer offers it), reports are :func:`treeviz.ui.report.run_report`'s, and new rows are encoded for a model by
  :func:`treeviz.services.data.table.table_to_features` (the upload's encoding) and preprocessed by the run's
  fitted imputer and scaler.

Results go to stdout (tables, or JSON with ``--json``); progress bars, notes and messages go to
stderr. Exit codes (see :data:`EXIT_CODES`): 0 success, 1 a problem treeviz explains in one sentence
(any :class:`~models.ground.errors.TreevizError`, or an ``OSError`` such as a full disk, printed as
``treeviz: error: <sentence>``), 2 a command line argparse refuses, 70 a crash (any other exception:
a bug, named in one line; ``--debug`` adds the traceback), 130 interrupted by Ctrl-C. The first
Ctrl-C during training asks the model to stop after its current epoch; the run is then stored with
status "cancelled", as the app's Cancel button does. A second Ctrl-C stops at once and stores
nothing.
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import shutil
import signal
import stat
import sys
import textwrap
import threading
import traceback
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd
from tqdm import tqdm

from models.base import Callback
from models.ground import threads
from models.ground.errors import TrainingCancelled, TreevizError
from models.ground.jsonio import jsonable
from models.persist import load_model
from models.registry import families, get_family
from models.schema import ANY_DATA_TASKS, TASKS, Family, Param
from treeviz.services.atomic import replace_file
from treeviz.services.data import CATALOGUE, Dataset, PreparedData, PrepConfig, TableOptions, load_dataset, prepare
from treeviz.services.data.dataset import ARRAYS, DATASET_JSON
from treeviz.services.data.preprocess import SCALINGS
from treeviz.services.data.table import FEATURE_SOURCES, table_to_features
from treeviz.services.data.upload import ENCODINGS, max_upload_mb, read_table, suggest_target, table_to_dataset
from treeviz.services.export import ALL_TERMS, TreeExport, render, tree_exports
from treeviz.services.grid import (
    SCHEDULER_ENV,
    GridResult,
    GridTrial,
    check_grid,
    default_scheduler,
    grid_points,
    run_grid,
    scheduler_address,
    value_text,
)
from treeviz.services.quantities import format_size, headline, run_headline, size_label
from treeviz.services.run_archive import DATASET_PREFIX, MAX_IMPORT_BYTES, export_zip, import_zip, read_run_zip
from treeviz.services.runs import FINGERPRINT_RE, RUN_ID_RE, RUN_JSON, RunRecord, RunStore
from treeviz.services.sweep import SweepResult, run_sweep, value_grid
from treeviz.services.training import run_warnings, train_run
from treeviz.ui.report import run_report

PROG = "python -m treeviz"
OK, USER_ERROR, USAGE, CRASH, INTERRUPTED, BROKEN_PIPE = 0, 1, 2, 70, 130, 141
#: What each exit status means; shown in ``--help``.
EXIT_CODES = (
    (OK, "success"),
    (USER_ERROR, "treeviz refused the request and said why in one sentence on stderr "
                 "('treeviz: error: ...'): a missing file, an unknown run, a bad parameter value, a full "
                 "disk, a folder it may not write to, ..."),
    (USAGE, "the command line itself is wrong (unknown command, option, family or choice, a malformed "
            "--param, a number out of range); argparse prints the usage"),
    (CRASH, "treeviz crashed: a bug, named in one line on stderr ('treeviz: internal error: ...'); "
            "--debug prints the traceback"),
    (INTERRUPTED, "interrupted by Ctrl-C (a run being trained is stored with status 'cancelled')"),
    (BROKEN_PIPE, "stdout was closed early (for example piped into head)"),
)
TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".gz", ".parquet", ".pq")
_TRUE, _FALSE, _NONE = ("true", "yes", "on", "1"), ("false", "no", "off", "0"), ("none", "null")


# ---------------------------------------------------------------------------- help texts

def _width() -> int:
    """Text width for help listings: the terminal's, between 60 and 100 columns."""
    return max(60, min(100, shutil.get_terminal_size((100, 24)).columns) - 2)


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _value_text(param: Param, value: Any) -> str:
    """A parameter value as it is typed after ``--param NAME=``."""
    if value is None:
        return f"none ({param.optional_label})" if param.optional_label else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _number(value)


def param_summary(param: Param) -> str:
    """Type, range or choices, and default of one parameter on one line.

    Parameters
    ----------
    param : Param
        A parameter of a family's schema.

    Returns
    -------
    str
        For example ``"int 1 to 64, or none (unlimited); default none (unlimited)"``.
    """
    if param.kind == "choice":
        kind = "one of " + ", ".join(str(c) for c in param.choices)
    elif param.kind == "bool":
        kind = "true or false"
    elif param.kind == "text":
        kind = "text"
    else:
        kind = "integer seed" if param.kind == "seed" else param.kind
        if param.low is not None and param.high is not None:
            kind += f" {_number(param.low)} to {_number(param.high)}"
        elif param.low is not None:
            kind += f" ≥ {_number(param.low)}"
        elif param.high is not None:
            kind += f" ≤ {_number(param.high)}"
    if param.optional_label is not None:
        kind += f", or none ({param.optional_label})"
    return f"{kind}; default {_value_text(param, param.default)}"


def describe_family(family: Family, task: str | None = None, *, width: int | None = None) -> str:
    """A family's key, label, tasks, presets, λ path and every parameter with its help.

    Parameters
    ----------
    family : Family
        The family to describe.
    task : str, optional
        Only the parameters that apply to this task (all when None; a parameter declared per task
        then shows the task it belongs to).
    width : int, optional
        Line width (the terminal's by default).

    Returns
    -------
    str
        Several lines, no trailing newline.
    """
    width = width or _width()
    wrap = textwrap.TextWrapper(width=width, initial_indent="    ", subsequent_indent="    ")
    lines = [f"{family.key}: {family.label}", wrap.fill(family.description)]
    lines.append(f"    tasks: {', '.join(family.tasks)}")
    presets = list(family.presets) if task is None else family.presets_for(task)
    if presets:
        lines.append("    presets (--preset): " + ", ".join(f"'{p}'" for p in presets))
    if family.lambda_path is not None:
        path = family.lambda_path
        start = "warm-started from the previous point" if path.warm_start else "each point from the same start"
        lines.append(f"    λ path (sweep): {path.param} from {path.low:g} to {path.high:g}, "
                     f"{path.count} points, {start}")
    lines.append("    parameters (--param NAME=VALUE):")
    detail = textwrap.TextWrapper(width=width, initial_indent=" " * 10, subsequent_indent=" " * 10)
    for param in family.params_for(task):
        shared = sum(1 for p in family.params if p.name == param.name) > 1
        where = f" [{', '.join(param.tasks)}]" if param.tasks and (shared or task is None) else ""
        marks = []
        if param.advanced:
            marks.append("advanced")
        if param.name == "device" or not param.form:
            marks.append("set with --device" if param.name == "device" else "not in the app's form")
        mark = f" ({', '.join(marks)})" if marks else ""
        lines.append(f"      {param.name}{where}{mark}: {param_summary(param)}")
        lines.append(detail.fill(param.help))
    return "\n".join(lines)


def families_help(task: str | None = None) -> str:
    """Every family described by :func:`describe_family`, separated by blank lines."""
    return "\n\n".join(describe_family(f, task) for f in families().values())


def exit_codes_help() -> str:
    """The exit statuses, one per line, for ``--help`` epilogs."""
    wrap = textwrap.TextWrapper(width=_width(), initial_indent="  ", subsequent_indent=" " * 7)
    return "exit status:\n" + "\n".join(wrap.fill(f"{code:<4} {text}") for code, text in EXIT_CODES)


# ---------------------------------------------------------------------------- output helpers

def _note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr, unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(f"treeviz: {text}", file=sys.stderr)


def format_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """Rows as an aligned plain-text table.

    Parameters
    ----------
    rows : sequence of mappings
        One mapping per row; missing keys show as ``–``.
    columns : sequence of (key, header)
        The columns, in order.

    Returns
    -------
    str
        A header line, then one line per row, no trailing newline.
    """
    cells = [[h for _, h in columns]]
    for row in rows:
        cells.append(["–" if row.get(k) is None else str(row.get(k)) for k, _ in columns])
    widths = [max(len(r[j]) for r in cells) for j in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def _write_output(out: str | None, data: bytes | str, args: argparse.Namespace, what: str) -> None:
    """Write ``data`` to stdout (``out`` None or ``-``) or atomically to the file ``out``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if out in (None, "-"):
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        return
    path = Path(out).expanduser()
    if path.is_dir():
        raise TreevizError(f"{path} is a folder; give a file name to write the {what} to.")
    if not path.parent.is_dir():
        raise TreevizError(f"The folder {path.parent} does not exist; create it or write the {what} elsewhere.")
    try:
        if path.exists() and not path.is_file():  # a device or a pipe (/dev/null, /dev/stdout): write into it
            with path.open("wb") as handle:
                handle.write(raw)
        else:  # a file: replaced whole or not at all (never the device's own node)
            replace_file(path, raw)
    except OSError as err:
        raise TreevizError(f"Could not write {path} ({err.strerror or err}).") from None
    _note(args, f"wrote the {what} to {path} ({len(raw):,} bytes)")


def _read_bytes(path: Path, what: str, limit: int, limit_text: str) -> bytes:
    """The file's bytes, refused when it holds more than ``limit`` bytes.

    A regular file is refused by its size before anything is read; a device or a pipe (which has no
    size) is read up to ``limit + 1`` bytes, so ``/dev/zero`` cannot fill the memory.
    """
    if path.is_dir():
        raise TreevizError(f"{path} is a folder, not a {what}.")
    too_big = TreevizError(f"{path} is larger than {limit_text}; give a smaller {what}.")
    try:
        with path.open("rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > limit:
                raise too_big
            data = handle.read(limit + 1)
    except FileNotFoundError:
        raise TreevizError(f"There is no file {path}.") from None
    except OSError as err:
        raise TreevizError(f"Could not read {path} ({err.strerror or err}).") from None
    if len(data) > limit:
        raise too_big
    return data


def _read_table_file(path: Path, encoding: str) -> pd.DataFrame:
    """A table file read like an upload, refused beyond the upload limit before it is read whole."""
    limit = max_upload_mb()
    data = _read_bytes(path, "table file", int(limit * 1024**2),
                       f"the upload limit of {limit:g} MB (TREEVIZ_MAX_UPLOAD_MB)")
    return read_table(path.name, data, encoding=encoding)


def _read_model_bytes(path: Path, what: str) -> bytes:
    """A model file or run zip, refused beyond the largest zip the store imports."""
    return _read_bytes(path, what, MAX_IMPORT_BYTES, f"{MAX_IMPORT_BYTES / 1024**3:g} GiB")


#: Text cells starting with one of these are formulas to a spreadsheet (OWASP's CSV injection list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell and column name that a spreadsheet would run as a formula
    prefixed with a single quote (numbers, negative ones included, are left as they are)."""
    def cell(value: Any) -> Any:
        return "'" + value if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value

    out = frame.rename(columns=lambda c: cell(str(c)))
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column].dtype):
            out[column] = out[column].map(cell)
    return out


def os_error_sentence(err: OSError) -> str:
    """An operating-system error (full disk, no permission, a file where a folder should be) as one
    sentence saying what to do."""
    where = f" ({err.filename})" if err.filename else ""
    advice = {
        errno.ENOSPC: "free some space, or choose another folder with --home or --out",
        errno.EDQUOT: "free some space, or choose another folder with --home or --out",
        errno.EACCES: "check its permissions, or choose another folder with --home or --out",
        errno.EPERM: "check its permissions, or choose another folder with --home or --out",
        errno.EROFS: "choose a folder on a writable disk with --home or --out",
        errno.ENOTDIR: "a part of that path is a file, not a folder; choose another path",
    }.get(err.errno, "check the path and try again")
    return f"{err.strerror or type(err).__name__}{where}: {advice}."


def _json(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)


def _created(record: RunRecord) -> str:
    return datetime.fromisoformat(record.created).strftime("%Y-%m-%d %H:%M:%S")


def record_json(record: RunRecord) -> dict[str, Any]:
    """A run's record as JSON-ready dict, with its headline metric (or None) added."""
    found = run_headline(record)
    headline = None if found is None else {"key": found.key, "label": found.title, "value": found.value}
    return {**record.to_dict(), "headline": headline}


def _store(args: argparse.Namespace) -> RunStore:
    """The run store of ``--home`` (else ``$TREEVIZ_HOME``, ...), refused when that is not a folder."""
    store = RunStore(args.home)
    if store.root.exists() and not store.root.is_dir():
        raise TreevizError(f"The run store {store.root} is not a folder; give a folder with --home "
                           "(or $TREEVIZ_HOME).")
    return store


# ---------------------------------------------------------------------------- progress and Ctrl-C

class StopRequest:
    """Ctrl-C during training: the first asks training to stop after its epoch, the second aborts.

    Use :meth:`catching` around training; callbacks read :attr:`requested`.
    """

    def __init__(self) -> None:
        self.requested = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ntreeviz: stopping after the current epoch; the run will be stored as cancelled "
              "(press Ctrl-C again to stop at once and store nothing).", file=sys.stderr)

    @contextmanager
    def catching(self) -> Iterator[StopRequest]:
        """Handle SIGINT as above inside the block (only in the main thread, where Python can)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


class ProgressBar(Callback):
    """Training progress as a tqdm bar on stderr, and the hook through which Ctrl-C stops training.

    Parameters
    ----------
    family : Family
        Names the bar's unit (``Family.curves.x``: epoch, iteration, ...) and the numbers shown
        beside it (the first keys of its curve panels found in each record).
    enabled : bool or None
        None shows the bar only when stderr is a terminal.
    stop : StopRequest, optional
        When it has been requested, the next ``on_epoch_end`` or ``on_step`` raises
        ``TrainingCancelled``, so the estimator ends its loop with the epochs done and the run is
        stored as cancelled.
    leave, position, file
        As for :class:`tqdm.tqdm` (a sweep shows the epoch bar below its points bar).
    """

    def __init__(self, family: Family, *, enabled: bool | None = None, stop: StopRequest | None = None,
                 leave: bool = True, position: int = 0, file: TextIO | None = None) -> None:
        self.family = family
        self.enabled = enabled
        self.stop = stop
        self.leave = leave
        self.position = position
        self.file = file
        self.bar: tqdm | None = None
        self.epochs = 0
        curves = family.curves
        self.unit = curves.x if curves is not None else "epoch"
        self.keys = tuple(k for p in curves.panels for k in p.keys) if curves is not None else ()

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        """Open a bar for ``total`` epochs (an open-ended counter when the total is unknown)."""
        self._close()
        self.epochs = 0
        total = kwargs.get("total")
        self.bar = tqdm(total=total if isinstance(total, int) and total > 0 else None, desc="training",
                        unit=self.unit, leave=self.leave, position=self.position, dynamic_ncols=True,
                        disable=None if self.enabled is None else not self.enabled,
                        file=self.file if self.file is not None else sys.stderr)

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        """Advance the bar, show up to three of the family's curve values, honour a stop request."""
        self.epochs += 1
        if self.bar is not None:
            record = kwargs.get("record") or {}
            shown = {k: f"{record[k]:.4g}" for k in self.keys
                     if isinstance(record.get(k), (int, float)) and not isinstance(record.get(k), bool)}
            if shown:
                self.bar.set_postfix(dict(list(shown.items())[:3]), refresh=False)
            self.bar.update(1)
        self.on_step(estimator)

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        """Honour a stop request inside long phases between records too (the estimator asks often)."""
        if self.stop is not None and self.stop.requested:
            raise TrainingCancelled()

    def on_train_end(self, estimator: Any, **kwargs: Any) -> None:
        """Close the bar."""
        self._close()

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class PointsBar(Callback):
    """A sweep's progress over its points: one step per fit, the current value beside the bar."""

    def __init__(self, param: str, count: int, *, enabled: bool | None = None, file: TextIO | None = None) -> None:
        self.param = param
        self.bar = tqdm(total=count, desc="λ path", unit="point", position=0, dynamic_ncols=True,
                        disable=None if enabled is None else not enabled,
                        file=file if file is not None else sys.stderr)

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        """Show the value now being fitted."""
        value = estimator.get_params().get(self.param)
        self.bar.set_postfix({self.param: _number(value)})

    def on_train_end(self, estimator: Any, **kwargs: Any) -> None:
        """One point done."""
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


# ---------------------------------------------------------------------------- data

def _table_options_given(args: argparse.Namespace) -> list[str]:
    given = []
    for option, value in (("--target", args.target), ("--no-target", args.no_target or None),
                          ("--data-task", args.data_task), ("--drop-missing-target", args.drop_missing_target or None),
                          ("--image", args.image), ("--encoding", args.encoding)):
        if value is not None:
            given.append(option)
    return given


def load_data(args: argparse.Namespace, store: RunStore) -> Dataset:
    """The data set ``--data`` names: a table file, a built-in key or a saved data set's fingerprint.

    A file is read as the Data page reads an upload: :func:`read_table` with ``--encoding``, then
    :func:`table_to_dataset` with the target column (``--target``, else the one the page would
    suggest; ``--no-target`` for none), ``--data-task``, ``--drop-missing-target`` and ``--image``.
    """
    spec = str(args.data)
    path = Path(spec).expanduser()
    table_options = _table_options_given(args)
    if path.exists():
        df = _read_table_file(path, args.encoding or "auto")
        target = None if args.no_target else (args.target or suggest_target(df))
        options = TableOptions(target=target, task=args.data_task or "auto",
                               drop_missing_target=bool(args.drop_missing_target), image=args.image or "auto")
        return table_to_dataset(df, path.name, options, source=f"file: {path.name}")
    if spec in CATALOGUE or FINGERPRINT_RE.fullmatch(spec):
        if table_options:
            verb = "applies" if len(table_options) == 1 else "apply"
            raise TreevizError(f"{', '.join(table_options)} {verb} only to a table file, and '{spec}' is a "
                               f"{'built-in' if spec in CATALOGUE else 'saved'} data set; leave them out.")
        return load_dataset(spec) if spec in CATALOGUE else store.load_dataset(spec)
    if path.suffix.lower() in TABLE_SUFFIXES or os.sep in spec or "/" in spec:
        raise TreevizError(f"There is no file {path}.")
    raise TreevizError(f"'{spec}' is neither a table file, a built-in data set ({', '.join(CATALOGUE)}) nor the "
                       f"fingerprint of a saved data set; `{PROG} datasets` lists them.")


def prep_config(args: argparse.Namespace) -> PrepConfig:
    """The preparation options (scaling, test and validation fractions, split seed)."""
    return PrepConfig(scaling=args.scaling, test_size=args.test_size, val_size=args.val_size, seed=args.seed)


def load_prepared_data(args: argparse.Namespace, store: RunStore) -> PreparedData:
    """:func:`load_data`, then :func:`treeviz.services.data.prepare`; their notes go to stderr."""
    dataset = load_data(args, store)
    prepared = prepare(dataset, prep_config(args))
    for note in prepared.notes:  # the data set's notes, then the split's
        _note(args, f"note: {note}")
    return prepared


# ---------------------------------------------------------------------------- families and parameters

def resolve_task(family: Family, dataset: Dataset, task: str | None) -> str:
    """The task to train: ``task`` when given, else the data set's when the family does it, else the
    first task the family runs on any data set (clustering, embedding), as the Train page offers."""
    if task is not None:
        family.estimator_class(task)  # a sentence if the family lacks it
        return task
    if dataset.task in family.tasks:
        return dataset.task
    for any_task in ANY_DATA_TASKS:
        if any_task in family.tasks:
            return any_task
    raise TreevizError(f"{family.label} does not do {dataset.task}, the task of '{dataset.name}'; it supports "
                       f"{', '.join(family.tasks)}. Choose another data set or family.")


def parse_param_value(param: Param | None, raw: str) -> Any:
    """A ``--param`` value typed on the command line, as the schema's :meth:`Param.validate` takes it.

    Parameters
    ----------
    param : Param or None
        The parameter (None for a name the family lacks: the text is passed on, and validation
        names the unknown parameter).
    raw : str
        The text after ``NAME=``.

    Returns
    -------
    Any
        None for ``none``/``null`` or the parameter's optional label (e.g. ``unlimited``) where None
        is allowed; True/False for a bool (``true/false``, ``yes/no``, ``on/off``, ``1/0``); else the
        text, which :meth:`Param.validate` turns into a number where one is expected.
    """
    text = raw.strip()
    if param is None:
        return text
    low = text.lower()
    if param.optional_label is not None or param.kind == "seed":
        if low in _NONE or (param.optional_label is not None and low == param.optional_label.lower()):
            return None
    if param.kind == "bool":
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise TreevizError(f"Parameter '{param.name}' must be true or false, got {raw!r}.")
    return text


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: a whole number from ``low`` (to ``high``), else a usage error that says so."""
    bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected a whole number {bounds}, got {text!r}")
        return value

    return parse


def job_count(text: str) -> int:
    """``--jobs``: -1 (every core or Dask thread) or a whole number of at least 1."""
    try:
        value = whole_number(-1)(text)
    except argparse.ArgumentTypeError:
        value = 0
    if value == 0:
        raise argparse.ArgumentTypeError(f"expected -1 (every core) or a whole number of at least 1, got {text!r}")
    return value


def device_name(text: str) -> str:
    """``--device``: auto, cpu, cuda or cuda:N (whether the GPU exists is checked when training)."""
    device = text.strip().lower()
    if device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")


def sql_table(text: str) -> str:
    """``--table``: a table name that is not blank."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the name of a table, got an empty one")
    return text


def _name_value(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


def model_params(family: Family, task: str, preset: str | None,
                 pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The preset's values updated by the ``--param`` pairs, checked against the family's schema.

    Raises
    ------
    TreevizError
        For an unknown preset or parameter, or a value the schema refuses.
    """
    values: dict[str, Any] = {}
    if preset is not None:
        offered = family.presets_for(task)
        if preset not in offered:
            known = ", ".join(f"'{p}'" for p in offered) or "none"
            raise TreevizError(f"{family.label} has no preset {preset!r} for {task}; presets: {known}.")
        values.update(family.presets[preset])
    schema = {p.name: p for p in family.params_for(task)}
    for name, raw in pairs:
        values[name] = parse_param_value(schema.get(name), raw)
    return family.validate_params(values, task)


def _bars(args: argparse.Namespace) -> bool | None:
    """Whether to show progress bars: ``--progress``/``--no-progress`` when given, none with
    ``--quiet``, else only when stderr is a terminal (None)."""
    if args.progress is not None:
        return bool(args.progress)
    return False if args.quiet else None


def _has_device(family: Family, task: str) -> bool:
    return any(p.name == "device" for p in family.params_for(task))


def _apply_thread_budget(family: Family, task: str) -> None:
    """One job's share of the cores for torch families (those with a device), as an app job gets."""
    if _has_device(family, task):
        threads.apply_budget(threads.job_budget(1))


def _device_note(args: argparse.Namespace, family: Family, task: str) -> None:
    """Say that ``--device`` is ignored for a family that has no device (it trains on the CPU)."""
    if args.device is not None and not _has_device(family, task):
        _note(args, f"note: {family.label} has no device setting (it trains on the CPU); --device is ignored.")


# ---------------------------------------------------------------------------- commands

def cmd_families(args: argparse.Namespace) -> int:
    """``families``: every family's parameters (or the named ones), as text or JSON."""
    chosen = [get_family(k) for k in args.keys] if args.keys else list(families().values())
    if args.task is not None:
        chosen = [f for f in chosen if args.task in f.tasks]
    if args.json:
        out = []
        for f in chosen:
            params = [{"name": p.name, "label": p.title, "kind": p.kind, "default": p.default, "help": p.help,
                       "low": p.low, "high": p.high, "choices": list(p.choices), "optional_label": p.optional_label,
                       "tasks": list(p.tasks), "advanced": p.advanced} for p in f.params_for(args.task)]
            path = f.lambda_path
            out.append({"key": f.key, "label": f.label, "description": f.description, "tasks": list(f.tasks),
                        "presets": {k: dict(v) for k, v in f.presets.items()}, "params": params,
                        "lambda_path": None if path is None else {
                            "param": path.param, "low": path.low, "high": path.high, "count": path.count,
                            "warm_start": path.warm_start}})
        print(_json(out))
        return OK
    print("\n\n".join(describe_family(f, args.task) for f in chosen))
    return OK


def cmd_datasets(args: argparse.Namespace) -> int:
    """``datasets``: the built-in data sets and those saved in the run store."""
    builtin = [{"key": e.key, "task": e.task, "label": e.label, "group": e.group} for e in CATALOGUE.values()]
    saved = _store(args).list_datasets()
    if args.json:
        print(_json({"builtin": builtin, "saved": saved}))
        return OK
    print("Built-in data sets (--data KEY):")
    print(format_table(builtin, [("key", "key"), ("task", "task"), ("label", "data set"), ("group", "group")]))
    print(f"\nSaved data sets in {_store(args).root} (--data FINGERPRINT):")
    if saved:
        rows = [{**s, "shape": f"{s['n_samples']} × {s['n_features']}"} for s in saved]
        print(format_table(rows, [("fingerprint", "fingerprint"), ("name", "name"), ("task", "task"),
                                  ("shape", "rows × features")]))
    else:
        print("(none yet)")
    return OK


def _params_help_requested(args: argparse.Namespace) -> bool:
    if not args.help_params:
        return False
    if args.family is None:
        args.parser.error("--help-params needs --family")
    family = get_family(args.family)
    if args.task is not None:
        family.estimator_class(args.task)  # a sentence if the family lacks the task
    print(describe_family(family, args.task))
    return True


def _require(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is None]
    if missing:
        args.parser.error(f"the following arguments are required: {', '.join(missing)}")


def _run_lines(record: RunRecord, prepared: PreparedData | None = None) -> list[str]:
    ds = record.dataset
    lines = [f"run       {record.run_id}", f"name      {record.name}",
             f"family    {record.family} ({record.task})"]
    data = f"{record.dataset_name}, {ds.get('n_samples', '?')} rows × {ds.get('n_features', '?')} features"
    if prepared is not None:
        data += (f"; split {prepared.train_idx.size}/{prepared.val_idx.size}/{prepared.test_idx.size} "
                 f"(train/val/test), {prepared.config.scaling} scaling, seed {prepared.config.seed}")
    lines.append(f"data      {data}")
    lines.append(f"status    {record.status} in {record.duration_s:.2f} s")
    found = run_headline(record)
    if found is not None:
        lines.append(f"headline  {found.title} {found.value:.4f}")
    lines.append(f"size      {record.n_nodes} nodes, {record.n_leaves} leaves, depth {record.depth}")
    lines.append("metrics")
    numbers = {k: v for k, v in record.metrics.items() if isinstance(v, (int, float))}
    width = max((len(k) for k in numbers), default=0)
    lines += [f"  {k.ljust(width)}  {v:.4g}" for k, v in numbers.items()]
    return lines


def _training_setup(args: argparse.Namespace) -> tuple[RunStore, Family, PreparedData, str, dict[str, Any]]:
    """What training needs from the arguments: the store, the family, the prepared data, the task
    and the model's parameters; the thread budget is applied for the family."""
    store = _store(args)
    family = get_family(args.family)
    prepared = load_prepared_data(args, store)
    task = resolve_task(family, prepared.dataset, args.task)
    params = model_params(family, task, args.preset, args.param)
    _device_note(args, family, task)
    _apply_thread_budget(family, task)
    return store, family, prepared, task, params


def cmd_train(args: argparse.Namespace) -> int:
    """``train``: fit one model on a data set and store it as a run."""
    if _params_help_requested(args):
        return OK
    _require(args, "data", "family")
    store, family, prepared, task, params = _training_setup(args)
    stop = StopRequest()
    bar = ProgressBar(family, enabled=_bars(args), stop=stop)
    try:
        with stop.catching():
            record = train_run(family.key, task, params, prepared, store=store, callbacks=[bar],
                               device=args.device, name=args.name)
    except TrainingCancelled:
        print("treeviz: training was cancelled before a usable model existed; nothing was stored.",
              file=sys.stderr)
        return INTERRUPTED
    finally:
        bar._close()
    if args.json:
        print(_json(record_json(record)))
    elif args.quiet:
        print(record.run_id)
    else:
        print("\n".join(_run_lines(record, prepared)))
    for warning in run_warnings(record):  # a fit that diverged or learned nothing says so, even with --quiet
        print(f"treeviz: {warning}", file=sys.stderr)
    if record.status == "cancelled":
        _note(args, f"training was stopped at your request; the model as it stood is stored as run {record.run_id}.")
        return INTERRUPTED
    return OK


#: The most points one λ path may have.
MAX_SWEEP_POINTS = 1000


def sweep_values(args: argparse.Namespace, family: Family) -> list[float]:
    """The values to sweep: ``--values``, else ``--low/--high/--count`` filled in from the family's
    λ path grid (geometric unless ``--linear``); at most :data:`MAX_SWEEP_POINTS`."""
    if args.values:
        if any(v is not None for v in (args.low, args.high, args.count)):
            args.parser.error("give either --values or --low/--high/--count, not both")
        out = []
        for chunk in args.values:
            for part in str(chunk).split(","):
                if part.strip():
                    try:
                        out.append(float(part))
                    except ValueError:
                        args.parser.error(f"argument --values: not a number: {part.strip()!r}")
        if len(set(out)) > MAX_SWEEP_POINTS:
            raise TreevizError(f"--values gives {len(set(out))} values; a λ path has at most {MAX_SWEEP_POINTS}.")
        return out
    path = family.lambda_path
    swept_default = path is not None and (args.sweep_param in (None, path.param))
    low = args.low if args.low is not None else (path.low if swept_default else None)
    high = args.high if args.high is not None else (path.high if swept_default else None)
    count = args.count if args.count is not None else (path.count if swept_default else 6)
    if low is None or high is None:
        raise TreevizError(f"There is no default grid for '{args.sweep_param}'; give --values or --low and --high.")
    return value_grid(float(low), float(high), int(count), log=not args.linear)


def sweep_rows(results: Sequence[SweepResult], family: Family, param: str) -> list[dict[str, Any]]:
    """One table row per stored point: value, run id, status, headline and the λ path's sizes."""
    sizes = family.lambda_path.sizes if family.lambda_path is not None else ("n_decision_nodes",)
    rows = []
    for r in results:
        record = r.record
        row = {**r.metrics, "n_active_nodes": r.n_active_nodes, "active_depth": r.active_depth,
               "n_nodes": record.n_nodes if record else None}
        found = run_headline(record) if record is not None else None
        rows.append({param: _number(r.value), "run": record.run_id if record else None,
                     "status": record.status if record else None,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     **{k: format_size(k, row) for k in sizes}})
    return rows


def cmd_sweep(args: argparse.Namespace) -> int:
    """``sweep``: a λ path, one stored run per value."""
    if _params_help_requested(args):
        return OK
    _require(args, "data", "family")
    store = _store(args)
    family = get_family(args.family)
    param = args.sweep_param or (family.lambda_path.param if family.lambda_path is not None else None)
    if param is None:
        raise TreevizError(f"{family.label} has no λ path; name the parameter to sweep with --sweep-param.")
    values = sweep_values(args, family)
    prepared = load_prepared_data(args, store)
    task = resolve_task(family, prepared.dataset, args.task)
    if any(name == param for name, _ in args.param):
        raise TreevizError(f"--param {param}=... conflicts with the sweep over {param}; leave it out.")
    params = model_params(family, task, args.preset, args.param)
    _device_note(args, family, task)
    _apply_thread_budget(family, task)
    stop = StopRequest()
    enabled = _bars(args)
    points = PointsBar(param, len(set(values)), enabled=enabled)
    bar = ProgressBar(family, enabled=enabled, stop=stop, leave=False, position=1)
    try:
        with stop.catching():
            results = run_sweep(family.key, task, params, prepared, values, param=param, warm_start=args.warm_start,
                                store=store, callbacks=[points, bar], device=args.device, name=args.name)
    finally:
        bar._close()
        points.close()
    if args.json:
        print(_json([{"value": r.value, "n_active_nodes": r.n_active_nodes, "active_depth": r.active_depth,
                      **record_json(r.record)} for r in results]))
    elif args.quiet:
        print("\n".join(r.record.run_id for r in results))
    else:
        sizes = family.lambda_path.sizes if family.lambda_path is not None else ("n_decision_nodes",)
        columns = [(param, param), ("run", "run"), ("status", "status"), ("headline", "headline"),
                   *[(k, size_label(k)) for k in sizes]]
        if results:
            sweep = results[0].record.sweep or {}
            print(f"λ path '{sweep.get('label', '')}' over {param} ({len(results)} of {len(set(values))} points; "
                  f"sweep id {sweep.get('id', '?')})")
        print(format_table(sweep_rows(results, family, param), columns))
    if stop.requested:
        _note(args, "the λ path was stopped at your request; the points finished before are stored.")
        return INTERRUPTED
    return OK


def grid_rows(result: GridResult, family: Family, task: str) -> list[dict[str, Any]]:
    """One table row per trial: its number, the point's values, run id, status, headline and size
    (or the error of a failed trial)."""
    rows = []
    for t in result.trials:
        found = headline(t.metrics, family.key, task)
        rows.append({"trial": t.index + 1, **{k: value_text(v) for k, v in t.params.items()}, "run": t.run_id,
                     "status": t.status or "failed", "seconds": f"{t.duration_s:.2f}" if t.error is None else None,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     "nodes": None if t.error else _number(t.metrics.get("n_decision_nodes")),
                     "error": t.error})
    return rows


def cmd_grid(args: argparse.Namespace) -> int:
    """``grid``: one stored run per point of a grid of values, here or on a Dask cluster."""
    if _params_help_requested(args):
        return OK
    _require(args, "data", "family")
    if not args.grid:
        args.parser.error("give at least one --grid NAME=V1,V2,...")
    names = [name for name, _ in args.grid]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        args.parser.error(f"--grid {twice[0]}=... is given more than once; list all its values in one option")
    fixed = sorted({name for name, _ in args.param} & set(names))
    if fixed:
        raise TreevizError(f"--param {fixed[0]}=... conflicts with the grid over {fixed[0]}; leave it out.")
    if args.local and args.scheduler:
        args.parser.error("give either --scheduler or --local, not both")
    scheduler = None if args.local else (args.scheduler if args.scheduler is not None else default_scheduler())
    scheduler = scheduler_address(scheduler)  # a malformed address is refused before the data is read
    store, family, prepared, task, params = _training_setup(args)
    grid = check_grid(family, task, dict(args.grid))
    size = len(grid_points(grid))
    bar = tqdm(total=size, desc="grid", unit="trial", dynamic_ncols=True,
               disable=None if _bars(args) is None else not _bars(args), file=sys.stderr)

    def advance(trial: GridTrial) -> None:
        bar.update(1)

    if scheduler:
        _note(args, f"running the grid on the Dask cluster at {scheduler}")
    try:
        result = run_grid(family.key, task, params, prepared, grid, store=store, scheduler=scheduler,
                          n_jobs=args.jobs, on_trial=advance, device=args.device, name=args.name)
    finally:
        bar.close()
    stored = [t for t in result.trials if t.run_id is not None]
    if args.json:
        print(_json([{"index": t.index, "params": t.params, "error": t.error,
                      **(record_json(store.get(t.run_id)) if t.run_id else {})} for t in result.trials]))
    elif args.quiet:
        print("\n".join(t.run_id for t in stored))
    else:
        print(f"Grid '{result.label}' ({len(stored)} of {result.size} trials stored, {result.where}; "
              f"grid id {result.grid_id})")
        columns = [("trial", "trial"), *[(n, n) for n in result.names], ("run", "run"), ("status", "status"),
                   ("seconds", "seconds"), ("headline", "headline"), ("nodes", "decision nodes")]
        if any(t.error for t in result.trials):
            columns.append(("error", "error"))
        print(format_table(grid_rows(result, family, task), columns))
    failed = len(result.trials) - len(stored)
    if failed:
        _note(args, f"{failed} of {result.size} trials failed; their errors are in the table.")
    return USER_ERROR if result.trials and not stored else OK


def _run_folder_store(path: Path) -> RunStore | None:
    """The store a run folder (``<root>/runs/<run_id>``) belongs to, or None for another folder."""
    if (path / RUN_JSON).is_file() and path.parent.name == "runs" and RUN_ID_RE.fullmatch(path.name):
        return RunStore(path.parent.parent)
    return None


def load_predictor(spec: str, args: argparse.Namespace) -> tuple[Any, PreparedData | None, str]:
    """The model ``spec`` names, its prepared training data (None when unknown) and a description.

    ``spec`` is a run id in the store, a run folder, a run zip (its data set inside rebuilds the
    preprocessing) or a plain model file (folder or zip: no preprocessing is known).
    """
    path = Path(spec).expanduser()
    if not path.exists():
        if RUN_ID_RE.fullmatch(spec):
            store = _store(args)
            record = store.get(spec)
            return store.load_model(spec), store.load_prepared(spec), f"run {spec} '{record.name}'"
        raise TreevizError(f"There is no run or model file {spec!r}; give a run id (`{PROG} list`) or the "
                           "path of a model file or run zip.")
    if path.is_dir():
        store = _run_folder_store(path)
        if store is not None:
            record = store.get(path.name)
            return store.load_model(path.name), store.load_prepared(path.name), f"run {path.name} '{record.name}'"
        return load_model(path), None, f"model {path}"
    data = _read_model_bytes(path, "model file")
    model = load_model(data)
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except zipfile.BadZipFile:  # pragma: no cover - load_model read it as a zip already
        names = set()
    if RUN_JSON in names and DATASET_PREFIX + DATASET_JSON in names:
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
    """``predict``: a model's predictions for the rows of a table, as CSV."""
    model, prepared, what = load_predictor(args.model, args)
    table_path = Path(args.table).expanduser()
    df = _read_table_file(table_path, args.encoding)
    missing = [c for c in args.keep if c not in df.columns]
    if missing:
        raise TreevizError(f"--keep names column(s) {', '.join(repr(c) for c in missing)} that "
                           f"{table_path.name} lacks.")
    names = prepared.dataset.feature_names if prepared is not None else tuple(model.feature_names_)
    sources = prepared.dataset.meta.get(FEATURE_SOURCES) if prepared is not None else None
    X_raw, notes = table_to_features(df, names, name=table_path.name, sources=sources)
    for note in notes:
        _note(args, f"note: {note}")
    if prepared is None:
        _note(args, f"note: {what} carries no preprocessing, so the rows go to the model as they are; give the "
                    "values it was trained on (scaled ones, if its data was scaled).")
        X = X_raw
    else:
        X = prepared.transform(X_raw)
    out = pd.DataFrame({c: df[c].to_numpy() for c in args.keep})
    task = get_family(model.family_key).task_of_class(type(model))
    try:
        if hasattr(model, "predict"):
            out["cluster" if task == "clustering" else "prediction"] = np.asarray(model.predict(X))
        else:
            Z = np.asarray(model.transform(X))
            for j in range(Z.shape[1]):
                out[f"z{j}"] = Z[:, j]
        if args.proba:
            if not (hasattr(model, "predict_proba") and hasattr(model, "classes_")):
                raise TreevizError(f"--proba needs a classifier; {what} is a model for {task}.")
            proba = np.asarray(model.predict_proba(X))
            for j, name in enumerate(np.asarray(model.classes_).astype(str)):
                out[f"proba_{name}"] = proba[:, j]
    except TreevizError:
        raise
    except ValueError as err:  # the model's own input checks (for example NaN a family cannot route)
        raise TreevizError(f"The model could not predict these rows ({err}).") from None
    _write_output(args.out, spreadsheet_safe(out).to_csv(index=False), args, "predictions")
    return OK


def _exports(store: RunStore, run_id: str, args: argparse.Namespace, indices: Sequence[int] | None
             ) -> tuple[RunRecord, list[TreeExport]]:
    """The run's trees to export (:func:`treeviz.services.export.tree_exports`: the same decisions as the
    Tree explorer), in the data's own units unless ``--model-units`` or the run's scaling says otherwise."""
    record = store.get(run_id)
    model = store.load_model(run_id)
    n_trees = len(model.to_trees())
    for i in indices if indices is not None else ():
        if not 0 <= i < n_trees:
            raise TreevizError(f"Run {run_id} has {n_trees} tree(s); choose --tree from 0 to {n_trees - 1}.")
    try:
        prepared = store.load_prepared(run_id)
    except TreevizError as err:
        prepared = None
        _note(args, f"note: {err} The export is in the model's units.")
    exports = tree_exports(model, prepared, indices=indices, original_units=not args.model_units, leaf=args.leaf,
                           run_name=record.name, run_id=record.run_id, dataset_name=record.dataset_name,
                           title=f"Rules of run {run_id} '{record.name}' ({record.family}, {record.task}, "
                                 f"{record.dataset_name})")
    return record, exports


def _rules_text(store: RunStore, run_id: str, args: argparse.Namespace) -> str:
    """Every root-to-leaf rule of the run's tree(s) (``--tree`` picks one of an ensemble), every
    term of every split unless ``--max-terms`` folds them."""
    _, exports = _exports(store, run_id, args, None if args.tree is None else [args.tree])
    return render("rules", exports, max_terms=args.max_terms or ALL_TERMS)


def _code_text(store: RunStore, run_id: str, args: argparse.Namespace) -> str:
    """The run's tree as a Python module or a SQL query, as the Tree explorer offers it."""
    index = 0 if args.tree is None else args.tree
    record, [export] = _exports(store, run_id, args, [index])
    text = render("python", [export]) if args.python else render("sql", [export], table=args.table)
    if export.n_trees > 1:
        _note(args, f"note: the code is tree {index} of the {export.n_trees} of this ensemble, not the ensemble's "
                    "prediction; --tree picks another.")
    if export.output == "leaf" and not args.leaf:
        _note(args, f"note: {record.family} predicts from more than its leaves, so the code gives each row's leaf.")
    return text


def cmd_export(args: argparse.Namespace) -> int:
    """``export``: a run as a zip (default), its rules as text, or its tree as Python or SQL."""
    store = _store(args)
    store.get(args.run_id)  # a sentence for an unknown run before anything else
    if args.rules:
        _write_output(args.out, _rules_text(store, args.run_id, args), args, "rules")
        return OK
    if args.python or args.sql:
        _write_output(args.out, _code_text(store, args.run_id, args), args, "Python code" if args.python else "SQL")
        return OK
    data = export_zip(store, args.run_id, include_dataset=not args.no_dataset)
    _write_output(args.out or f"{args.run_id}.zip", data, args, "run zip")
    return OK


def cmd_report(args: argparse.Namespace) -> int:
    """``report``: a run's self-contained HTML page."""
    store = _store(args)
    store.get(args.run_id)
    _write_output(args.out or f"{args.run_id}.html", run_report(store, args.run_id), args, "report")
    return OK


def cmd_list(args: argparse.Namespace) -> int:
    """``list``: the stored runs, newest first."""
    store = _store(args)
    records = store.list()
    for problem in store.problems:
        _note(args, f"note: {problem}")
    if args.family:
        records = [r for r in records if r.family == args.family]
    if args.dataset:
        records = [r for r in records if args.dataset in (r.dataset_name, r.dataset_fingerprint)]
    if args.status:
        records = [r for r in records if r.status == args.status]
    if args.limit is not None:
        records = records[: max(0, args.limit)]
    if args.json:
        print(_json([record_json(r) for r in records]))
        return OK
    if not records:
        _note(args, f"no runs in {store.root}" + (" match" if args.family or args.dataset or args.status else ""))
        return OK
    rows = []
    for r in records:
        found = run_headline(r)
        rows.append({"id": r.run_id, "name": r.name, "family": r.family, "task": r.task, "data": r.dataset_name,
                     "headline": None if found is None else f"{found.label} {found.value:.4f}",
                     "status": r.status, "created": _created(r)})
    print(format_table(rows, [("id", "id"), ("name", "name"), ("family", "family"), ("task", "task"),
                              ("data", "data set"), ("headline", "headline"), ("status", "status"),
                              ("created", "created (UTC)")]))
    return OK


def cmd_delete(args: argparse.Namespace) -> int:
    """``delete``: runs by id (every id is checked before any is deleted), and with ``--leftovers``
    the folders that crashed saves and deletes left behind."""
    if not args.run_ids and not args.leftovers:
        args.parser.error("give the run id(s) to delete, or --leftovers")
    store = _store(args)
    for run_id in args.run_ids:
        store.run_path(run_id)  # a sentence for an unknown id, before anything is deleted
    for run_id in dict.fromkeys(args.run_ids):
        store.delete(run_id)
        print(run_id if args.quiet else f"deleted run {run_id}")
    if args.leftovers:
        count = store.remove_leftovers()
        if not args.quiet:
            print(f"removed {count} folder(s) left in {store.root} by saves or deletes that did not finish")
    return OK


def cmd_import(args: argparse.Namespace) -> int:
    """``import``: run zips into the store."""
    store = _store(args)
    for name in args.zips:
        path = Path(name).expanduser()
        record = import_zip(store, _read_model_bytes(path, "run zip"))
        if args.quiet:
            print(record.run_id)
        else:
            print(f"imported {path.name} as run {record.run_id} '{record.name}' ({record.family}, "
                  f"{record.dataset_name})")
    return OK


# ---------------------------------------------------------------------------- the parser

class _HelpFormatter(argparse.HelpFormatter):
    """Wraps one-line texts, keeps the line breaks of multi-line ones (the epilogs), and shows the
    default of every option that has one."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS or default == []
        if "%(default)" not in text and not unset and action.option_strings and action.nargs != 0:
            text += " (default: %(default)s)"
        return text


def _debug_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a command's own default must not overwrite a --debug given before the command
    parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on a crash, print the traceback as well")
    return parent


def _home_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--home", metavar="DIR",
                        help="the run store's folder (default: $TREEVIZ_HOME, else $XDG_DATA_HOME/treeviz, "
                             "else ~/.local/share/treeviz)")
    return parent


def _data_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    data = parent.add_argument_group("data", "a built-in data set, a table file read as the Data page reads an "
                                             "upload, or a saved data set")
    data.add_argument("-d", "--data", metavar="DATA",
                      help=f"a built-in key ({', '.join(CATALOGUE)}), a CSV/TSV/Parquet file, or a saved data "
                           "set's fingerprint (see the datasets command)")
    data.add_argument("--target", metavar="COLUMN",
                      help="table files: the target column (default: guessed from its name, else the last column)")
    data.add_argument("--no-target", action="store_true", help="table files: no target (a clustering data set)")
    data.add_argument("--data-task", choices=("auto", "classification", "regression", "clustering"),
                      help="table files: the data set's task; auto: text columns and integer columns with at most "
                           "20 values mean classification (default: auto)")
    data.add_argument("--drop-missing-target", action="store_true",
                      help="table files: drop rows whose target is missing instead of refusing the file")
    data.add_argument("--image", choices=("auto", "yes", "no"),
                      help="table files: whether the features are the pixels of square images (default: auto)")
    data.add_argument("--encoding", choices=ENCODINGS, help="table files: the text encoding (default: auto)")
    prep = parent.add_argument_group("preparation", "the split and the preprocessing fitted on the training split")
    defaults = PrepConfig()
    prep.add_argument("--scaling", choices=SCALINGS, default=defaults.scaling, help="feature scaling")
    prep.add_argument("--test-size", type=float, default=defaults.test_size, metavar="FRACTION",
                      help="fraction of the rows held out for testing")
    prep.add_argument("--val-size", type=float, default=defaults.val_size, metavar="FRACTION",
                      help="fraction of the rows held out for validation")
    prep.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=defaults.seed,
                      help="seed of the train/validation/test split (0 to 4294967295)")
    return parent


def _model_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    model = parent.add_argument_group("model")
    model.add_argument("-f", "--family", choices=list(families()), metavar="FAMILY",
                       help=f"the model family: {', '.join(families())}")
    model.add_argument("--task", choices=TASKS,
                       help="what the model does (default: the data set's task; families that only cluster or "
                            "embed run on any data set)")
    model.add_argument("--preset", metavar="NAME", help="a named starting point of the family (see --help-params)")
    model.add_argument("-p", "--param", action="append", type=_name_value, default=[], metavar="NAME=VALUE",
                       help="set a parameter (repeat the option for several); 'none' or the parameter's optional "
                            "label (such as 'unlimited') where None is allowed; true/false for switches")
    model.add_argument("--device", metavar="DEVICE", type=device_name,
                       help="for torch families: auto, cpu, cuda or cuda:N (default: the family's, auto)")
    model.add_argument("--help-params", action="store_true",
                       help="list the parameters of --family (for --task when given) and exit")
    out = parent.add_argument_group("output")
    out.add_argument("--name", help="the run's name (default: '<family> on <data set> #n', as in the app)")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show progress bars on stderr (default: only when stderr is a terminal)")
    out.add_argument("-q", "--quiet", action="store_true",
                     help="print only the run id(s); no notes, and no bars unless --progress")
    out.add_argument("--json", action="store_true", help="print the stored run record(s) as JSON")
    return parent


def _families_epilog() -> str:
    return ("families (key: label; tasks):\n"
            + "\n".join(f"  {f.key}: {f.label}; {', '.join(f.tasks)}" for f in families().values())
            + f"\n\n`{PROG} families` lists every parameter with its default, range and help.\n\n"
            + exit_codes_help())


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m treeviz`` argument parser, with one sub-parser per command.

    Returns
    -------
    argparse.ArgumentParser
        Each sub-parser's defaults hold ``handler`` (the command function) and ``parser`` (itself,
        for usage errors found after parsing).
    """
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter,
        description="Train, sweep, inspect and share treeviz runs from the command line. Runs land in the same "
                    "run store as the app's, so its pages show them.",
        epilog=_families_epilog())
    parser.add_argument("--debug", action="store_true", help="on a crash, print the traceback as well")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    home, data, model, debug = _home_parent(), _data_parent(), _model_parent(), _debug_parent()

    def add(name: str, handler: Callable[[argparse.Namespace], int], help_text: str,
            parents: Sequence[argparse.ArgumentParser] = (), epilog: str = "") -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text, parents=[*parents, debug],
                                  formatter_class=_HelpFormatter,
                                  epilog=(epilog + "\n\n" if epilog else "") + exit_codes_help())
        sub.set_defaults(handler=handler, parser=sub)
        return sub

    add("train", cmd_train, "Train one model and store it as a run.", [data, model, home],
        f"examples:\n  {PROG} train --data iris --family cart --param max_depth=3\n"
        f"  {PROG} train --data rows.csv --target label --family tao --preset quick -q\n\n"
        f"families and their parameters:\n\n{families_help()}")

    sweep = add("sweep", cmd_sweep, "Train a λ path: one stored run per value of the family's λ.",
                [data, model, home],
                f"examples:\n  {PROG} sweep --data breast_cancer --family tao\n"
                f"  {PROG} sweep --data iris --family tao --values 0.01,0.1,1 --param max_iter=5\n\n"
                "λ paths of the families:\n"
                + "\n".join(f"  {f.key}: {f.lambda_path.param} from {f.lambda_path.low:g} to {f.lambda_path.high:g}, "
                            f"{f.lambda_path.count} points" for f in families().values() if f.lambda_path))
    grid = sweep.add_argument_group("values")
    grid.add_argument("--sweep-param", metavar="NAME", help="the parameter to sweep (default: the family's λ)")
    grid.add_argument("--values", nargs="+", metavar="V", help="the values, separated by spaces or commas")
    grid.add_argument("--low", type=float, help="first value of a grid (default: the family's λ path)")
    grid.add_argument("--high", type=float, help="last value of a grid (default: the family's λ path)")
    grid.add_argument("--count", type=whole_number(1, MAX_SWEEP_POINTS),
                      help="points of the grid (default: the family's λ path)")
    grid.add_argument("--linear", action="store_true", help="an evenly spaced grid instead of a geometric one")
    grid.add_argument("--warm-start", action=argparse.BooleanOptionalAction, default=None,
                      help="start each fit from the previous one's result (default: the family's choice)")

    grids = add("grid", cmd_grid,
                "Train a grid: one stored run per combination of parameter values (λ × depth × seed, ...), "
                "in parallel here or on a Dask cluster.", [data, model, home],
                f"examples:\n  {PROG} grid --data iris --family tao --grid l1_penalty=0.01,0.1,1 --grid depth=3,4 "
                "--grid random_state=0,1\n"
                f"  {PROG} grid --data iris --family cart --grid max_depth=2,3,4 --grid random_state=0,1 "
                "--scheduler tcp://127.0.0.1:8786\n\n"
                "Trials run at once in worker processes here, or on the Dask cluster whose scheduler --scheduler\n"
                f"(or ${SCHEDULER_ENV}) names; this process stores each run as it comes back, so workers need\n"
                "treeviz on their Python path but no access to the run store. Ctrl-C stops the grid; the trials\n"
                "stored before stay.")
    axes = grids.add_argument_group("grid")
    axes.add_argument("-g", "--grid", action="append", type=_name_value, default=[], metavar="NAME=V1,V2",
                      help="a parameter and its values, separated by commas (repeat for each parameter; 'none' or "
                           "the optional label where None is allowed)")
    axes.add_argument("--scheduler", metavar="ADDRESS",
                      help=f"a Dask scheduler, e.g. tcp://127.0.0.1:8786 (default: ${SCHEDULER_ENV}; unset or "
                           "empty: run here)")
    axes.add_argument("--local", action="store_true", help=f"run here even when ${SCHEDULER_ENV} is set")
    axes.add_argument("-j", "--jobs", type=job_count, metavar="N",
                      help="trials at once: -1 every core here (or every Dask thread), 1 one after another "
                           "(default: -1)")

    predict = add("predict", cmd_predict, "Predict the rows of a table with a stored run or a model file.", [home],
                  "The table's columns are those of the training data (one-hot and date columns are encoded as\n"
                  "at upload) or the model's feature names; other columns are ignored. A run (id, folder or\n"
                  "zip) also brings its preprocessing (imputation and scaling); a plain model file does not.\n\n"
                  f"example:\n  {PROG} predict 20250101-120000-000000-abcdef new_rows.csv --proba --out pred.csv")
    predict.add_argument("model", metavar="MODEL", help="a run id, a run folder, a run zip or a model file/folder")
    predict.add_argument("table", metavar="TABLE", help="a CSV/TSV/Parquet file of rows to predict")
    predict.add_argument("-o", "--out", metavar="FILE", help="write the CSV here (default: stdout)")
    predict.add_argument("--proba", action="store_true", help="add one probability column per class (classifiers)")
    predict.add_argument("--keep", action="append", default=[], metavar="COLUMN",
                         help="copy this input column to the output, e.g. an id (repeatable)")
    predict.add_argument("--encoding", choices=ENCODINGS, default="auto", help="the table's text encoding")
    predict.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")

    export = add("export", cmd_export,
                 "Export a run: a zip (a model file the app can import), its rules as text, or its tree as a "
                 "Python function or a SQL CASE query.", [home],
                 f"examples:\n  {PROG} export RUN_ID --out run.zip\n  {PROG} export RUN_ID --rules\n"
                 f"  {PROG} export RUN_ID --python --out tree.py\n  {PROG} export RUN_ID --sql --table rows\n\n"
                 "Rules and code read raw rows in the data's own units when the run's scaling allows it (none or\n"
                 "standard); the code then fills missing values with the training medians, as the app does.")
    export.add_argument("run_id", metavar="RUN_ID")
    export.add_argument("-o", "--out", metavar="FILE",
                        help="where to write ('-': stdout; default: RUN_ID.zip for a zip, stdout for text)")
    what = export.add_mutually_exclusive_group()
    what.add_argument("--rules", action="store_true", help="every root-to-leaf rule as text")
    what.add_argument("--python", action="store_true",
                      help="a dependency-free Python module with predict(row) (treeviz.readers.codegen)")
    what.add_argument("--sql", action="store_true",
                      help="a SQL SELECT with one CASE expression (treeviz.readers.codegen)")
    export.add_argument("--no-dataset", action="store_true", help="zip: leave the data set out")
    export.add_argument("--model-units", action="store_true",
                        help="rules and code: the model's (preprocessed) units instead of the data's own")
    export.add_argument("--max-terms", type=whole_number(1), default=None,
                        help="rules: fold each oblique split to its largest terms (default: every term)")
    export.add_argument("--tree", type=whole_number(0), metavar="INDEX",
                        help="rules: only this tree of an ensemble; code: this tree (default 0)")
    export.add_argument("--leaf", action="store_true", help="code: return the leaf id instead of the prediction")
    export.add_argument("--table", type=sql_table, default="data", help="SQL: the table the query reads")
    export.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")

    report = add("report", cmd_report, "Write a run's report as one self-contained HTML page.", [home])
    report.add_argument("run_id", metavar="RUN_ID")
    report.add_argument("-o", "--out", metavar="FILE", help="where to write ('-': stdout; default: RUN_ID.html)")
    report.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")

    listing = add("list", cmd_list, "List the stored runs, newest first.", [home])
    listing.add_argument("--family", choices=list(families()), metavar="FAMILY", help="only runs of this family")
    listing.add_argument("--dataset", metavar="NAME", help="only runs on this data set (name or fingerprint)")
    listing.add_argument("--status", choices=("finished", "cancelled"), help="only runs with this status")
    listing.add_argument("-n", "--limit", type=whole_number(0), help="at most this many runs")
    listing.add_argument("--json", action="store_true", help="the full run records (and headlines) as JSON")
    listing.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr")

    delete = add("delete", cmd_delete, "Delete runs (their data sets stay), or the leftovers of crashed saves.",
                 [home], f"examples:\n  {PROG} delete RUN_ID [RUN_ID ...]\n  {PROG} delete --leftovers\n\n"
                 "A run is deleted even when its files are damaged (the Runs page cannot open those).")
    delete.add_argument("run_ids", nargs="*", metavar="RUN_ID", help="the runs to delete")
    delete.add_argument("--leftovers", action="store_true",
                        help="also remove the hidden folders that saves or deletes which did not finish left behind")
    delete.add_argument("-q", "--quiet", action="store_true", help="print only the deleted run ids")

    imports = add("import", cmd_import, "Import run zips (exported by the app or the export command).", [home])
    imports.add_argument("zips", nargs="+", metavar="ZIP")
    imports.add_argument("-q", "--quiet", action="store_true", help="print only the new run ids")

    fams = add("families", cmd_families, "Describe the model families: tasks, presets, λ path and parameters.")
    fams.add_argument("keys", nargs="*", metavar="FAMILY", help="only these families")
    fams.add_argument("--task", choices=TASKS, help="only this task's families and parameters")
    fams.add_argument("--json", action="store_true", help="as JSON")

    sets = add("datasets", cmd_datasets, "List the built-in data sets and the saved ones.", [home])
    sets.add_argument("--json", action="store_true", help="as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see :data:`EXIT_CODES`).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 success, 1 a :class:`TreevizError` or an ``OSError`` (one sentence on stderr), 2 bad
        usage, 70 a crash (any other exception, named in one line; the traceback with ``--debug``),
        130 interrupted, 141 stdout closed early.
    """
    args = None
    argv = list(sys.argv[1:] if argv is None else argv)
    nul = next((a for a in argv if "\x00" in str(a)), None)
    if nul is not None:  # only possible in-process (a real command line cannot hold one)
        print(f"{PROG}: error: the argument {str(nul)!r} holds a NUL character, which no value or path may hold",
              file=sys.stderr)
        return USAGE
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_:  # --help (0) and argparse's usage errors (2)
            return exit_.code if isinstance(exit_.code, int) else USAGE
        return int(args.handler(args) or OK)
    except SystemExit as exit_:  # parser.error() after parsing
        return exit_.code if isinstance(exit_.code, int) else USAGE
    except TreevizError as err:
        print(f"treeviz: error: {_one_line(str(err))}", file=sys.stderr)
        return USER_ERROR
    except BrokenPipeError:
        return _stdout_gone()
    except OSError as err:
        print(f"treeviz: error: {_one_line(os_error_sentence(err))}", file=sys.stderr)
        return USER_ERROR
    except Exception as err:
        return _crashed(err, debug=bool(getattr(args, "debug", False)))
    except KeyboardInterrupt:
        print("\ntreeviz: interrupted; nothing more was stored.", file=sys.stderr)
        return INTERRUPTED


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _crashed(err: Exception, *, debug: bool) -> int:
    """A crash (a bug): one line naming the exception, the traceback only with ``--debug``."""
    if debug:
        traceback.print_exc(file=sys.stderr)
    message = _one_line(str(err))[:300]
    print(f"treeviz: internal error: {type(err).__name__}{': ' + message if message else ''} (a bug in treeviz; "
          f"{'the traceback is above' if debug else 'run again with --debug for the traceback'}).", file=sys.stderr)
    return CRASH


def _stdout_gone() -> int:
    """stdout's reader went away (``| head``): write nothing more to it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE
