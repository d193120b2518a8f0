"""Showing errors to users: a sentence in the page, never a traceback."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

import streamlit as st

from models.ground.errors import TreevizError
from treeviz.ui.text import md

log = logging.getLogger("treeviz")


@contextlib.contextmanager
def user_errors(context: str = "") -> Iterator[None]:
    """Run a block; show a TreevizError as ``st.error`` and anything else as a short bug note.

    The page goes on rendering after the block, so one failure never makes the app unusable.
    """
    try:
        yield
    except TreevizError as err:
        st.error(md(err))  # its sentence may quote a name: text, never Markdown
    except Exception as err:
        log.exception("Unexpected error %s", context)
        where = f" while {context}" if context else ""
        st.error(md(
            f"Something went wrong{where} ({type(err).__name__}: {err}). "
            "The details were written to the app's log; please report them."
        ))
