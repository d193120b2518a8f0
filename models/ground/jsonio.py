"""numpy values to JSON, in one place: stored runs, model files, history records and labels.

Every JSON file treeviz writes goes through these functions, so a numpy scalar, an array or a
torch scalar is encoded the same way everywhere:

* :func:`plain` turns numpy / torch scalars (and lists or tuples of them) into Python numbers;
* :func:`json_default` is the ``default=`` hook of :func:`json.dumps`: numpy scalars and arrays,
  sets and tuples become plain values; anything else raises ``TypeError`` unless ``lenient``;
* :func:`jsonable` returns a value after a lenient JSON round trip (unknown objects become text);
* :func:`dumps_json` gives the indented UTF-8 bytes the stored files hold;
* :func:`encode_labels` / :func:`decode_labels` store class labels and read them back with their
  natural dtype;
* :func:`check_version` reads the format version of a stored description (model file, data set,
  Tree), refusing one this treeviz does not read.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from models.ground import __version__
from models.ground.errors import TreevizError


def plain(value: Any) -> Any:
    """numpy / torch scalars as Python numbers; lists and tuples element by element."""
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def json_default(value: Any, *, lenient: bool = False) -> Any:
    """Encode what :mod:`json` does not know (the ``default=`` hook).

    numpy scalars become Python values, arrays nested lists, sets and tuples lists. Anything
    else raises ``TypeError``, or becomes its text when ``lenient`` (for free-form records).
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if lenient:
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _lenient(value: Any) -> Any:
    return json_default(value, lenient=True)


def jsonable(value: Any) -> Any:
    """``value`` after a JSON round trip in which unknown objects become their text."""
    return json.loads(json.dumps(value, default=_lenient))


def dumps_json(value: Any, *, lenient: bool = True) -> bytes:
    """Indented (1 space) UTF-8 JSON bytes, as every stored file holds it.

    NaN and infinities are written as JSON's ``NaN`` / ``Infinity`` extensions, which Python
    reads back. With ``lenient=False`` an object JSON cannot hold raises ``TypeError``.
    """
    default = _lenient if lenient else json_default
    return json.dumps(value, indent=1, default=default).encode("utf-8")


def encode_labels(values: Sequence[Any]) -> list[Any]:
    """Class labels as JSON values (numpy scalars become Python scalars)."""
    return [plain(v) for v in np.asarray(values).tolist()]


def decode_labels(values: list[Any]) -> np.ndarray:
    """Inverse of :func:`encode_labels`: an array with the labels' natural dtype."""
    if values and all(isinstance(v, str) for v in values):
        return np.array(values, dtype=object)
    return np.asarray(values)


def check_version(data: dict[str, Any], *, what: str, kind: str, oldest: int, newest: int, again: str) -> int:
    """The ``version`` of a stored JSON description ``data``, checked in both directions.

    Parameters
    ----------
    data : dict
        The parsed description (its format already checked).
    what : str
        How a message names the file ("The model's config.json").
    kind : str
        What the versions count ("model files").
    oldest, newest : int
        The versions this treeviz reads (``newest`` is the one it writes).
    again : str
        What to do for a file of another version, continuing "...; " ("export the model again with ...").

    Returns
    -------
    int
        The version.

    Raises
    ------
    TreevizError
        When the version is missing, not a whole number (``true``, ``1.0``, ``"1"``: treeviz writes
        a JSON integer), older than ``oldest`` or newer than ``newest``.
    """
    span = f"{oldest}" if oldest == newest else f"{oldest} to {newest}"
    reads = f"this treeviz ({__version__}) reads {kind} of version {span} only"
    if "version" not in data:
        raise TreevizError(f"{what} has no version, so treeviz did not write it; {reads}, so {again}.")
    version = data["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise TreevizError(f"{what} says version {version!r}, which is not a whole number; {reads}, so {again}.")
    if version > newest:
        raise TreevizError(f"{what} says version {version!r}: a newer treeviz wrote it, and {reads}, so upgrade "
                           f"treeviz to open it, or {again}.")
    if version < oldest:
        raise TreevizError(f"{what} says version {version!r}, an older format; {reads}, so {again}.")
    return version
