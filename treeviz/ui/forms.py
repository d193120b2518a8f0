"""Hyperparameter forms generated from a family's schema (no family-specific widgets here).

Parameters the app sets elsewhere (``Param.form`` False, such as the device chosen in the sidebar)
are not in the form."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import streamlit as st

from models.schema import Family, Param


def _widget(p: Param, value: Any, key: str) -> Any:
    label = p.title
    if p.optional_label is not None:
        unset = st.checkbox(f"{label}: {p.optional_label}", value=value is None, key=f"{key}__none",
                            help=p.help)
        if unset:
            return None
        if value is None:
            value = p.low if p.low is not None else (1 if p.kind == "int" else 0.0)
    if p.kind == "bool":
        return st.checkbox(label, value=bool(value), key=key, help=p.help)
    if p.kind == "text":
        return st.text_input(label, value=str(value), key=key, help=p.help)
    if p.kind == "choice":
        index = p.choices.index(value) if value in p.choices else 0
        return st.selectbox(label, p.choices, index=index, key=key, help=p.help)
    if p.kind in ("int", "seed"):
        return int(
            st.number_input(label, value=int(value), step=1,
                            min_value=int(p.low) if p.low is not None else None,
                            max_value=int(p.high) if p.high is not None else None,
                            key=key, help=p.help)
        )
    return float(
        st.number_input(label, value=float(value), format="%g",
                        min_value=float(p.low) if p.low is not None else None,
                        max_value=float(p.high) if p.high is not None else None,
                        key=key, help=p.help)
    )


def family_select(families: Sequence[Family], *, key: str, hide_single: bool = False) -> Family:
    """A "Model family" select box over ``families`` (by label); returns the chosen one. With
    ``hide_single`` a lone family is taken without a box."""
    if hide_single and len(families) == 1:
        return families[0]
    labels = {f.key: f.label for f in families}
    chosen = st.selectbox("Model family", list(labels), format_func=labels.get, key=key)
    return next(f for f in families if f.key == chosen)


def offered_family(families: Sequence[Family], *, key: str, none: str) -> Family | None:
    """:func:`family_select` over ``families``; when there are none, the sentence ``none`` (what to
    choose instead) and ``None``."""
    if not families:
        st.info(none)
        return None
    return family_select(families, key=key)


def kept_select(label: str, options: dict[str, str], *, key: str) -> str:
    """A select box over the keys of ``options`` (shown by their values) whose choice lives in
    ``st.session_state[key]``: a choice that is gone (deleted, or none yet) falls back to the first
    option, so that the box never shows a stale id."""
    ids = list(options)
    if st.session_state.get(key) not in ids:
        st.session_state[key] = ids[0]
    return st.selectbox(label, ids, format_func=options.get, key=key)


def param_form(family: Family, task: str, values: dict[str, Any], *, key: str,
               exclude: Iterable[str] = ()) -> dict[str, Any]:
    """Render one widget per hyperparameter of ``family`` for ``task``; return the chosen values.

    ``values`` seeds the widgets (defaults or a preset). Parameters marked ``advanced`` go into an
    expander; those in ``exclude`` (set elsewhere on the page, e.g. the swept λ) are left out.
    Widget keys include ``key`` so that switching family or preset resets them.
    """
    out: dict[str, Any] = {}
    params = [p for p in family.params_for(task, form_only=True) if p.name not in set(exclude)]
    basic = [p for p in params if not p.advanced]
    advanced = [p for p in params if p.advanced]
    cols = st.columns(2)
    for i, p in enumerate(basic):
        with cols[i % 2]:
            out[p.name] = _widget(p, values.get(p.name, p.default), f"{key}.{p.name}")
    if advanced:
        with st.expander("Advanced parameters"):
            for p in advanced:
                out[p.name] = _widget(p, values.get(p.name, p.default), f"{key}.{p.name}")
    return out
