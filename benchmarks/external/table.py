"""The table of one side-by-side run, from its folder alone.

Per setting: per round, each side's process CPU seconds per epoch (the driver's median over epochs
2 and after: epoch 1 carries warm-up, tracing and compilation), then the median over rounds;
``ratio`` = reference_s / ours_s (above 1: treeviz is faster). Wall time is kept beside it (it swings
with the load of a shared machine). The quality of both sides (test RMSE, AUC or accuracy) is the
mean ± standard deviation over rounds. Only rounds where both sides finished count; a setting with
none is a row with protocol ``skipped`` and the reason in its ``protocol_note``.

Every row carries the run's stamp (``commit``: the treeviz commit measured, ``machine``, ``date``,
``command``), its ``run_id``, and ``protocol``: ``full`` or ``reduced`` (fewer epochs or rounds than
the setting's full protocol, said in ``protocol_note``).
"""

from __future__ import annotations

import json
import platform
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import STAMP_KEYS
from benchmarks.external.runs import read_record
from benchmarks.external.settings import BY_KEY, Setting, result_name

METHOD = ("process CPU time per epoch, median of epochs 2+ per run, median over interleaved rounds "
          "(the reference first in odd rounds, treeviz first in even rounds), one thread each; "
          "ratio = reference_s / ours_s (above 1: treeviz is faster)")


def _mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean and the standard deviation over rounds; one round has no spread (None, not 0)."""
    return float(statistics.fmean(values)), float(statistics.pstdev(values)) if len(values) > 1 else None


def _spread(values: Sequence[float], digits: int) -> str:
    m, s = _mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}" if s is not None else f"{m:.{digits}f} (one round)"


def _threads(run: dict[str, Any]) -> int | None:
    for key in ("torch_threads", "intra_op"):
        if run.get(key) is not None:
            return int(run[key])
    return None


def quality(setting: Setting, pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """Both sides' test quality over the rounds, and whether treeviz's is the same or no worse: the
    means differ by no more than the larger spread over rounds (needs two rounds or more)."""
    ref_q = [float(a[setting.quality]) for a, _ in pairs]
    our_q = [float(b[setting.quality]) for _, b in pairs]
    digits = 3 if setting.quality == "test_rmse" else 4
    (ref_m, ref_s), (our_m, our_s) = _mean_std(ref_q), _mean_std(our_q)
    higher_is_better = setting.quality != "test_rmse"
    difference = our_m - ref_m
    worse_by = -difference if higher_is_better else difference
    spread = max(ref_s or 0.0, our_s or 0.0)  # used only with two rounds or more, where both are set
    q: dict[str, Any] = {
        "metric": setting.quality_name, "reference": ref_m, "reference_std": ref_s, "ours": our_m, "ours_std": our_s,
        "reference_rounds": ref_q, "ours_rounds": our_q, "difference": difference,
        "higher_is_better": higher_is_better,
        "within_spread": bool(abs(difference) <= spread) if len(pairs) > 1 else None,
        "no_worse": bool(worse_by <= spread) if len(pairs) > 1 else None,
        "text": f"{setting.quality_name} {_spread(ref_q, digits)} (reference) vs {_spread(our_q, digits)} (treeviz)"}
    if setting.reference == "skinny":
        for field in ("features_kept", "test_accuracy"):
            q[f"reference_{field}"] = [a.get(field) for a, _ in pairs]
            q[f"ours_{field}"] = [b.get(field) for _, b in pairs]
    return q


def _stamp(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in STAMP_KEYS}


def skipped_row(setting: Setting, record: dict[str, Any], why: str) -> dict[str, Any]:
    return {"key": setting.key, "name": setting.name, "reference": setting.reference_label,
            "run_id": record["run_id"], **_stamp(record), "protocol": "skipped", "protocol_note": why}


def build_row(setting: Setting, run_dir: Path, record: dict[str, Any]) -> dict[str, Any]:
    """The row of ``setting`` from the run's folder: its complete rounds, or a skipped row."""
    plan = record["settings"][setting.key]
    pairs, labels = [], []
    for r in range(1, plan["rounds"] + 1):
        paths = [run_dir / result_name(setting.key, r, side) for side in ("ref", "ours")]
        if all(p.is_file() for p in paths):
            pairs.append(tuple(json.loads(p.read_text(encoding="utf-8")) for p in paths))
            labels.append(r)
    if not pairs:
        failed = [f"{f['side']} round {f['round']}: {f['tail'].strip().splitlines()[-1] if f['tail'].strip() else ''}"
                  for f in record.get("failures", []) if f["setting"] == setting.key]
        why = "no round finished on both sides" + (f" ({'; '.join(failed[:2])})" if failed else "")
        return skipped_row(setting, record, why)
    ref_cpu = [float(a["median_epoch_cpu_s"]) for a, _ in pairs]
    our_cpu = [float(b["median_epoch_cpu_s"]) for _, b in pairs]
    ref_wall = statistics.median(float(a["median_epoch_s"]) for a, _ in pairs)
    our_wall = statistics.median(float(b["median_epoch_s"]) for _, b in pairs)
    reference_s, ours_s = statistics.median(ref_cpu), statistics.median(our_cpu)
    threads = sorted({t for pair in pairs for run in pair if (t := _threads(run)) is not None})
    label, note = plan["protocol"], plan["protocol_note"]
    if len(pairs) < plan["rounds"]:
        label = "reduced"
        note = (f"{note}; " if note.startswith("reduced") else "reduced: ") + \
            f"{len(pairs)} of {plan['rounds']} rounds finished on both sides"
    return {
        "key": setting.key, "name": setting.name, "reference": setting.reference_label, "run_id": record["run_id"],
        **_stamp(record), "protocol": label,
        "protocol_note": f"{note}; rounds {', '.join(map(str, labels))} finished on both sides. "
                         f"{setting.description}.",
        "reference_s": reference_s, "ours_s": ours_s, "ratio": reference_s / ours_s,
        "ratio_rounds": [a / b for a, b in zip(ref_cpu, our_cpu)], "reference_s_rounds": ref_cpu,
        "ours_s_rounds": our_cpu, "reference_wall_s": ref_wall, "ours_wall_s": our_wall,
        "ratio_wall": ref_wall / our_wall, "quality": quality(setting, pairs), "rounds": len(pairs),
        "epochs": plan["epochs"], "threads": threads[0] if len(threads) == 1 else threads,
    }


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def collect(run_dir: Path) -> dict[str, Any]:
    """The results of the run in ``run_dir``: one row per setting it planned, in the table's order."""
    record = read_record(run_dir)
    rows = [build_row(s, run_dir, record) for s in BY_KEY.values() if s.key in record["settings"]]
    return {"run_id": record["run_id"], "rows": rows, "cpu_model": cpu_model(), "method": METHOD,
            "source": record.get("source"), "failures": record.get("failures", []),
            "finished": record.get("finished")}


def _same(q: dict[str, Any]) -> str:
    if q.get("within_spread") is None:
        return ""
    if q["within_spread"]:
        return " (within the spread)"
    return " (treeviz better beyond the spread)" if q["no_worse"] else " (**treeviz worse beyond the spread**)"


def table(rows: Sequence[dict[str, Any]]) -> str:
    """The Markdown table of ``rows`` (as stored)."""
    lines = ["| setting | authors' code (CPU s/epoch) | treeviz | ratio | quality (reference vs treeviz) | protocol "
             "| run |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        head = f"| {r['name']} ({r['reference']}) "
        if r["protocol"] == "skipped":
            lines.append(head + f"| — | — | — | — | skipped: {r['protocol_note']} | {r['run_id']} |")
            continue
        lines.append(head + f"| {r['reference_s']:.4g} | {r['ours_s']:.4g} | **{r['ratio']:.2f}×** | "
                     f"{r['quality']['text']}{_same(r['quality'])} | {r['protocol']}: {r['rounds']} rounds × "
                     f"{r['epochs']} epochs | {r['run_id']} |")
    return "\n".join(lines)
