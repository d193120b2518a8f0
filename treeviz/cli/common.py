"""What the commands share: exit statuses, help texts, output and file reading, the run store,
data loading, parameter parsing, argparse types and the setup training needs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from models.ground import threads
from models.ground.errors import TreevizError
from models.ground.jsonio import jsonable
from models.registry import families, get_family
from models.schema import ANY_DATA_TASKS, Family, Param
from treeviz.services.data import CATALOGUE, Dataset, PreparedData, PrepConfig, TableOptions, load_dataset, prepare
from treeviz.services.data.names import visible
from treeviz.services.data.upload import max_upload_mb, read_table, suggest_target, table_to_dataset
from treeviz.services.store.archive import MAX_IMPORT_BYTES
from treeviz.services.store.atomic import replace_file
from treeviz.services.store.record import FINGERPRINT_RE, RunRecord
from treeviz.services.store.runs import RunStore
from treeviz.ui.labels import run_headline

#: How the command is called in usage lines and messages: ``treeviz`` when the installed console script
#: runs, ``python -m treeviz`` from a checkout.
PROG = "treeviz" if Path(sys.argv[0] if sys.argv else "").name == "treeviz" else "python -m treeviz"
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

def help_width() -> int:
    """Text width for help listings: the terminal's, between 60 and 100 columns."""
    return max(60, min(100, shutil.get_terminal_size((100, 24)).columns) - 2)


def number_text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _value_text(param: Param, value: Any) -> str:
    """A parameter value as it is typed after ``--param NAME=``."""
    if value is None:
        return f"none ({param.optional_label})" if param.optional_label else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    return number_text(value)


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
            kind += f" {number_text(param.low)} to {number_text(param.high)}"
        elif param.low is not None:
            kind += f" ≥ {number_text(param.low)}"
        elif param.high is not None:
            kind += f" ≤ {number_text(param.high)}"
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
    width = width or help_width()
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


# ---------------------------------------------------------------------------- output and files

def shown(text: Any) -> str:
    """``text`` for a terminal, shown as text: every control character a terminal would act on
    becomes its escape (``\\x1b``, ``\\u202e``), so a name from a user's file (a column, a class,
    the file's own name) can neither move the cursor, recolour the screen nor reorder a line. Every
    line the command line writes for people goes through it (:func:`say`, :func:`note`,
    :func:`format_table`, error messages); data written on purpose (``--json``, exported code,
    predictions, ``-o -``) is written as it is. The characters are those of
    :data:`treeviz.services.data.names.UNSAFE`: C0 and C1 controls (an escape sequence can move the
    cursor, recolour, retitle the window), the bidirectional marks, overrides and isolates (which
    reorder a line) and the Unicode line separators."""
    return visible(text)


def say(text: str) -> None:
    """A line for people on stdout (:func:`shown`)."""
    print(shown(text))


def note(args: argparse.Namespace, text: str) -> None:
    """A note on stderr (:func:`shown`), unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(f"treeviz: {shown(text)}", file=sys.stderr)


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
        cells.append(["–" if row.get(k) is None else shown(row.get(k)) for k, _ in columns])
    widths = [max(len(r[j]) for r in cells) for j in range(len(columns))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells)


def write_output(out: str | None, data: bytes | str, args: argparse.Namespace, what: str) -> None:
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
    note(args, f"wrote the {what} to {path} ({len(raw):,} bytes)")


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


def read_table_file(path: Path, encoding: str) -> pd.DataFrame:
    """A table file read like an upload, refused beyond the upload limit before it is read whole."""
    limit = max_upload_mb()
    data = _read_bytes(path, "table file", int(limit * 1024**2),
                       f"the upload limit of {limit:g} MB (TREEVIZ_MAX_UPLOAD_MB)")
    return read_table(path.name, data, encoding=encoding)


def read_model_bytes(path: Path, what: str) -> bytes:
    """A model file or run zip, refused beyond the largest zip the store imports."""
    return _read_bytes(path, what, MAX_IMPORT_BYTES, f"{MAX_IMPORT_BYTES / 1024**3:g} GiB")


def to_json(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)


def record_json(record: RunRecord) -> dict[str, Any]:
    """A run's record as JSON-ready dict, with its headline metric (or None) added."""
    found = run_headline(record)
    headline = None if found is None else {"key": found.key, "label": found.title, "value": found.value}
    return {**record.to_dict(), "headline": headline}


def open_store(args: argparse.Namespace) -> RunStore:
    """The run store of ``--home`` (else ``$TREEVIZ_HOME``, ...), refused when that is not a folder."""
    store = RunStore(args.home)
    if store.root.exists() and not store.root.is_dir():
        raise TreevizError(f"The run store {store.root} is not a folder; give a folder with --home "
                           "(or $TREEVIZ_HOME).")
    return store


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
        df = read_table_file(path, args.encoding or "auto")
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
    for text in prepared.notes:  # the data set's notes, then the split's
        note(args, f"note: {text}")
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


def device_name(text: str) -> str:
    """``--device``: auto, cpu, cuda or cuda:N (whether the GPU exists is checked when training)."""
    device = text.strip().lower()
    if device in ("auto", "cpu", "cuda") or (device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise argparse.ArgumentTypeError(f"expected auto, cpu, cuda or cuda:N, got {text!r}")


def name_value(text: str) -> tuple[str, str]:
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


def _has_device(family: Family, task: str) -> bool:
    return any(p.name == "device" for p in family.params_for(task))


def apply_thread_budget(family: Family, task: str) -> None:
    """One job's share of the cores for torch families (those with a device), as an app job gets."""
    if _has_device(family, task):
        threads.apply_budget(threads.job_budget(1))


def device_note(args: argparse.Namespace, family: Family, task: str) -> None:
    """Say that ``--device`` is ignored for a family that has no device (it trains on the CPU)."""
    if args.device is not None and not _has_device(family, task):
        note(args, f"note: {family.label} has no device setting (it trains on the CPU); --device is ignored.")


def params_help_requested(args: argparse.Namespace) -> bool:
    if not args.help_params:
        return False
    if args.family is None:
        args.parser.error("--help-params needs --family")
    family = get_family(args.family)
    if args.task is not None:
        family.estimator_class(args.task)  # a sentence if the family lacks the task
    print(describe_family(family, args.task))
    return True


def require(args: argparse.Namespace, *names: str) -> None:
    missing = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n) is None]
    if missing:
        args.parser.error(f"the following arguments are required: {', '.join(missing)}")


def training_setup(args: argparse.Namespace) -> tuple[RunStore, Family, PreparedData, str, dict[str, Any]]:
    """What training needs from the arguments: the store, the family, the prepared data, the task
    and the model's parameters; the thread budget is applied for the family."""
    store = open_store(args)
    family = get_family(args.family)
    prepared = load_prepared_data(args, store)
    task = resolve_task(family, prepared.dataset, args.task)
    params = model_params(family, task, args.preset, args.param)
    device_note(args, family, task)
    apply_thread_budget(family, task)
    return store, family, prepared, task, params
