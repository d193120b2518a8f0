"""Every paper row of the stored results, in one Markdown table: row, ours, paper, protocol
(``full`` or what still differs), time, machine and whether ours is within the paper's spread.
Spreads are standard deviations, or standard errors marked ``SE`` where the paper gives those.

``python -m benchmarks.paper_table`` reads ``benchmarks/results/{tao_paper,dgt,skinny,embeddings,
laptao}.json`` (``TREEVIZ_BENCH_RESULTS`` moves the folder) and prints the table, then a count of
the rows that are reduced and of those that miss. It runs nothing: the numbers are the ones the
benchmarks wrote.
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.common import results_dir
from benchmarks.device_timing import EARLIER_MACHINE

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


def row_machine(row: dict[str, Any], payload: dict[str, Any]) -> str:
    """The machine the row ran on: its own, else the file's. A timing-only device run rewrites the
    file's machine and keeps the rows' one as ``results["machine_of_cpu_results"]``
    (:func:`benchmarks.device_timing.merge_previous`), so that one is the rows' when present."""
    results = payload.get("results") or {}
    machine = row.get("machine") or results.get(EARLIER_MACHINE) or payload.get("machine") or {}
    if isinstance(machine, str):
        return machine
    return machine.get("cuda") or f"{machine.get('cpus')}-core CPU"


def row_protocol(row: dict[str, Any]) -> str:
    """``full``, or ``reduced: ...`` with what the row's protocol says still differs."""
    protocol = row.get("protocol", "")
    if isinstance(protocol, dict):
        return f"reduced: {protocol['reduced']}" if protocol.get("reduced") else "full"
    text = str(protocol)
    if "reduced" not in text:
        return "full"
    return "reduced: " + text[text.index("reduced"):].split(";")[0].replace("reduced", "", 1).strip(" :()")


def row_within(row: dict[str, Any]) -> bool | None:
    return next((bool(row[k]) for k in WITHIN_KEYS if k in row and row[k] is not None), None)


def table_rows() -> list[dict[str, Any]]:
    """One dict per stored paper row: file, row, ours, paper, protocol, time, machine, within."""
    out = []
    for name in FILES:
        path = results_dir() / f"{name}.json"
        if not path.is_file():
            continue
        payload = json.loads(path.read_text())
        for row in payload["results"]["rows"]:
            ours, paper = row_spreads(row)
            out.append({"file": name, "row": row["name"], "ours": ours, "paper": paper,
                        "protocol": row_protocol(row), "time": row_time(row),
                        "machine": row_machine(row, payload), "within": row_within(row)})
    return out


def markdown(rows: list[dict[str, Any]], width: int = 160) -> str:
    lines = ["| file | row | ours | paper | protocol | time | machine | within |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        within = "—" if r["within"] is None else ("yes" if r["within"] else "**no**")
        protocol = r["protocol"] if len(r["protocol"]) <= width else r["protocol"][:width - 1] + "…"
        lines.append(f"| {r['file']} | {r['row']} | {r['ours']} | {r['paper']} | {protocol} | {r['time']} | "
                     f"{r['machine']} | {within} |")
    reduced = sum(r["protocol"] != "full" for r in rows)
    misses = sum(r["within"] is False for r in rows)
    lines.append("")
    lines.append(f"{len(rows)} rows: {reduced} reduced, {misses} outside the paper's spread.")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(table_rows()))
