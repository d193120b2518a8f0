"""Every paper row of the stored results, in one Markdown table: row, ours, paper, protocol
(``full``, or ``reduced``/``skipped`` with the row's note), time, machine, the run that produced
it (commit and date, marked where the row was backfilled from git history or carried over from an
earlier run than its file's) and whether ours is within the paper's spread. Spreads are standard
deviations, or standard errors marked ``SE`` where the paper gives those.

``python -m benchmarks.report.paper_table`` reads ``benchmarks/results/{tao_paper,dgt,skinny,
embeddings,laptao}.json`` (``TREEVIZ_BENCH_RESULTS`` moves the folder) and prints the table, then a
count of the rows that are reduced, skipped, outside the paper's spread and from earlier runs. It
runs nothing: the numbers are the ones the benchmarks wrote. The protocol is the row's explicit
``protocol`` field (:data:`benchmarks.common.PROTOCOLS`); a row without a valid one is an error,
never guessed from its text.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from benchmarks.common import BACKFILLED, results_dir, row_problems

FILES = ("tao_paper", "dgt", "skinny", "embeddings", "laptao")
#: The keys a row's time is read from, first found first (a search's reruns are added to it).
TIME_KEYS = ("row_seconds", "part_seconds", "search_s", "fit_seconds", "fit_s_mean")
WITHIN_KEYS = ("within_one_std_or_better", "within_paper_se_or_better", "within")


def _number(mean: Any, std: Any, unit: str = "") -> str:
    if mean is None:
        return "—"
    return f"{mean:.3f}" + (f" ± {std:.3f}{unit}" if std is not None else "")


def row_spreads(row: dict[str, Any]) -> tuple[str, str]:
    """Ours and the paper's, each as mean ± spread. A row that records ``ours_se`` is compared on
    standard errors (the paper's spread is an SE there, e.g. Skinny Trees' mean ± SE over
    simulations, unless the row's ``paper_spread`` says ``SD``), so both are marked; other rows
    show standard deviations."""
    if row.get("ours_se") is not None:
        return (_number(row.get("ours_mean"), row["ours_se"], " SE"),
                _number(row.get("paper_mean"), row.get("paper_std"), f" {row.get('paper_spread', 'SE')}"))
    return _number(row.get("ours_mean"), row.get("ours_std")), _number(row.get("paper_mean"), row.get("paper_std"))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def row_time(row: dict[str, Any]) -> str:
    """The row's wall time in seconds, as its benchmark recorded it (``—`` when it did not); a row
    that records one time per fit shows their mean, and one whose time is partly estimated
    (``estimated_seconds``: tasks logged without a time counted at the mean of those timed) says
    how many were timed."""
    for key in TIME_KEYS:
        value = row.get(key)
        if isinstance(value, list) and value and all(_is_number(v) for v in value):
            return f"{sum(value) / len(value):.0f} s per fit ({len(value)} fits)"
        if _is_number(value):
            reruns = row.get("rerun_s") if key == "search_s" else None
            extra = f" + {reruns:.0f} s reruns" if isinstance(reruns, int | float) else ""
            return f"{value:.0f} s{extra}" + (" per fit" if key == "fit_s_mean" else "")
    estimate, basis = row.get("estimated_seconds"), row.get("estimated_from") or {}
    if _is_number(estimate):
        return f"≈ {estimate:.0f} s (estimated: {basis.get('timed', '?')} of {basis.get('of', '?')} tasks timed)"
    return "—"


def row_machine(row: dict[str, Any]) -> str:
    """The machine the row ran on (every stored row records its own: a timing-only device run
    rewrites its file's machine, not the machine of the rows it keeps): its GPU, else its cores."""
    machine = row.get("machine") or {}
    if isinstance(machine, str):
        return machine
    return machine.get("cuda") or f"{machine.get('cpus')}-core CPU"


def row_protocol(row: dict[str, Any]) -> str:
    """``full``, or ``reduced: <note>`` / ``skipped: <note>`` from the row's explicit ``protocol``
    and its ``protocol_note``. Raises ValueError on a row whose stamp or protocol is missing or not
    one of the three (:func:`benchmarks.common.row_problems`)."""
    problems = row_problems(row)
    if problems:
        raise ValueError(f"results row {row.get('name')!r}: {'; '.join(problems)}")
    protocol = row["protocol"]
    note = row.get("protocol_note")
    return protocol if protocol == "full" or not note else f"{protocol}: {note}"


def _when(stamp: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(stamp))
    except ValueError:
        return None


def row_run(row: dict[str, Any], payload: dict[str, Any]) -> tuple[str, str]:
    """(the run that produced the row: short commit and date; how it came into its file:
    ``this run``, ``backfilled`` (stamped from the git history of its file, written before rows
    were stamped), ``carried over`` (kept from an earlier run than the file's: marked so by the
    run, or stamped with another commit and an earlier date) or ``added later`` (merged into
    the file by a later command))."""
    commit, date = str(row.get("commit", "")), str(row.get("date", ""))
    run = f"{commit[:10]}{'+dirty' if commit.endswith('+dirty') else ''} {date[:10]}".strip()
    if row.get("stamp") == BACKFILLED:
        return run, "backfilled"
    if row.get("carried_over"):
        return run, "carried over"
    if (commit, date) == (payload.get("commit"), payload.get("date")):
        return run, "this run"
    mine, file = _when(date), _when(payload.get("date"))
    return run, ("carried over" if mine and file and mine < file else "added later")


def row_within(row: dict[str, Any]) -> bool | None:
    return next((bool(row[k]) for k in WITHIN_KEYS if k in row and row[k] is not None), None)


def table_rows() -> list[dict[str, Any]]:
    """One dict per stored paper row: file, row, ours, paper, protocol, time, machine, run, origin,
    within."""
    out = []
    for name in FILES:
        path = results_dir() / f"{name}.json"
        if not path.is_file():
            continue
        payload = json.loads(path.read_text())
        for row in payload["results"]["rows"]:
            ours, paper = row_spreads(row)
            run, origin = row_run(row, payload)
            out.append({"file": name, "row": row["name"], "ours": ours, "paper": paper,
                        "protocol": row_protocol(row), "kind": row["protocol"], "time": row_time(row),
                        "machine": row_machine(row), "run": run, "origin": origin,
                        "within": row_within(row)})
    return out


def markdown(rows: list[dict[str, Any]], width: int = 160) -> str:
    lines = ["| file | row | ours | paper | protocol | time | machine | run | within |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        within = "—" if r["within"] is None else ("yes" if r["within"] else "**no**")
        protocol = r["protocol"] if len(r["protocol"]) <= width else r["protocol"][:width - 1] + "…"
        run = r["run"] + ("" if r["origin"] == "this run" else f" ({r['origin']})")
        lines.append(f"| {r['file']} | {r['row']} | {r['ours']} | {r['paper']} | {protocol} | {r['time']} | "
                     f"{r['machine']} | {run} | {within} |")
    count = {kind: sum(r["kind"] == kind for r in rows) for kind in ("reduced", "skipped")}
    origins = {o: sum(r["origin"] == o for r in rows) for o in ("backfilled", "carried over", "added later")}
    misses = sum(r["within"] is False for r in rows)
    earlier = ", ".join(f"{n} {o}" for o, n in origins.items() if n)
    lines.append("")
    lines.append(f"{len(rows)} rows: {count['reduced']} reduced, {count['skipped']} skipped, {misses} outside the "
                 f"paper's spread" + (f"; not from their file's own run: {earlier}" if earlier else "") + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(table_rows()))
