"""Values computed once per stored run record, remembered while the record is unchanged."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from models.registry import families

#: The most values :func:`per_record` remembers for one function before it starts again.
PER_RECORD_MAX = 50_000
_T = TypeVar("_T")


def per_record(fn: Callable[[Any], _T]) -> Callable[[Any], _T]:
    """``fn`` of a run record (a :class:`treeviz.services.store.runs.RunRecord`), computed once per record.

    A page redrawn with 5 000 runs makes a label or a table row for each at every rerun; the store
    gives back the same record objects while their ``run.json`` files are unchanged, so the value
    is looked up (a record's hash is its id, name and status; a record equal in every field gets
    the same value). Values are forgotten when the registry's families are discovered again (a
    label names the family) and when :data:`PER_RECORD_MAX` of them are kept.
    """
    memo: dict[Any, _T] = {}
    seen: list[Any] = [None]  # the families() mapping the values were made with

    @functools.wraps(fn)
    def cached(record: Any) -> _T:
        registry = families()
        if seen[0] is not registry or len(memo) >= PER_RECORD_MAX:
            memo.clear()
            seen[0] = registry
        try:
            return memo[record]
        except KeyError:
            value = memo[record] = fn(record)
            return value

    return cached
