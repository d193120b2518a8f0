"""User files to :class:`~treeviz.services.data.dataset.Dataset`, with one plain sentence per bad input.

Two steps, so the app can show the raw table between them:

1. :func:`read_table` turns the uploaded bytes into a :class:`pandas.DataFrame` (CSV, TSV or
   Parquet; size, encoding, binary content, parse errors and duplicate names are checked here);
2. :func:`table_to_dataset` (in :mod:`treeviz.services.data.table`, re-exported here) turns that table
   into numeric features and a target, following :class:`TableOptions`.

Every problem a user can cause is raised as :class:`~models.ground.errors.TreevizError` whose message
says what is wrong and what to do; pandas and pyarrow exceptions never escape. Problems that do not
stop the upload (columns dropped or left out, missing categories) become the Dataset's ``notes``.
The bundled sample CSVs go through exactly this path (see :mod:`treeviz.services.data.catalogue`).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import re
import warnings

import pandas as pd

from models.ground.errors import TreevizError
from treeviz.services.data.table import (
    READ_NOTES,
    TableOptions,
    detect_task,
    duplicate_column_error,
    inspect_table,
    suggest_target,
    table_to_dataset,
)

__all__ = [
    "ENCODINGS",
    "MAX_UPLOAD_MB",
    "TableOptions",
    "detect_task",
    "inspect_table",
    "max_upload_mb",
    "read_table",
    "suggest_target",
    "table_to_dataset",
]

MAX_UPLOAD_MB = 200
"""Default upload limit in megabytes; the environment variable ``TREEVIZ_MAX_UPLOAD_MB`` overrides it."""

ENCODINGS = ("auto", "utf-8", "latin-1", "cp1252")
CSV_SUFFIXES = (".csv", ".tsv", ".txt", ".csv.gz", ".tsv.gz", ".txt.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
_MB = 1024 * 1024
_BINARY_SIGNATURES = {
    b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image",
    b"PK\x03\x04": "a zip archive (an Excel .xlsx file is one)", b"%PDF": "a PDF document",
    b"\xd0\xcf\x11\xe0": "an old Excel/Office document", b"7z\xbc\xaf": "a 7-zip archive",
}

# ---------------------------------------------------------------------------- reading files


def max_upload_mb() -> float:
    """The upload limit in megabytes, read from ``TREEVIZ_MAX_UPLOAD_MB`` at call time.

    Returns
    -------
    float
        The limit; :data:`MAX_UPLOAD_MB` when the variable is unset or empty.
    """
    raw = os.environ.get("TREEVIZ_MAX_UPLOAD_MB", "").strip()
    if not raw:
        return float(MAX_UPLOAD_MB)
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (value > 0 and math.isfinite(value)):
        raise TreevizError(f"TREEVIZ_MAX_UPLOAD_MB must be a positive number of megabytes, not {raw!r}.")
    return value


def _fmt_mb(n_bytes: float) -> str:
    mb = n_bytes / _MB
    return f"{mb:,.1f} MB" if mb >= 1 else f"{mb:.3g} MB"


def read_table(filename: str, data: bytes, *, encoding: str = "auto") -> pd.DataFrame:
    """Read an uploaded CSV/TSV (optionally gzipped) or Parquet file into a DataFrame.

    Parameters
    ----------
    filename : str
        The name the user's file had; its extension picks the format (Parquet is also recognised
        by its ``PAR1`` magic bytes whatever the name).
    data : bytes
        The file's content.
    encoding : {"auto", "utf-8", "latin-1", "cp1252"}
        Text encoding of a CSV. ``"auto"`` accepts UTF-8 (with or without BOM) and UTF-16 with BOM.

    Returns
    -------
    pandas.DataFrame
        At least one column and one row; column names are stripped strings.

    Raises
    ------
    TreevizError
        For an empty, oversized, binary, undecodable, unparseable or header-only file, or one whose
        header repeats a column name.

    Examples
    --------
    >>> read_table("t.csv", b"a;b\\n1;x\\n2;y\\n").shape
    (2, 2)
    """
    name = str(filename or "the file")
    data = bytes(data or b"")
    if encoding not in ENCODINGS:
        raise TreevizError(f"Unknown encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}.")
    limit = max_upload_mb()
    if len(data) > limit * _MB:
        raise TreevizError(f"'{name}' is {_fmt_mb(len(data))}, over the upload limit of {limit:g} MB. "
                           "Upload a smaller file (for example a sample of the rows).")
    if not data.strip():
        raise TreevizError(f"'{name}' is empty. Choose a file with a header row and data rows.")
    lower = name.lower()
    if data[:4] == b"PAR1":
        df = _read_parquet(name, data)
    elif lower.endswith(PARQUET_SUFFIXES):
        raise TreevizError(f"'{name}' is named like a Parquet file but is not one. "
                           "Export it again as Parquet, or upload it as CSV.")
    elif lower.endswith(CSV_SUFFIXES):
        if data[:2] == b"\x1f\x8b":
            data = _gunzip(name, data, limit)
        _reject_binary(name, data)
        text = _decode(name, data, encoding)
        df = _read_csv(name, text, tab_default=".tsv" in lower)
    else:
        suffix = os.path.splitext(lower)[1] or "no extension"
        raise TreevizError(f"'{name}' ({suffix}) is not a CSV or Parquet file. "
                           "Save the table as CSV (UTF-8) or Parquet and upload that.")
    if df.shape[1] == 0:
        raise TreevizError(f"'{name}' is empty: no columns were found. Choose a file with a header row.")
    if df.shape[0] == 0:
        raise TreevizError(f"'{name}' is empty: it has a header row but no data rows. "
                           "Add data rows below the header and upload it again.")
    return df


def _gunzip(name: str, data: bytes, limit_mb: float) -> bytes:
    """Decompress, refusing archives that grow beyond the upload limit (zip bombs)."""
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            while chunk := fh.read(_MB):
                out.write(chunk)
                if out.tell() > limit_mb * _MB:
                    raise TreevizError(f"'{name}' unpacks to more than the upload limit of {limit_mb:g} MB. "
                                       "Upload a smaller table.")
    except (OSError, EOFError, ValueError) as err:
        if isinstance(err, TreevizError):
            raise
        raise TreevizError(f"'{name}' is not a valid gzip file (it may be truncated). "
                           "Compress it again or upload the plain CSV.") from None
    return out.getvalue()


def _reject_binary(name: str, data: bytes) -> None:
    """Refuse known binary formats, and bytes with NULs or many control characters (UTF-16, whose
    NULs are part of the text, is checked after decoding instead)."""
    for magic, what in _BINARY_SIGNATURES.items():
        if data.startswith(magic):
            raise TreevizError(f"'{name}' is {what}, not a CSV table. Upload the table as CSV or Parquet.")
    if _utf16_codec(data):
        return
    head = data[:8192]
    controls = sum(head.count(bytes([c])) for c in (*range(9), 11, 12, *range(14, 32)))
    if b"\x00" in data or controls > len(head) // 100 + 2:
        raise _binary_error(name)


def _binary_error(name: str) -> TreevizError:
    return TreevizError(f"'{name}' contains binary data, not CSV text. "
                        "Upload the table as CSV (UTF-8) or Parquet.")


def _utf16_codec(data: bytes) -> str | None:
    """``"utf-16"`` for text with a UTF-16 byte-order mark; ``"utf-16-le"``/``"utf-16-be"`` for text
    without one whose first 4 KiB has a NUL in nearly every second byte and in no other (mostly
    ASCII text, as a CSV's digits, delimiters and line ends are); else None."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "utf-16"
    head = data[:4096]
    if len(head) < 4 or len(head) % 2:
        return None
    even, odd = head[0::2].count(0), head[1::2].count(0)
    half = len(head) // 2
    if odd >= 0.6 * half and even <= half // 20:
        return "utf-16-le"
    if even >= 0.6 * half and odd <= half // 20:
        return "utf-16-be"
    return None


def _decode(name: str, data: bytes, encoding: str) -> str:
    if encoding == "auto":
        encoding = _utf16_codec(data) or "utf-8-sig"
    elif encoding == "utf-8":
        encoding = "utf-8-sig"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as err:
        byte = data[err.start:err.start + 1].hex()
        line = data[:err.start].count(b"\n") + 1
        shown = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise TreevizError(f"'{name}' is not valid {shown} text (byte 0x{byte} on line {line}). "
                           "Re-save it as UTF-8, or choose its encoding (for example latin-1).") from None
    if "\x00" in text:
        raise _binary_error(name)
    return text


#: A record ends where pandas' parser ends one: \r\n, \n, or an old Mac \r. Not at the other breaks
#: str.splitlines knows (U+2028, U+2029, \x0b, \x0c, \x1c-\x1e, \x85), which are text inside a field.
_LINE_END = re.compile(r"\r\n|\r|\n")


def _first_lines(text: str, n: int) -> list[str]:
    """The first ``n`` lines of ``text``, split only at :data:`_LINE_END` (and without reading further)."""
    lines, start = [], 0
    for end in _LINE_END.finditer(text):
        lines.append(text[start:end.start()])
        start = end.end()
        if len(lines) == n:
            return lines
    return [*lines, text[start:]] if start < len(text) else lines


def _sniff_delimiter(text: str, tab_default: bool) -> str:
    """The delimiter among , ; tab that splits the first lines into the most, consistent fields."""
    lines = [ln for ln in _first_lines(text, 30) if ln.strip()]
    best, best_score = ("\t" if tab_default else ","), 1
    for delim in (",", ";", "\t"):
        try:
            counts = [len(row) for row in csv.reader(lines, delimiter=delim)]
        except csv.Error:
            continue
        if counts and counts[0] > best_score and all(c == counts[0] for c in counts[1:]):
            best, best_score = delim, counts[0]
    if best_score == 1:  # nothing consistent: fall back to the most frequent delimiter in the header
        header = lines[0] if lines else ""
        found = max((",", ";", "\t"), key=header.count)
        if header.count(found):
            best = found
    return best


def _header_duplicates(text: str, delim: str) -> list[str]:
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=delim), [])
    except csv.Error:
        return []
    names = [h.strip() for h in header]
    return sorted({n for n in names if n and names.count(n) > 1})


def _read_csv(name: str, text: str, tab_default: bool) -> pd.DataFrame:
    delim = _sniff_delimiter(text, tab_default)
    dups = _header_duplicates(text, delim)
    if dups:
        raise duplicate_column_error(name, dups)
    df = _parse_csv(name, text, delim)
    if df.shape[1] and df.iloc[:, -1].isna().any():  # a short row leaves the last column empty
        _check_short_rows(name, text, delim)
    if (repeats := _header_repeats(df)).size:
        lines = _header_repeat_lines(text, delim, df.columns)
        df = _parse_csv(name, df.drop(index=repeats).to_csv(index=False, sep=delim), delim)
        shown = ", ".join(str(n) for n in lines[:10]) + (" ..." if len(lines) > 10 else "")
        lines_text = ("line " if len(lines) == 1 else "lines ") + shown
        df.attrs[READ_NOTES] = [f"Dropped {len(repeats)} row(s) that repeat the header ({lines_text}), as where "
                                "several files were joined into one."]
    return df


def _parse_csv(name: str, text: str, delim: str) -> pd.DataFrame:
    try:
        with warnings.catch_warnings():
            # index_col=False stops pandas silently turning the first column into the index when
            # rows are longer than the header; it warns instead, and we make that an error below.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(io.StringIO(text), sep=delim, low_memory=False, index_col=False,
                             decimal="," if delim == ";" else ".")
    except pd.errors.EmptyDataError:
        raise TreevizError(f"'{name}' is empty. Choose a file with a header row and data rows.") from None
    except pd.errors.ParserWarning:
        raise TreevizError(_long_row_message(name, text, delim)) from None
    except pd.errors.ParserError as err:
        raise TreevizError(_parser_message(name, str(err))) from None
    except Exception:
        raise TreevizError(f"'{name}' could not be read as a CSV table. Check that it is a plain "
                           "comma-, semicolon- or tab-separated text file.") from None
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _records(text: str, delim: str) -> csv.reader:
    return csv.reader(io.StringIO(text, newline=""), delimiter=delim)


def _check_short_rows(name: str, text: str, delim: str) -> None:
    """Refuse a row with fewer fields than the header (pandas would pad it with missing values)."""
    reader = _records(text, delim)
    try:
        want = len(next(reader, []))
        for row in reader:
            if 0 < len(row) < want and any(field.strip() for field in row):
                fields = f"{len(row)} field" + ("s" if len(row) > 1 else "")
                raise TreevizError(f"'{name}' could not be read: line {reader.line_num} has {fields} "
                                   f"but the header has {want}. Give that line one value per column (an empty "
                                   "value between two delimiters for a missing one) and upload again.")
    except csv.Error:  # pandas read it, so this reader's stricter rules do not apply
        return


_UNNAMED = re.compile(r"Unnamed: \d+")  # how pandas names a column without a header


def _header_repeats(df: pd.DataFrame) -> pd.Index:
    """The rows whose every cell is its column's name (a header repeated in the middle of the file;
    a column without a name, which pandas calls 'Unnamed: 0', has an empty cell there)."""
    same = pd.Series(True, index=df.index)
    named = [c for c in df.columns if not _UNNAMED.fullmatch(c)]
    if df.empty or not named:
        return df.index[:0]
    for c in df.columns:
        if c in named:
            if not pd.api.types.is_string_dtype(df[c].dtype):
                return df.index[:0]
            same &= df[c].astype(str).str.strip() == c
        else:
            same &= df[c].isna()
        if not same.any():
            break
    return df.index[same]


def _header_repeat_lines(text: str, delim: str, columns: pd.Index) -> list[int]:
    header = ["" if _UNNAMED.fullmatch(c) else c for c in columns]
    reader = _records(text, delim)
    next(reader, None)
    try:
        return [reader.line_num for row in reader if [f.strip() for f in row] == header]
    except csv.Error:
        return []


def _long_row_message(name: str, text: str, delim: str) -> str:
    """Find the first row with more fields than the header (only run once pandas has warned)."""
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    want = len(next(reader, []))
    for row in reader:
        if len(row) > want:
            return (f"'{name}' could not be read: line {reader.line_num} has {len(row)} fields but the "
                    f"header has {want}. Fix that line (an extra delimiter, or a value that needs quotes) "
                    "and upload again.")
    return f"'{name}' has rows longer than its header. Make every row have one value per column."


def _parser_message(name: str, raw: str) -> str:
    fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", raw)
    if fields:
        want, line, got = fields.groups()
        return (f"'{name}' could not be read: line {line} has {got} fields but the header has {want}. "
                "Fix that line (an extra delimiter, or a value that needs quotes) and upload again.")
    row = re.search(r"(?:line|row) (\d+)", raw)
    where = f" near line {row.group(1)}" if row else ""
    return (f"'{name}' could not be read as CSV{where}. Check for unbalanced quotes or a "
            "missing delimiter there and upload again.")


def _read_parquet(name: str, data: bytes) -> pd.DataFrame:
    import pyarrow.parquet as pq  # deferred: pandas' Parquet engine, needed only for Parquet files

    unreadable = TreevizError(f"'{name}' is not a readable Parquet file (it may be truncated or damaged). "
                              "Export it again, or upload the table as CSV.")
    try:
        parquet = pq.ParquetFile(io.BytesIO(data))
        names = [str(n).strip() for n in parquet.schema_arrow.names]
    except Exception:
        raise unreadable from None
    dups = sorted({n for n in names if names.count(n) > 1})
    if dups:  # checked on the schema: pandas would refuse such a file with a confusing message
        raise duplicate_column_error(name, dups)
    try:
        df = parquet.read().to_pandas()
    except Exception:
        raise unreadable from None
    df.columns = [str(c).strip() for c in df.columns]
    return df.reset_index(drop=True)
