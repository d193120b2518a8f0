"""Bad uploads, shared by the data-layer tests and the app tests.

``BAD_INPUTS[name] = (filename, data, options, expected)``:

* ``filename``, ``data``: what the user uploads (``read_table(filename, data)``);
* ``options``: keyword arguments for :class:`treeviz.services.data.upload.TableOptions`;
* ``expected``: a substring (case-sensitive) of what the user must be told. For names in
  :data:`FATAL` it is in the :class:`~models.ground.errors.TreevizError` message; for the others
  (:data:`NOTE_ONLY`) the upload succeeds and it is in one of ``Dataset.notes``.

Some cases need an environment variable while they are read (``BAD_INPUT_ENV[name]``; with
pytest use ``monkeypatch.setenv``): ``oversized`` is only oversized under a 0.01 MB limit.
:func:`load` runs the whole upload path for one case.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from treeviz.services.data.dataset import Dataset
from treeviz.services.data.upload import TableOptions, read_table, table_to_dataset


def _csv(rows: list[list[object]]) -> bytes:
    return "".join(",".join(str(v) for v in row) + "\n" for row in rows).encode("utf-8")


def _table(n: int = 20, **extra_columns) -> bytes:
    """A valid table with numeric ``a``, ``b`` and a two-class target ``y``, plus extra columns."""
    header = ["a", "b", *extra_columns, "y"]
    rows = [header]
    for i in range(n):
        rows.append([i, (i * 7) % 5, *(col[i] for col in extra_columns.values()), "yes" if i % 2 else "no"])
    return _csv(rows)


def _png() -> bytes:
    """A real 1×1 grey PNG."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\x80"))
            + chunk(b"IEND", b""))


def _zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("inside.csv", _table().decode())
    return buf.getvalue()


def _target_with_gaps() -> bytes:
    """20 rows; the target is empty in rows 0, 5, 10 and 15."""
    return _csv([["a", "y"]] + [[i, "" if i % 5 == 0 else i % 2] for i in range(20)])


def _latin1() -> bytes:
    cities = ["Málaga", "Zürich", "Köln", "São Paulo", "Besançon"] * 4
    rows = [["city", "size", "y"]] + [[c, i, "ja" if i % 2 else "não"] for i, c in enumerate(cities)]
    return "".join(",".join(map(str, r)) + "\n" for r in rows).encode("latin-1")


def _huge_values() -> bytes:
    """Feature values near ±1e308 (up to 1.56e308, near the largest float) in column ``big``."""
    return _table(big=[repr((-1) ** i * (1 + i / 20) * 0.8e308) for i in range(20)])


def _huge_regression_target() -> bytes:
    """A numeric regression target near 1e300."""
    return _csv([["a", "b", "y"]] + [[i, i % 3, f"{(i + 1) * 1e300:.6g}"] for i in range(20)])


def _mangled() -> bytes:
    """What a careless export writes: pandas' to_csv index, a column 'x=a' next to the one-hot column
    'x', percentages, euros with decimal commas, and the header repeated where two files were joined."""
    rows = [["", "x", "x=a", "share", "price", "y"]]
    for i in range(20):
        rows.append([i, "ab"[i % 2], (i * 7) % 5, f"{i} %", f'"{i + 1}.{i:03d},{i % 10}"', "yes" if i % 3 else "no"])
    return _csv(rows[:11] + rows[:1] + rows[11:])


OVERSIZED_LIMIT_MB = "0.01"

BAD_INPUTS: dict[str, tuple[str, bytes, dict, str]] = {
    # -- the file itself (read_table)
    "empty": ("empty.csv", b"", {"target": "y"}, "empty"),
    "whitespace_only": ("blank.csv", b"  \n\n\t\n", {"target": "y"}, "empty"),
    "header_only": ("header.csv", b"a,b,y\n", {"target": "y"}, "no data rows"),
    "oversized": ("big.csv", _table(2000), {"target": "y"}, "over the upload limit"),
    "png_named_csv": ("picture.csv", _png(), {"target": "y"}, "PNG image, not a CSV"),
    "zip_named_csv": ("archive.csv", _zip(), {"target": "y"}, "zip archive"),
    "nul_bytes": ("nul.csv", b"a,b,y\n1,\x00\x00\x00,2\n" * 5, {"target": "y"}, "binary data"),
    "unknown_extension": ("table.xlsx", _table(), {"target": "y"}, "not a CSV or Parquet file"),
    "fake_parquet": ("table.parquet", _table(), {"target": "y"}, "not one"),
    "latin1_encoding": ("accents.csv", _latin1(), {"target": "y"}, "not valid UTF-8"),
    "unparseable": ("ragged.csv", b"a,b,y\n1,2,x\n3,4,y\n5,6,7,z\n", {"target": "y"}, "line 4 has 4 fields"),
    "duplicate_columns": ("dups.csv", b"a,b,a,y\n" + b"1,2,3,x\n" * 12, {"target": "y"},
                          "'a' appear more than once"),
    # -- the table (table_to_dataset)
    "one_row": ("one.csv", b"a,b,y\n1,2,x\n", {"target": "y"}, "only 1 usable row"),
    "too_few_rows": ("few.csv", _table(5), {"target": "y"}, "at least 10"),
    "missing_target_column": ("t.csv", _table(), {"target": "label"}, "no column 'label'"),
    "single_class": ("single.csv", _csv([["a", "y"]] + [[i, "same"] for i in range(20)]), {"target": "y"},
                     "single class"),
    "too_many_classes": ("ids.csv", _csv([["a", "y"]] + [[i, f"id{i}"] for i in range(300)]),
                         {"target": "y"}, "too many classes"),
    "target_with_nan": ("nan.csv", _target_with_gaps(), {"target": "y"}, "4 missing value(s)"),
    "inf_values": ("inf.csv", _table(a2=["inf" if i in (3, 7) else i for i in range(20)]), {"target": "y"},
                   "Column 'a2' has 2 infinite value(s)"),
    "regression_text_target": ("text.csv", _table(), {"target": "y", "task": "regression"}, "not numeric"),
    "no_usable_feature": ("nofeat.csv", _csv([["c", "y"]] + [[1, i % 2] for i in range(20)]),
                          {"target": "y"}, "No usable feature"),
    "short_row": ("short.csv", b"a,b,y\n" + b"1,2,x\n3,4,z\n" * 6 + b"5,6\n", {"target": "y"},
                  "line 14 has 2 fields but the header has 3"),
    "huge_regression_target": ("hugey.csv", _huge_regression_target(), {"target": "y", "task": "regression"},
                               "The regression target 'y' has values up to 2e+301"),
    # -- loads, with a note
    "all_nan_column": ("allnan.csv", _table(empty=[""] * 20), {"target": "y"},
                       "Dropped 1 column(s) with no values at all: 'empty'"),
    "constant_column": ("const.csv", _table(same=[4] * 20), {"target": "y"},
                        "Dropped 1 constant column(s)"),
    "many_levels": ("levels.csv", _table(5000, code=[f"k{i:05d}" for i in range(5000)]), {"target": "y"},
                    "'code' (5000 levels)"),
    "missing_category": ("cat.csv", _table(colour=["", "red", "blue", "red"] * 5), {"target": "y"},
                         "encoded as the level '(missing)'"),
    "drop_missing_target": ("nan.csv", _target_with_gaps(), {"target": "y", "drop_missing_target": True},
                            "Dropped 4 row(s)"),
    "huge_values": ("huge.csv", _huge_values(), {"target": "y"},
                    "'big' have values up to 1.56e+308 in magnitude, too large for the models without scaling"),
    "thousands_separators": ("grouped.csv", _table(price=[f'"{1000 * i + 250.5:,}"' for i in range(20)]),
                             {"target": "y"}, "Read column(s) 'price' as numbers written with thousands separators"),
    "date_column": ("dates.csv", _table(order_date=[f"2024-{1 + i // 2:02d}-{1 + 9 * (i % 2):02d}" for i in range(20)]),
                    {"target": "y"}, "Read column(s) 'order_date' as dates"),
    "mangled_columns": ("export.csv", _mangled(), {"target": "y"}, "'x=a (2)' (was 'x=a')"),
}

NOTE_ONLY = frozenset({"all_nan_column", "constant_column", "many_levels", "missing_category",
                       "drop_missing_target", "huge_values", "thousands_separators", "date_column",
                       "mangled_columns"})
FATAL = frozenset(BAD_INPUTS) - NOTE_ONLY
BAD_INPUT_ENV: dict[str, dict[str, str]] = {"oversized": {"TREEVIZ_MAX_UPLOAD_MB": OVERSIZED_LIMIT_MB}}


def load(name: str) -> Dataset:
    """Run one case through ``read_table`` and ``table_to_dataset`` (set ``BAD_INPUT_ENV`` first)."""
    filename, data, options, _ = BAD_INPUTS[name]
    return table_to_dataset(read_table(filename, data), filename, TableOptions(**options))
