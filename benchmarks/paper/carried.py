"""What a run keeps of the previous results file without measuring it again.

A run writes what it measured. A row (or a section: a study, the device timings) that an earlier
run measured stays in the new file only with that run's own stamp (commit, date and command) and
marked ``"carried_over": true``, so that the report shows it as an earlier run's. One without a
stamp of its own is left out, and the run says so."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from benchmarks.common import results_dir

#: What a carried row must keep of the run that measured it.
STAMP = ("commit", "date", "command")


def previous_results(name: str, quick: bool) -> dict[str, Any]:
    """``results`` of the stored ``<results>/<name>.json`` when it holds a run of ``name`` in the
    same mode (``--quick`` or not); empty otherwise."""
    try:
        payload = json.loads((results_dir() / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(payload, dict) or payload.get("benchmark") != name or bool(payload.get("quick")) != quick:
        return {}
    return payload.get("results") or {}


def stamped(item: dict[str, Any]) -> bool:
    """Whether ``item`` carries its own stamp (every key of :data:`STAMP`, not empty)."""
    return all(item.get(key) for key in STAMP)


def carry_rows(rows: Iterable[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """(the stamped rows, each marked carried over; the names of the others, left out)."""
    kept, dropped = [], []
    for row in rows:
        if stamped(row):
            kept.append({**row, "carried_over": True})
        else:
            dropped.append(str(row.get("name", row.get("workload", "?"))))
    return kept, dropped


def carry_section(section: Any) -> dict[str, Any] | None:
    """A section of the previous file, marked carried over, when it is stamped itself or is a section
    of rows that are all stamped (each row marked too); None otherwise."""
    if not isinstance(section, dict):
        return None
    if stamped(section):
        return {**section, "carried_over": True}
    rows = section.get("rows")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) and stamped(r) for r in rows):
        return {**section, "rows": [{**r, "carried_over": True} for r in rows], "carried_over": True}
    return None


def carry_sections(previous: dict[str, Any], keys: Iterable[str], results: dict[str, Any]) -> list[str]:
    """Put each section of ``previous`` under ``keys`` that :func:`carry_section` keeps into
    ``results`` (where ``results`` has none of its own); the keys of those left out."""
    dropped = []
    for key in keys:
        if key in results or key not in previous:
            continue
        kept = carry_section(previous[key])
        if kept is None:
            dropped.append(key)
        else:
            results[key] = kept
    return dropped


def report(dropped_rows: list[str], dropped_sections: list[str]) -> None:
    """Say what an earlier run measured and this run leaves out (no stamp of its own)."""
    if dropped_rows or dropped_sections:
        print("  left out of the new file (an earlier run's, without a stamp of its own): "
              + ", ".join([*dropped_rows, *dropped_sections]), flush=True)
