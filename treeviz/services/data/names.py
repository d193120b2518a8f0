"""Control characters in names: what a terminal or a page would act on instead of showing.

An escape sequence (``ESC [ 31 m``) recolours a terminal, moves its cursor or retitles its window;
a bidirectional override (U+202E) reorders what a page or a terminal shows; a lone surrogate cannot
be written as UTF-8. A table's column names and class labels are refused when they hold one
(:func:`treeviz.services.data.table.table_to_dataset` says which), since the run store keeps no
such text (``RunRecord.from_dict``); a file's name, which only labels the data set, has each one
written as its escape (:func:`visible`), as every line of the command line does.
"""

from __future__ import annotations

import re
from typing import Any

#: What a run record may not hold in its text (``RunRecord.from_dict``): C0 and C1 control
#: characters, lone surrogates and the bidirectional overrides and isolates.
RECORD_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\u202a-\u202e\u2066-\u2069]")
#: What a terminal or a page would act on: C0 controls but tab and line feed, DEL, C1 controls,
#: lone surrogates, the bidirectional marks, overrides and isolates, and the Unicode line and
#: paragraph separators.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def visible(text: Any) -> str:
    """``text`` with each character of :data:`UNSAFE` written as its escape (``\\x1b``, ``\\u202e``)."""
    return UNSAFE.sub(lambda m: ascii(m.group())[1:-1], str(text))


def unsafe_names(names: Any) -> list[str]:
    """The names the run store would refuse (:data:`RECORD_CONTROL`) or a terminal would act on
    (:data:`UNSAFE`), each as :func:`visible` writes it, in quotes."""
    return [f"'{visible(n)}'" for n in names if RECORD_CONTROL.search(str(n)) or UNSAFE.search(str(n))]
