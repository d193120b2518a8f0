"""A run's record (its ``run.json``): the fields, and the checks a record read from disk passes.

A stored record is never trusted: :meth:`RunRecord.from_dict` checks every field's type, size and
form (:data:`_FIELD_CHECKS`) and refuses a record with a sentence naming the field.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Any

from models.devices import resolve_device
from models.ground.errors import TreevizError
from models.schema import TASKS
from treeviz.services.data.names import RECORD_CONTROL
from treeviz.services.data.preprocess import PrepConfig

RUN_FORMAT = "treeviz.run"
RUN_VERSION = 1
STATUSES = ("finished", "cancelled")
RUN_ID_RE = re.compile(r"^\d{8}-\d{6}-\d{6}-[0-9a-f]{6}$")
FINGERPRINT_RE = re.compile(r"^[0-9a-f]{16}$")



@dataclass(frozen=True)
class RunRecord:
    """Everything about one stored run except the model's arrays (this is ``run.json``)."""

    run_id: str
    name: str
    family: str
    estimator: str
    task: str
    params: dict[str, Any]
    dataset: dict[str, Any]
    dataset_fingerprint: str
    prep: dict[str, Any]
    prepared_fingerprint: str
    metrics: dict[str, Any]
    n_nodes: int | None
    n_leaves: int | None
    depth: int | None
    created: str
    duration_s: float
    status: str = "finished"
    notes: tuple[str, ...] = ()
    treeviz_version: str = ""
    #: Set for runs of a parameter sweep (a λ path): {"id", "param", "value", "index", "size"}.
    sweep: dict[str, Any] | None = None
    #: Where it was trained: "cpu", "cuda", "cuda:N" ("" for runs saved before this was recorded).
    device: str = ""

    def __hash__(self) -> int:  # dict fields are unhashable; a run is identified by its id
        return hash((self.run_id, self.name, self.status))

    @property
    def dataset_name(self) -> str:
        return str(self.dataset.get("name", "?"))

    @property
    def created_at(self) -> datetime:
        return datetime.fromisoformat(self.created)

    @property
    def prep_config(self) -> PrepConfig:
        return PrepConfig.from_dict(self.prep)

    def to_dict(self) -> dict[str, Any]:
        out = {"format": RUN_FORMAT, "version": RUN_VERSION, **asdict(self)}
        out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> RunRecord:
        """Parse and check a ``run.json`` dict; raises a TreevizError sentence if it is not one.

        This is the one check every record passes: a run saved here (:meth:`RunStore.publish_run`),
        one read from disk and one imported from a zip. Types, ranges (sizes non-negative and
        bounded, a finite duration), text lengths, no control characters in any text, finite
        numbers as metrics and JSON of bounded size for the free-form fields.
        """
        if not isinstance(data, dict) or data.get("format") != RUN_FORMAT:
            raise TreevizError("run.json is not a treeviz run record.")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise TreevizError("run.json has no valid version number.")
        if version > RUN_VERSION:
            raise TreevizError("This run was saved by a newer treeviz; upgrade treeviz to open it.")
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                if f.name in _OPTIONAL_FIELDS:
                    continue
                raise TreevizError(f"run.json lacks the field '{f.name}'.")
            values[f.name] = data[f.name]
        for key, check in _FIELD_CHECKS.items():
            if key in values:
                values[key] = check(values[key], key)
        return cls(**values)


#: Limits of a run record's fields (see :meth:`RunRecord.from_dict`).
MAX_NAME, MAX_TEXT, MAX_KEY, MAX_NOTES = 200, 4000, 200, 100
MAX_COUNT = 10**9
MAX_DURATION_S = 1e9
MAX_EXACT_INT = 2**53
MAX_JSON_DEPTH = 8
MAX_FIELD_JSON = 256 * 1024


def _fail(key: str, what: str) -> TreevizError:
    name = key.replace("_", " ") if key in _FIELD_CHECKS else key
    return TreevizError(f"run.json has an invalid {name}: {what}.")


def _text(value: Any, key: str, *, limit: int = MAX_TEXT, newlines: bool = False, empty: bool = True) -> str:
    """A string of at most ``limit`` characters without control characters (and without line
    breaks unless ``newlines``)."""
    if not isinstance(value, str):
        raise _fail(key, f"it must be text, not {type(value).__name__}")
    if len(value) > limit:
        raise _fail(key, f"it is longer than {limit} characters")
    if not empty and not value.strip():
        raise _fail(key, "it is empty")
    bad = RECORD_CONTROL.search(value.replace("\n", "") if newlines else value)
    if bad:
        raise _fail(key, f"it holds the control character U+{ord(bad.group()):04X}")
    return value


def _pattern(regex: re.Pattern, what: str) -> Any:
    def check(value: Any, key: str) -> str:
        if not isinstance(value, str) or not regex.fullmatch(value):
            raise _fail(key, f"it is not {what}")
        return value
    return check


def _count(value: Any, key: str) -> int | None:
    """None or a whole number in [0, MAX_COUNT]."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        raise _fail(key, f"it must be a whole number from 0 to {MAX_COUNT}")
    return value


def _duration(value: Any, key: str) -> float:
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or not 0 <= value <= MAX_DURATION_S):
        raise _fail(key, f"it must be a number of seconds from 0 to {MAX_DURATION_S:.0f}")
    return float(value)


def _number(value: Any, key: str) -> int | float:
    """A finite number that every table can hold (integers within float precision)."""
    if (not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value)
            or (isinstance(value, int) and abs(value) > MAX_EXACT_INT)):
        raise _fail(key, f"{_short(value)} is not a finite number")
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _json(value: Any, key: str, depth: int = 0) -> Any:
    """Plain JSON (no NaN, integers of 64 bits, safe text, nesting of at most 8 levels)."""
    if depth > MAX_JSON_DEPTH:
        raise _fail(key, f"it is nested more than {MAX_JSON_DEPTH} levels deep")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or (isinstance(value, int) and abs(value) >= 2**63):
            raise _fail(key, f"{_short(value)} is not a finite 64-bit number")
        return value
    if isinstance(value, str):
        return _text(value, key, newlines=True)
    if isinstance(value, list):
        return [_json(v, key, depth + 1) for v in value]
    if isinstance(value, dict):
        for k in value:
            _text(k, key, limit=MAX_KEY)
        return {k: _json(v, key, depth + 1) for k, v in value.items()}
    raise _fail(key, f"it holds a {type(value).__name__}")


def _json_dict(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(key, "it must be a JSON object")
    out = _json(value, key)
    if len(json.dumps(out)) > MAX_FIELD_JSON:
        raise _fail(key, f"it is larger than {MAX_FIELD_JSON // 1024} KiB")
    return out


def _metrics(value: Any, key: str) -> dict[str, Any]:
    out = _json_dict(value, key)
    for name, number in out.items():
        if number is not None:
            _number(number, f"metric '{name[:MAX_KEY]}'")
    return out


def _dataset(value: Any, key: str) -> dict[str, Any]:
    out = _json_dict(value, key)
    if "name" in out:
        _text(out["name"], "data set name", limit=MAX_NAME)
    for count in ("n_samples", "n_features", "n_classes", "missing_values"):
        _count(out.get(count), f"data set {count}")
    return out


def _prep(value: Any, key: str) -> dict[str, Any]:
    out = _json_dict(value, key)
    if not isinstance(out.get("scaling", ""), str):
        raise _fail(key, "its scaling must be text")
    for name in ("test_size", "val_size"):
        if name in out:
            _number(out[name], f"preparation's {name}")
    if "seed" in out and (not isinstance(out["seed"], int) or isinstance(out["seed"], bool)
                          or not 0 <= out["seed"] < 2**32):
        raise _fail(key, "its seed must be a whole number from 0 to 2**32 - 1")
    try:
        PrepConfig.from_dict(out)
    except TreevizError as err:
        raise _fail(key, str(err).rstrip(".")) from None
    return out


def _sweep(value: Any, key: str) -> dict[str, Any] | None:
    """None, or a sweep tag with what the pages read of its kind: an ``id``; a λ path's ``param``
    and ``value``; a feature-budget search's ``budget`` and ``index``."""
    if value is None:
        return None
    out = _json_dict(value, key)
    kind = out.get("kind", "lambda_path")
    needed = {"lambda_path": ("id", "param", "value"), "budget_search": ("id", "budget", "index")}.get(kind, ("id",))
    missing = [name for name in needed if name not in out]
    if missing:
        raise _fail(key, f"it lacks {', '.join(missing)}")
    for name in ("id", "kind", "label", "param"):
        if name in out:
            _text(out[name], f"sweep {name}", limit=MAX_NAME, empty=name != "id")
    for name in ("index", "size", "budget"):
        if name in out:
            _count(out[name], f"sweep {name}")
    if "value" in out:
        _number(out["value"], "sweep value")
    if not isinstance(out.get("params", {}), dict):
        raise _fail("sweep params", "they must be a JSON object")
    return out


def _notes(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or len(value) > MAX_NOTES:
        raise _fail(key, f"they must be a list of at most {MAX_NOTES} texts")
    return tuple(_text(n, "note", newlines=True) for n in value)


def _created(value: Any, key: str) -> str:
    text = _text(value, key, limit=40)
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise _fail(key, "it is not an ISO date and time") from None
    return text


def _status(value: Any, key: str) -> str:
    if value not in STATUSES:
        raise TreevizError(f"run.json has an unknown status {_short(value)}.")
    return value


def _run_name(value: Any, key: str) -> str:
    return _text(value, key, limit=MAX_NAME, empty=False)


_OPTIONAL_FIELDS = ("status", "notes", "treeviz_version", "sweep", "device")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,99}")
_FIELD_CHECKS = {
    "run_id": _pattern(RUN_ID_RE, "a run id"),
    "name": _run_name,
    "family": _pattern(_IDENTIFIER, "a family key"),
    "estimator": _pattern(_IDENTIFIER, "an estimator class name"),
    "task": _pattern(re.compile("|".join(TASKS)), "a task"),
    "params": _json_dict,
    "dataset": _dataset,
    "dataset_fingerprint": _pattern(FINGERPRINT_RE, "a data set fingerprint"),
    "prep": _prep,
    "prepared_fingerprint": _pattern(FINGERPRINT_RE, "a fingerprint of prepared data"),
    "metrics": _metrics,
    "n_nodes": _count,
    "n_leaves": _count,
    "depth": _count,
    "created": _created,
    "duration_s": _duration,
    "status": _status,
    "notes": _notes,
    "treeviz_version": lambda v, k: _text(v, k, limit=64),
    "sweep": _sweep,
    "device": _pattern(re.compile(r"[a-z0-9:_-]{0,32}"), "a device name"),
}


def new_run_id(now: datetime | None = None) -> str:
    """A unique id that sorts by creation time: ``YYYYMMDD-HHMMSS-micros-<6 hex>`` (UTC)."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{now.microsecond:06d}-{secrets.token_hex(3)}"


def tree_size(estimator: Any) -> dict[str, int]:
    """``n_nodes``, ``n_leaves`` and ``depth`` of the estimator's tree(s) (summed / max over an
    ensemble)."""
    trees = estimator.to_trees()
    return {"n_nodes": int(sum(t.n_nodes for t in trees)),
            "n_leaves": int(sum(t.n_leaves for t in trees)),
            "depth": int(max(t.max_depth for t in trees))}


def device_used(params: Mapping[str, Any]) -> str:
    """The device a fit with these parameters ran on: a torch family's resolved ``device``, else the CPU."""
    device = params.get("device")
    if not isinstance(device, str):
        return "cpu"
    try:
        return resolve_device(device)
    except TreevizError:
        return device




def clean_name(name: Any) -> str:
    text = " ".join(str(name).split())
    if not text:
        raise TreevizError("A run name cannot be empty.")
    if len(text) > MAX_NAME:
        raise TreevizError(f"A run name can have at most {MAX_NAME} characters.")
    bad = RECORD_CONTROL.search(text)
    if bad:
        raise TreevizError(f"A run name cannot hold control characters (it holds U+{ord(bad.group()):04X}).")
    return text


def clean_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Metric values as JSON numbers (NaN and infinities become None); text is refused."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if value is None:
            out[str(key)] = None
            continue
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise TreevizError(f"The metric '{key}' is {_short(value)}, not a number; a run stores "
                               "numbers only.") from None
        out[str(key)] = number if math.isfinite(number) else None
    return out
