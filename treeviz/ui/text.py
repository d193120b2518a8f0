"""Names are text, never markup: the one function every page shows a user's string through.

Streamlit reads Markdown (with its own extensions: ``:red[…]``, ``:material/…:``, ``$…$``) in
``st.markdown``, ``st.caption``, the alert boxes (``st.info`` … ``st.error``), headings, widget
labels, ``help`` tooltips, expander and tab labels and a progress bar's text. A run named
``![x](http://host/p.png)`` would make every visitor's browser fetch that address, and
``[text](url)`` would become a live link. Every string a user controls (data set, file, column,
feature, class and run names, notes, imported records, and error sentences that quote them) goes
through :func:`md` before it reaches one of those; the template around it is the page's own
Markdown. ``tests/test_contract_names.py`` renders every page with names from a hostile corpus
and fails when one reaches the page unescaped.

Selectbox and multiselect options, data frames, ``st.code`` and text inputs show plain text and
need nothing. Figures have their own rule (:func:`treeviz.plots.style.plot_text`).
"""

from __future__ import annotations

import re
from typing import Any

# Every ASCII punctuation character: CommonMark lets a backslash escape each one, so the escaped
# string renders as exactly these characters, whatever Markdown would have made of them: links,
# images, emphasis, code, headings, lists, tables, HTML, math ($) and directives (:red[…]).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# Line and paragraph breaks would start a new block (a heading, a list, a quote): a name is one
# line of text, so each becomes a space.
_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
# Escapes do not reach what works on the parsed text: GitHub's literal autolinks ("http://…",
# "www.…", "name@host.org") and Streamlit's shortcodes (":material/home:", ":red[…]", ":smile:")
# are found in the text after the escapes are read. An invisible word joiner (U+2060) after such
# a colon, after "@" and between "www" and "." breaks each pattern without changing what is shown.
WORD_JOINER = "\u2060"
_PATTERNS = re.compile(r":(?=\S)|@|(?<=www)(?=\.)", re.IGNORECASE)


def _joined(text: str) -> str:
    return _PATTERNS.sub(lambda m: m.group() + WORD_JOINER, text)


def md(value: Any) -> str:
    """``value`` as Markdown that Streamlit shows as exactly its text, on one line: every ASCII
    punctuation character backslash-escaped (``md("[a](b)")`` is ``\\[a\\]\\(b\\)``), every line
    break a space, and an invisible word joiner where a link or shortcode would start."""
    return _PUNCTUATION.sub(r"\\\1", _joined(_BREAKS.sub(" ", str(value))))


def md_code(value: Any) -> str:
    """``value`` as an inline code span (monospace), shown exactly: nothing inside a code span is
    Markdown (Streamlit's shortcodes aside, broken as in :func:`md`), and the fence is one backtick
    longer than the longest run of backticks in ``value``."""
    text = _joined(_BREAKS.sub(" ", str(value)))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    # a space on each side when the text starts or ends with a backtick (CommonMark strips one)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"
