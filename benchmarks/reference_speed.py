"""Side by side with the authors' public code: seconds per training epoch, for the record.

Five settings, each timed on the authors' code and on treeviz, on the same rows, one CPU thread
each, the two sides interleaved round by round (the reference first in odd rounds, treeviz first in
even rounds):

========================  ===================================  ====================================
row                       reference (public, MIT)              setting
========================  ===================================  ====================================
``dgt_abalone``           microsoft/DGT f5e91b2                abalone, h 6, L 3, batch 128, splits
``dgt_big``               microsoft/DGT f5e91b2                20 000 x 50 synthetic, h 8, L 3, batch 512
``skinny_toy``            mazumder-lab/SkinnyTrees b2c48f9     the authors' toy: breast_cancer, m 20, d 4, batch 16
``skinny_big``            mazumder-lab/SkinnyTrees b2c48f9     20 000 x 100 synthetic, m 50, d 5, batch 256
``latent``                vzantedeschi/LatentTrees 82aa4bf     breast_cancer, depth 4, batch 64, λ 1
========================  ===================================  ====================================

The figure is process CPU time per epoch (wall time swings with the load of a shared machine):
per run the median over epochs 2 and after (epoch 1 carries warm-up, tracing and compilation),
then the median over rounds; ``ratio`` = reference_s / ours_s (above 1: treeviz is faster). The
quality of both sides (test RMSE, AUC or accuracy) is the mean ± standard deviation over rounds.

The authors' code never enters the project and the app never needs it. It lives in a scratch
folder, ``REF_HOME`` (default ``/work/scratch/ref``), set up once as ``../shared/reference/README.md``
says, plus the latent-trees pair of ``benchmarks/reference/``:

.. code-block:: bash

    export REF_HOME=/work/scratch/ref   # DGT, Skinny: follow ../shared/reference/README.md first
    git -C <LatentTrees mirror> archive 82aa4bf | tar -x -C $REF_HOME/latent_src   # vzantedeschi/LatentTrees
    python3 -m venv $REF_HOME/venv_latent && $REF_HOME/venv_latent/bin/pip install torch==2.13.0 'numpy<2' \\
        'pandas<2' scipy scikit-learn qhoptim tensorboardX tqdm category_encoders pybind11 setuptools requests
    cp -r $REF_HOME/latent_src $REF_HOME/latent_run
    patch -d $REF_HOME/latent_run -p1 < benchmarks/reference/latent_torch_load.patch   # torch >= 2.6 reload
    (cd $REF_HOME/latent_run && CXX=g++ ../venv_latent/bin/python setup.py build_ext --inplace)  # src/qp_fast
    for s in 0 1 2 3 4; do PYTHONPATH=. python3 benchmarks/reference/export_latent_split.py $s \\
        $REF_HOME/data/latent_bc_split$s.npz; done

Then, from the repository root:

* ``python -m benchmarks.reference_speed --run`` runs the whole interleaved side by side (all five
  settings, round by round across the settings) and then writes the table. ``--epochs KEY=N`` and
  ``--rounds KEY=N`` (or ``--epochs N`` for all) scale it down, ``--only KEY ...`` picks settings,
  ``--dry-run`` prints the command lines instead of running them, ``--snapshot`` measures
  treeviz's committed HEAD (a ``git archive`` in ``$REF_HOME``) instead of the working tree.
  The full protocol (the defaults) takes hours of CPU on a loaded 2-core machine.
* ``python -m benchmarks.reference_speed`` only reads the per-run JSONs in ``$REF_HOME/results``
  (``REF_RESULTS`` or ``--results`` for another folder) and writes
  ``benchmarks/results/reference_speed.json``: ``results.rows`` with one row per setting
  (``name``, ``reference_s``, ``ours_s``, ``ratio``, the quality of both with spreads, the
  reference commit, the protocol that was run), the machine's CPU model, the thread count and the
  date. For each setting the newest group of runs (a "tag") is used; ``--tag KEY=TAG`` pins one,
  ``--extra KEY=TAG`` adds another tag's row under ``results.extra_rows`` (a longer protocol, say).
  Without the results folder it says so and exits with status 1.

The per-run JSONs come from the harness's drivers: ``ref_dgt.py`` / ``ours_dgt.py`` and
``ref_skinny.py`` / ``ours_skinny.py`` (in ``$REF_HOME/scripts``, copied from
``../shared/reference``) and ``benchmarks/reference/ref_latent.py`` / ``ours_latent.py``; each
holds ``median_epoch_cpu_s`` (epochs 2+), ``median_epoch_s`` (wall), ``epoch_cpu_s`` and the
test quality. A file is named ``<tag>_<round>_<ref|ours>.json``.

This module is not one of ``python -m benchmarks.run``'s benchmarks (it needs ``REF_HOME``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import write_results

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_REF_HOME = "/work/scratch/ref"
OUTPUT_NAME = "reference_speed"
RUNS_LOG = "runs.jsonl"
FILE_RE = re.compile(r"^(?P<tag>.+)_(?P<round>[rs]\d+)_(?P<side>ref|ours)\.json$")


@dataclass(frozen=True)
class Setting:
    key: str
    name: str
    prefix: str  # every tag of this setting starts with it
    reference: str
    quality: str  # the key of the test metric in the per-run JSONs
    quality_name: str
    description: str
    epochs: int  # the full protocol
    rounds: int


SETTINGS: tuple[Setting, ...] = (
    Setting("dgt_abalone", "DGT, abalone", "dgt_abalone_e", "microsoft/DGT f5e91b2", "test_rmse", "test RMSE",
            "abalone (the reference's own splits: shuffle seed split + 1, 2004 / 502 / 1671 rows), height 6, "
            "L 3 (over_param [[16,16]]), batch 128, RMSprop lr 1e-2, l1 1e-5, grad clip 0.01, best validation "
            "epoch kept; round r trains on split (r - 1) mod 5", 200, 5),
    Setting("dgt_big", "DGT, 20 000 x 50", "dgt_big_e", "microsoft/DGT f5e91b2", "test_rmse", "test RMSE",
            "synthetic regression, 20 000 training rows x 50 features (+ 5 000 / 5 000), height 8, L 3 "
            "(over_param [[6,6]]), batch 512, l1 1e-5; round r uses seed r on both sides (the rows stay the same)",
            5, 3),
    Setting("skinny_toy", "Skinny Trees, the authors' toy", "skinny_toy", "mazumder-lab/SkinnyTrees b2c48f9",
            "test_auc", "test AUC",
            "the authors' ToyExample notebook: breast_cancer (their split, seed 8), 20 trees, depth 4, batch 16, "
            "lambda0 100, l2 0.1, temperature 0.01, SGD lr 0.1, sigmoid routing; round r uses seed r - 1 on both sides",
            30, 3),
    Setting("skinny_big", "Skinny Trees, 20 000 x 100", "skinny_big", "mazumder-lab/SkinnyTrees b2c48f9",
            "test_auc", "test AUC",
            "synthetic binary classification, 20 000 training rows x 100 features (+ 5 000 / 5 000), 50 trees, "
            "depth 5, batch 256, the toy's other settings; round r uses seed r - 1 on both sides", 4, 3),
    Setting("latent", "Latent trees, training epoch", "latent_", "vzantedeschi/LatentTrees 82aa4bf", "test_accuracy",
            "test accuracy",
            "breast_cancer with the latent_train benchmark's split (standard scaling, 20 % test, 10 % validation, "
            "PrepConfig seed = split; 398 / 57 / 114 rows), depth 4, batch 64, lambda 1, QHAdam lr 1e-2, linear "
            "split and head, fixed epochs (no early stop), best validation epoch kept; round r trains on split "
            "(r - 1) mod 5", 30, 5),
)
BY_KEY = {s.key: s for s in SETTINGS}


class MissingResults(Exception):
    """The results folder is absent or holds no complete pair of runs."""


# ---------------------------------------------------------------------------------------- reading
def ref_home() -> Path:
    return Path(os.environ.get("REF_HOME", DEFAULT_REF_HOME))


def results_folder(explicit: str | None = None) -> Path:
    """``--results``, else ``REF_RESULTS``, else ``$REF_HOME/results``."""
    if explicit:
        return Path(explicit)
    if os.environ.get("REF_RESULTS"):
        return Path(os.environ["REF_RESULTS"])
    return ref_home() / "results"


def scan(folder: Path) -> dict[str, dict[str, dict[str, Path]]]:
    """{tag: {round: {side: path}}} of the per-run JSONs in ``folder``."""
    found: dict[str, dict[str, dict[str, Path]]] = {}
    for path in sorted(folder.glob("*.json")):
        m = FILE_RE.match(path.name)
        if m:
            found.setdefault(m["tag"], {}).setdefault(m["round"], {})[m["side"]] = path
    return found


def _round_order(label: str) -> tuple[str, int]:
    return label[0], int(label[1:])


def pick_tag(setting: Setting, found: dict[str, dict[str, dict[str, Path]]], pinned: str | None = None) -> str | None:
    """The pinned tag, else the tag of this setting whose newest complete pair is the newest."""
    if pinned is not None:
        return pinned if pinned in found else None
    best, best_time = None, -1.0
    for tag, rounds in found.items():
        if not tag.startswith(setting.prefix):
            continue
        times = [max(p.stat().st_mtime for p in sides.values()) for sides in rounds.values()
                 if {"ref", "ours"} <= sides.keys()]
        if times and max(times) > best_time:
            best, best_time = tag, max(times)
    return best


def _load(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _mean_std(values: Sequence[float]) -> tuple[float, float]:
    return float(statistics.fmean(values)), float(statistics.pstdev(values)) if len(values) > 1 else 0.0


def _spread(values: Sequence[float], digits: int = 3) -> str:
    m, s = _mean_std(values)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def _threads(run: dict[str, Any]) -> int | None:
    for key in ("torch_threads", "intra_op"):
        if run.get(key) is not None:
            return int(run[key])
    return None


def _runs_log(folder: Path) -> dict[str, dict[str, Any]]:
    """The last ``--run`` record of each tag (treeviz's commit, the time, the command order)."""
    out: dict[str, dict[str, Any]] = {}
    path = folder / RUNS_LOG
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["tag"]] = rec
    return out


def build_row(setting: Setting, tag: str, rounds: dict[str, dict[str, Path]],
              run_record: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row of the table from the complete pairs of ``tag``."""
    labels = sorted((r for r, sides in rounds.items() if {"ref", "ours"} <= sides.keys()), key=_round_order)
    if not labels:
        raise MissingResults(f"no complete pair of runs for tag {tag!r}")
    pairs = [(_load(rounds[r]["ref"]), _load(rounds[r]["ours"])) for r in labels]
    ref_cpu = [float(a["median_epoch_cpu_s"]) for a, _ in pairs]
    our_cpu = [float(b["median_epoch_cpu_s"]) for _, b in pairs]
    ref_wall = [float(a["median_epoch_s"]) for a, _ in pairs]
    our_wall = [float(b["median_epoch_s"]) for _, b in pairs]
    epochs = sorted({len(a["epoch_cpu_s"]) for a, _ in pairs} | {len(b["epoch_cpu_s"]) for _, b in pairs})
    reference_s, ours_s = statistics.median(ref_cpu), statistics.median(our_cpu)
    ref_q = [float(a[setting.quality]) for a, _ in pairs]
    our_q = [float(b[setting.quality]) for _, b in pairs]
    digits = 3 if setting.quality == "test_rmse" else 4
    threads = sorted({t for run in (x for p in pairs for x in p) if (t := _threads(run)) is not None})
    mtimes = [rounds[r][s].stat().st_mtime for r in labels for s in ("ref", "ours")]
    epoch_text = f"{epochs[0]}" if len(epochs) == 1 else f"{epochs[0]}–{epochs[-1]}"
    order = ("the reference first in odd rounds, treeviz first in even rounds" if run_record
             else "in the order the harness's shell scripts ran them")
    protocol = (f"{len(labels)} interleaved round(s) ({', '.join(labels)}; {order}), {epoch_text} epochs per run, "
                f"one thread "
                f"each; per run the median process-CPU s/epoch of epochs 2..{epochs[-1]}, then the median over "
                f"rounds. {setting.description}.")
    row: dict[str, Any] = {
        "key": setting.key,
        "name": setting.name,
        "reference_s": reference_s,
        "ours_s": ours_s,
        "ratio": reference_s / ours_s,
        "ratio_rounds": [a / b for a, b in zip(ref_cpu, our_cpu)],
        "reference_s_rounds": ref_cpu,
        "ours_s_rounds": our_cpu,
        "reference_wall_s": statistics.median(ref_wall),
        "ours_wall_s": statistics.median(our_wall),
        "ratio_wall": statistics.median(ref_wall) / statistics.median(our_wall),
        "quality": {
            "metric": setting.quality_name,
            "reference": _mean_std(ref_q)[0], "reference_std": _mean_std(ref_q)[1],
            "ours": _mean_std(our_q)[0], "ours_std": _mean_std(our_q)[1],
            "reference_rounds": ref_q, "ours_rounds": our_q,
            "text": (f"{setting.quality_name} {_spread(ref_q, digits)} (reference) vs "
                     f"{_spread(our_q, digits)} (treeviz)"),
        },
        "reference": setting.reference,
        "tag": tag,
        "rounds": len(labels),
        "epochs": epochs[-1],
        "threads": threads[0] if len(threads) == 1 else threads,
        "protocol": protocol,
        "measured": dt.datetime.fromtimestamp(max(mtimes), dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    q = row["quality"]
    spread = max(q["reference_std"], q["ours_std"])
    q["difference"] = q["ours"] - q["reference"]
    q["higher_is_better"] = setting.quality != "test_rmse"
    worse_by = -q["difference"] if q["higher_is_better"] else q["difference"]
    # "same quality": the means differ by no more than the larger spread over rounds (needs 2+ rounds);
    # "no_worse": treeviz is not worse than the reference by more than that spread
    q["within_spread"] = bool(abs(q["difference"]) <= spread) if len(labels) > 1 else None
    q["no_worse"] = bool(worse_by <= spread) if len(labels) > 1 else None
    if setting.key.startswith("skinny"):
        for field in ("features_kept", "test_accuracy"):
            row["quality"][f"reference_{field}"] = [a.get(field) for a, _ in pairs]
            row["quality"][f"ours_{field}"] = [b.get(field) for _, b in pairs]
    if run_record:
        row["treeviz_commit"] = run_record.get("treeviz_commit")
        row["treeviz_source"] = run_record.get("treeviz_source")
    return row


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass

    return platform.processor() or "unknown"


def collect(folder: Path, pinned: dict[str, str] | None = None,
            extra: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The table from the per-run JSONs in ``folder``; raises MissingResults when there is none.

    ``extra``: (setting, tag) pairs tabulated as well, under ``extra_rows`` (e.g. a longer protocol
    run at another time than the main table's)."""
    if not folder.is_dir():
        raise MissingResults(f"The side-by-side results folder {folder} does not exist: set REF_HOME (or "
                             "REF_RESULTS) to where the reference harness wrote its results, or run "
                             "`python -m benchmarks.reference_speed --run` first.")
    found, log = scan(folder), _runs_log(folder)
    rows, missing = [], []
    for setting in SETTINGS:
        tag = pick_tag(setting, found, (pinned or {}).get(setting.key))
        if tag is None:
            missing.append(setting.key)
            continue
        try:
            rows.append(build_row(setting, tag, found[tag], log.get(tag)))
        except MissingResults:
            missing.append(setting.key)
    if not rows:
        raise MissingResults(f"The side-by-side results folder {folder} holds no complete pair of reference / "
                             "treeviz runs: run `python -m benchmarks.reference_speed --run` first.")
    extra_rows = []
    for key, tag in extra:
        if key not in BY_KEY or tag not in found:
            raise MissingResults(f"No runs of tag {tag!r} for setting {key!r} in {folder}.")
        extra_rows.append(build_row(BY_KEY[key], tag, found[tag], log.get(tag)))
    threads = sorted({r["threads"] for r in rows if isinstance(r["threads"], int)})
    return {
        "rows": rows,
        "extra_rows": extra_rows,
        "missing": missing,
        "machine": {"cpu_model": cpu_model(), "cpus": os.cpu_count(),
                    "threads": threads[0] if len(threads) == 1 else threads},
        "date": max(r["measured"] for r in rows),
        "results_folder": str(folder),
        "method": "process CPU time per epoch, median of epochs 2+ per run, median over interleaved rounds; "
                  "ratio = reference_s / ours_s (above 1: treeviz is faster)",
    }


def write(results: dict[str, Any], out: Path | None = None) -> Path:
    """Write the table as ``benchmarks/results/reference_speed.json`` (or ``out``)."""

    if out is None:
        return write_results(OUTPUT_NAME, results, quick=False)
    payload = {"benchmark": OUTPUT_NAME, "quick": False, "results": results}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2, sort_keys=True), encoding="utf-8")
    return out


def _same(quality: dict[str, Any]) -> str:
    if quality.get("within_spread") is None:
        return ""
    if quality["within_spread"]:
        return " (within the spread)"
    return " (treeviz better beyond the spread)" if quality["no_worse"] else " (**treeviz worse beyond the spread**)"


def table(results: dict[str, Any]) -> str:
    lines = ["| setting | authors' code (CPU s/epoch) | treeviz | ratio | quality (reference vs treeviz) | protocol |",
             "|---|---|---|---|---|---|"]
    for r in results["rows"] + [dict(x, name=f"{x['name']}, also") for x in results.get("extra_rows", [])]:
        lines.append(f"| {r['name']} ({r['reference']}) | {r['reference_s']:.4g} | {r['ours_s']:.4g} | "
                     f"**{r['ratio']:.2f}×** | {r['quality']['text']}{_same(r['quality'])} | "
                     f"{r['rounds']} rounds × {r['epochs']} epochs |")
    if results.get("missing"):
        lines.append(f"\nno results for: {', '.join(results['missing'])}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------- running
@dataclass(frozen=True)
class Command:
    setting: str
    round: int
    side: str
    argv: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]
    out: str


def commands(key: str, epochs: int, r: int, tag: str, home: Path, repo: Path) -> list[Command]:
    """The reference's and treeviz's command for round ``r`` of a setting, in the round's order."""
    R = str(home)
    res = f"{R}/results"
    py_ref = {"dgt": f"{R}/venv_dgt/bin/python", "skinny": f"{R}/venv_skinny/bin/python",
              "latent": f"{R}/venv_latent/bin/python"}
    ours_env = (("PYTHONPATH", str(repo)),)
    E = str(epochs)
    if key in ("dgt_abalone", "dgt_big"):
        abalone = key == "dgt_abalone"
        split = (r - 1) % 5 if abalone else 0
        seed = "1" if abalone else str(r)  # the big table has one split: seeds give the quality its spread
        label = f"s{split}" if abalone else f"r{r}"
        h, op, batch = ("6", "[[16,16]]", "128") if abalone else ("8", "[[6,6]]", "512")
        data = f"{R}/data/abalone_split{split}.npz" if abalone else f"{R}/data/dgt_synth50.npz"
        if abalone and r > 5:
            label = f"r{r}"
        ref = Command(key, r, "ref", (py_ref["dgt"], "-W", "ignore", f"{R}/scripts/ref_dgt.py", "--dataset",
                                      "abalone" if abalone else "synth50", "--split", str(split), "--height", h,
                                      "--over_param", op, "--epochs", E, "--batch", batch, "--l1", "1e-5",
                                      "--seed", seed, "--out", f"{res}/{tag}_{label}_ref.json"),
                      f"{R}/dgt_run/src", (), f"{res}/{tag}_{label}_ref.json")
        ours = Command(key, r, "ours", (sys.executable, f"{R}/scripts/ours_dgt.py", "--split_file", data, "--height", h,
                                        "--n_layers", "3", "--epochs", E, "--batch", batch, "--l1", "1e-5", "--seed",
                                        seed, "--out", f"{res}/{tag}_{label}_ours.json"),
                       R, ours_env, f"{res}/{tag}_{label}_ours.json")
    elif key in ("skinny_toy", "skinny_big"):
        extra: tuple[str, ...] = ()
        if key == "skinny_big":
            extra = ("--data", f"{R}/data/skinny_synth100.npz", "--trees", "50", "--depth", "5", "--batch", "256")
        label, seed = f"r{r}", str(r - 1)
        ref = Command(key, r, "ref", (py_ref["skinny"], f"{R}/scripts/ref_skinny.py", "--epochs", E, "--seed", seed,
                                      *extra, "--out", f"{res}/{tag}_{label}_ref.json"),
                      R, (), f"{res}/{tag}_{label}_ref.json")
        ours = Command(key, r, "ours", (sys.executable, f"{R}/scripts/ours_skinny.py", "--epochs", E, "--seed", seed,
                                        *extra, "--out", f"{res}/{tag}_{label}_ours.json"),
                       R, ours_env, f"{res}/{tag}_{label}_ours.json")
    elif key == "latent":
        split = (r - 1) % 5
        label = f"r{r}"
        data = f"{R}/data/latent_bc_split{split}.npz"
        ref = Command(key, r, "ref", (py_ref["latent"], "-W", "ignore", str(HERE / "reference" / "ref_latent.py"),
                                      "--split_file", data, "--epochs", E, "--out", f"{res}/{tag}_{label}_ref.json"),
                      R, (), f"{res}/{tag}_{label}_ref.json")
        ours = Command(key, r, "ours", (sys.executable, str(HERE / "reference" / "ours_latent.py"), "--split_file",
                                        data, "--epochs", E, "--seed", str(split),
                                        "--out", f"{res}/{tag}_{label}_ours.json"),
                       R, ours_env, f"{res}/{tag}_{label}_ours.json")
    else:
        raise ValueError(f"Unknown setting {key!r}; use one of {', '.join(BY_KEY)}.")
    return [ref, ours] if r % 2 else [ours, ref]


def default_tag(key: str, epochs: int, suffix: str) -> str:
    """``dgt_abalone_e200``, ``skinny_toy_e30``, ``latent_e30`` (+ suffix): the setting's prefix and the epochs."""
    prefix = BY_KEY[key].prefix
    joint = "" if prefix.endswith("_e") else "e" if prefix.endswith("_") else "_e"
    return f"{prefix}{joint}{epochs}{suffix}"


def plan(keys: Sequence[str], epochs: dict[str, int], rounds: dict[str, int], suffix: str, home: Path,
         repo: Path) -> list[Command]:
    """Round by round across the settings: round 1 of every setting, then round 2, ..."""
    out = []
    for r in range(1, max(rounds[k] for k in keys) + 1):
        for key in keys:
            if r <= rounds[key]:
                out += commands(key, epochs[key], r, default_tag(key, epochs[key], suffix), home, repo)
    return out


def _shell(c: Command) -> str:

    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in c.env)
    return f"(cd {shlex.quote(c.cwd)} && {env + ' ' if env else ''}{' '.join(shlex.quote(a) for a in c.argv)})"


def _snapshot(home: Path, repo: Path) -> tuple[Path, str]:
    """treeviz's committed HEAD as a plain folder in ``home`` (git archive), and its commit."""
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    dest = home / f"treeviz_{commit[:10]}"
    if not dest.is_dir():
        dest.mkdir(parents=True)
        archive = subprocess.Popen(["git", "-C", str(repo), "archive", commit], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
        archive.wait()
    return dest, commit


def _commit_of(repo: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + (" + uncommitted changes in the working tree" if dirty else "")


def run_all(keys: Sequence[str], epochs: dict[str, int], rounds: dict[str, int], suffix: str, *, dry_run: bool,
            snapshot: bool, home: Path) -> int:
    repo, commit = REPO, None
    if snapshot and not dry_run:
        repo, commit = _snapshot(home, REPO)
    elif not dry_run:
        commit = _commit_of(REPO)
    cmds = plan(keys, epochs, rounds, suffix, home, repo)
    if dry_run:
        for c in cmds:
            print(_shell(c))
        return 0
    for need in ("scripts", "data", "results", "tmp"):
        if not (home / need).is_dir():
            print(f"REF_HOME={home} is not set up (no {need}/ folder): follow this module's docstring first.",
                  file=sys.stderr)
            return 1
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               PYTHONWARNINGS="ignore", REF_HOME=str(home))

    def log(finished: str | None) -> None:  # written before and after, so a stopped run keeps its record
        with open(home / "results" / RUNS_LOG, "a", encoding="utf-8") as f:
            for key in keys:
                f.write(json.dumps({"tag": default_tag(key, epochs[key], suffix), "setting": key,
                                    "epochs": epochs[key], "rounds": rounds[key], "treeviz_commit": commit,
                                    "treeviz_source": str(repo), "started": started,
                                    "finished": finished}) + "\n")

    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    log(None)
    failures = 0
    for c in cmds:
        load = Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else "?"
        print(f"== {c.setting} round {c.round}: {c.side} ({time.strftime('%H:%M:%S')}, load {load})", flush=True)
        done = subprocess.run(c.argv, cwd=c.cwd, env={**env, **dict(c.env)}, capture_output=True, text=True)
        summary = [line for line in done.stdout.splitlines() if line.startswith("{")]
        print(summary[-1] if summary else (done.stderr or done.stdout)[-2000:], flush=True)
        failures += done.returncode != 0
    log(time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    return 1 if failures else 0


def _per_key(values: Sequence[str] | None, default: dict[str, int]) -> dict[str, int]:
    out = dict(default)
    for v in values or ():
        if "=" in v:
            k, n = v.split("=", 1)
            if k not in BY_KEY:
                raise SystemExit(f"Unknown setting {k!r}; use one of {', '.join(BY_KEY)}.")
            out[k] = int(n)
        else:
            out = {k: int(v) for k in out}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.reference_speed",
                                 description="Side by side with the authors' code: read (or --run) and tabulate.")
    ap.add_argument("--results", help="folder of the per-run JSONs (default $REF_RESULTS or $REF_HOME/results)")
    ap.add_argument("--out", help="where to write the table (default benchmarks/results/reference_speed.json)")
    ap.add_argument("--tag", action="append", metavar="KEY=TAG", help="use this tag for a setting")
    ap.add_argument("--extra", action="append", metavar="KEY=TAG",
                    help="tabulate this tag of a setting too, under extra_rows")
    ap.add_argument("--run", action="store_true", help="run the interleaved side by side first")
    ap.add_argument("--dry-run", action="store_true", help="with --run: print the commands only")
    ap.add_argument("--snapshot", action="store_true", help="with --run: time treeviz's committed HEAD")
    ap.add_argument("--only", nargs="+", choices=list(BY_KEY), help="with --run: these settings only")
    ap.add_argument("--epochs", action="append", metavar="[KEY=]N", help="with --run: epochs per run")
    ap.add_argument("--rounds", action="append", metavar="[KEY=]N", help="with --run: rounds")
    ap.add_argument("--suffix", default="", help="with --run: appended to the tags (e.g. _final)")
    a = ap.parse_args(argv)
    pinned: dict[str, str] = {}
    if a.run:
        keys = a.only or list(BY_KEY)
        epochs = _per_key(a.epochs, {s.key: s.epochs for s in SETTINGS})
        rounds = _per_key(a.rounds, {s.key: s.rounds for s in SETTINGS})
        status = run_all(keys, epochs, rounds, a.suffix, dry_run=a.dry_run, snapshot=a.snapshot, home=ref_home())
        if a.dry_run or status:
            return status
        pinned = {k: default_tag(k, epochs[k], a.suffix) for k in keys}  # the table shows this run's rows
    pinned.update(dict(t.split("=", 1) for t in a.tag or ()))
    try:
        results = collect(results_folder(a.results), pinned,
                          [tuple(t.split("=", 1)) for t in a.extra or ()])  # type: ignore[misc]
    except MissingResults as e:
        print(e, file=sys.stderr)
        return 1
    path = write(results, Path(a.out) if a.out else None)
    print(table(results))
    print(f"\nwritten to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
