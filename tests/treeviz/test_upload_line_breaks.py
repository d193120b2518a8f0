"""The upload reader's delimiter sniffer splits lines where pandas does (``\\n``, ``\\r\\n`` and an old
Mac ``\\r``), not at the other characters ``str.splitlines`` breaks at: a name or cell holding U+2028,
U+2029, a vertical tab, a form feed, \\x1c-\\x1e or NEL is one field of one line, and the file reads
with the right delimiter, shape and text."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from treeviz.services.data import read_table

#: What str.splitlines breaks at beyond \n and \r: none of them ends a CSV record.
NOT_LINE_ENDS = ["\u2028", "\u2029", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85"]
DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}


def table_text(delim: str, ch: str, quoted: bool) -> str:
    """Three columns, the character inside the first header name and inside a cell of the first row."""
    q = '"' if quoted else ""
    header = delim.join([f"{q}na{ch}me{q}", "b", "c"])
    rows = [delim.join([f"{q}x{ch}y{q}", "1", "2"]), delim.join(["z", "3", "4"])]
    return "\n".join([header, *rows]) + "\n"


@pytest.mark.parametrize("quoted", [False, True], ids=["plain", "quoted"])
@pytest.mark.parametrize("delim", list(DELIMITERS), ids=list(DELIMITERS.values()))
@pytest.mark.parametrize("ch", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
def test_a_character_that_is_no_line_end_stays_in_its_field(ch, delim, quoted):
    text = table_text(delim, ch, quoted)
    expected = pd.read_csv(io.StringIO(text), sep=delim)  # what pandas reads with the right delimiter
    assert expected.shape == (2, 3)
    df = read_table("t.csv", text.encode("utf-8"))
    assert df.shape == (2, 3), list(df.columns)
    assert list(df.columns) == [f"na{ch}me", "b", "c"]
    assert df.iloc[0, 0] == f"x{ch}y"
    assert df["b"].tolist() == [1, 3]


@pytest.mark.parametrize("ch", NOT_LINE_ENDS, ids=[f"U+{ord(c):04X}" for c in NOT_LINE_ENDS])
@pytest.mark.parametrize("delim", list(DELIMITERS), ids=list(DELIMITERS.values()))
def test_a_file_with_the_character_in_many_rows_reads_whole(ch, delim):
    # control characters in every row would make the file look binary (a check of its own): one row then
    every = ch in ("\u2028", "\u2029", "\x85")
    rows = [delim.join([str(i), str(i * 2), str(i * 3), str(i * 4), f"note{ch if every or i == 1 else ''}{i}"])
            for i in range(40)]
    text = delim.join("abcde") + "\n" + "\n".join(rows) + "\n"
    df = read_table("t.csv", text.encode("utf-8"))
    assert df.shape == (40, 5), list(df.columns)
    assert df["e"].tolist()[1] == f"note{ch}1"


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["unix", "windows", "old-mac"])
@pytest.mark.parametrize("delim", list(DELIMITERS), ids=list(DELIMITERS.values()))
def test_line_ends_pandas_reads_are_still_line_ends(end, delim):
    text = end.join([delim.join(["a\u2028b", "c", "d"]), delim.join(["1", "2", "3"]),
                     delim.join(["4", "5", "6"])]) + end
    df = read_table("t.csv", text.encode("utf-8"))
    assert df.shape == (2, 3)
    assert list(df.columns) == ["a\u2028b", "c", "d"]
