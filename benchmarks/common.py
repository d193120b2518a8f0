"""Shared helpers for benchmarks: timing, tables, JSON results, the reference-data folder."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch
from joblib import Parallel, delayed

from models.ground import threads

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REPO_ROOT = Path(__file__).resolve().parents[1]
#: A row's ``protocol``: the benchmark's whole protocol, a reduced one, or not run (what differs or
#: why it was skipped goes to ``protocol_note``).
PROTOCOLS = ("full", "reduced", "skipped")
#: The stamp every stored row (and every results file) carries: what produced it, where and when.
STAMP_KEYS = ("commit", "machine", "date", "command")
#: ``stamp`` of a row whose stamp was recovered from the git history of its results file (it was
#: written before rows were stamped): its commit is the one that last stored the file.
BACKFILLED = "backfilled from git history"


def results_dir(quick: bool = False) -> Path:
    """Where results go: ``TREEVIZ_BENCH_RESULTS`` when set, else ``benchmarks/results``, or for a
    ``quick`` run ``benchmarks/results/quick`` (not committed), so that a smoke run never writes over
    the stored full-size results."""
    if os.environ.get("TREEVIZ_BENCH_RESULTS"):
        return Path(os.environ["TREEVIZ_BENCH_RESULTS"])
    return RESULTS_DIR / "quick" if quick else RESULTS_DIR


def shared_data_dir() -> Path | None:
    """The papers' reference data (``../shared/data`` by default, or ``TREEVIZ_SHARED_DATA``)."""
    path = Path(os.environ.get("TREEVIZ_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    return path if path.is_dir() else None


def required_data_dir(needs: str) -> Path:
    """:func:`shared_data_dir`, or a FileNotFoundError that says it is absent and what ``needs`` it
    ("the dgt benchmark needs dgt/abalone, ...")."""
    root = shared_data_dir()
    if root is None:
        raise FileNotFoundError(f"the shared reference data folder (../shared/data or TREEVIZ_SHARED_DATA) is "
                                f"absent; {needs}")
    return root


def read_uci(root: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features (float64) and labels of ``<root>/uci/<name>.csv.gz`` (header row, last column ``label``)."""
    path = root / "uci" / f"{name}.csv.gz"
    with gzip.open(path, "rt") as fh:
        header = fh.readline().strip().split(",")
        data = np.loadtxt(fh, delimiter=",", dtype=str)
    if header[-1] != "label":
        raise ValueError(f"{path}: the last column is {header[-1]!r}, expected 'label'")
    return data[:, :-1].astype(np.float64), data[:, -1]


def load_uci(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Features and labels of the shared data's ``uci/<name>.csv.gz`` (:func:`read_uci`); a
    FileNotFoundError that says so without the shared data folder."""
    return read_uci(required_data_dir(f"uci/{name}.csv.gz is read from it"), name)


def read_npz_split(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train, X_test, y_test) of one of the DGT paper's ``.npz`` splits, as float64, the
    targets flat (the files store them as columns)."""
    with np.load(path) as z:
        Xtr, ytr, Xte, yte = (np.asarray(z[n], dtype=np.float64) for n in ("X_train", "y_train", "X_test", "y_test"))
    return Xtr, ytr.reshape(-1), Xte, yte.reshape(-1)


def mean_text(mean: float | None, spread: float | None = None) -> str:
    """``0.9123 ± 0.012`` for a table cell (``—`` without a mean, no ``±`` without a spread)."""
    if mean is None:
        return "—"
    return f"{mean:.4g}" + (f" ± {spread:.2g}" if spread else "")


def yes_no(verdict: bool | None) -> str:
    """A check for a table cell: yes, no, or ``—`` where there is nothing to check."""
    return "—" if verdict is None else ("yes" if verdict else "no")


def measured_on() -> str:
    """When and under what load a timing ran: the date, this machine's cores and its one-minute
    load average at the start (a timing taken beside other work says so)."""
    return (f"{time.strftime('%Y-%m-%d')}, this {os.cpu_count()}-core machine, load average "
            f"{os.getloadavg()[0]:.1f} at the start")


def median_cpu_time(fn: Callable[[], Any], repeat: int = 25) -> float:
    """Median process CPU seconds of ``fn`` over ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return float(np.median(times))


def best_time(fn: Callable[[], Any], *, repeat: int = 5, min_time: float = 0.05) -> float:
    """Best wall time of ``fn`` in seconds over ``repeat`` rounds (each round loops to ``min_time``)."""
    best = float("inf")
    for _ in range(repeat):
        loops, start = 0, time.perf_counter()
        while True:
            fn()
            loops += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / loops)
    return best


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A plain-text table with right-aligned numbers."""
    if not rows:
        return "(no rows)"
    columns = list(columns or dict.fromkeys(k for r in rows for k in r))  # every key, in first-seen order

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)

    body = [[cell(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(b[i]) for b in body)) for i, c in enumerate(columns)]
    line = "  ".join(c.rjust(w) for c, w in zip(columns, widths))
    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line, sep] + ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body])


def machine_info() -> dict[str, Any]:
    """This machine as results record it: Python, platform, cores, torch and the GPU (None without)."""
    return {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "torch": torch.__version__,
            "cuda": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}


def git_commit() -> str:
    """The checked-out commit, with ``+dirty`` when tracked files differ from it (what ran is then
    not exactly that commit); ``unknown`` outside a git checkout."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True).stdout

    try:
        sha = git("rev-parse", "HEAD").strip()
        dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+dirty" if dirty else "")


def command_line() -> str:
    """The command that is running, as one would type it: ``python -m <module> <args>`` for a
    module run with ``-m``, else ``python <script> <args>``."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    name = getattr(spec, "name", None)
    program = (f"python -m {name.removesuffix('.__main__')}" if name else f"python {sys.argv[0]}")
    return " ".join([program, *(shlex.quote(a) for a in sys.argv[1:])])


def stamp() -> dict[str, Any]:
    """What produced a result: the commit, this machine, the UTC date and the command line."""
    return {"commit": git_commit(), "machine": machine_info(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"), "command": command_line()}


def row_lists(results: dict[str, Any]) -> list[list[Any]]:
    """The lists of rows in ``results``: every list under a key ``rows`` or ``*_rows``, at the top
    level or in a section (a dict at the top level, e.g. ``device_timing``)."""
    found = []
    for holder in [results, *(v for v in results.values() if isinstance(v, dict))]:
        found += [v for k, v in holder.items() if (k == "rows" or k.endswith("_rows")) and isinstance(v, list)]
    return found


def result_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every row of ``results`` (:func:`row_lists`) that is a dict."""
    return [row for rows in row_lists(results) for row in rows if isinstance(row, dict)]


def row_problems(row: dict[str, Any]) -> list[str]:
    """What a stored row lacks: a non-empty stamp (:data:`STAMP_KEYS`) and a ``protocol`` of
    :data:`PROTOCOLS` (free text belongs in ``protocol_note``); empty for a good row."""
    problems = [f"no {key}" for key in STAMP_KEYS if not row.get(key)]
    protocol = row.get("protocol")
    if not isinstance(protocol, str) or protocol not in PROTOCOLS:
        problems.append(f"protocol {protocol!r:.80} is not one of {', '.join(PROTOCOLS)} "
                        "(free text goes to protocol_note)")
    return problems


def stamp_rows(rows: Sequence[Any], *, quick: bool, now: dict[str, Any] | None = None) -> None:
    """Stamp each row (a dict) that has no ``commit`` with ``now`` (default :func:`stamp`): rows
    carried over from an earlier run keep their own stamp. A row without a ``protocol`` gets
    ``reduced`` in a quick run (noted) and ``full`` otherwise: the benchmark's own protocol, which is
    what it ran; a row beside a paper's number (``paper_mean``) must say its protocol itself.
    Raises ValueError on a row whose protocol is not one of :data:`PROTOCOLS`."""
    now = now or stamp()
    for row in rows:
        if not isinstance(row, dict):
            continue
        if "commit" not in row:
            for key in STAMP_KEYS:
                row.setdefault(key, now[key])
        if "protocol" not in row:
            if "paper_mean" in row:  # beside a paper's number, only the benchmark knows what it ran
                raise ValueError(f"results row {row.get('name', row)!r:.120} sets a paper_mean but no protocol: "
                                 "say full, reduced or skipped")
            row["protocol"] = "reduced" if quick else "full"
            if quick:
                row.setdefault("protocol_note", "quick run: CI-sized data and fewer repeats")
        problems = row_problems(row)
        if problems:
            raise ValueError(f"results row {row.get('name', row)!r:.120}: {'; '.join(problems)}")


def write_results(name: str, results: dict[str, Any], *, quick: bool) -> Path:
    """Write ``results`` to ``<results>/<name>.json`` (:func:`results_dir`: a quick run's apart from
    the stored full-size ones unless ``TREEVIZ_BENCH_RESULTS`` names the folder), stamped
    (:func:`stamp`): the file with the commit, machine, date and command of this run, and every row
    (:func:`row_lists`) that has no stamp of its own with the same (:func:`stamp_rows`, which also
    checks the rows' protocol)."""
    now = stamp()
    for rows in row_lists(results):
        stamp_rows(rows, quick=quick, now=now)
    out_dir = results_dir(quick)
    out_dir.mkdir(parents=True, exist_ok=True)
    payload = {"benchmark": name, "quick": quick, **now, "results": results}
    path = out_dir / f"{name}.json"
    _write_payload(path, payload)
    return path


def merge_rows(rows: list[dict[str, Any]], path: Path) -> None:
    """Put ``rows`` into the stored results file at ``path``: a row replaces the stored row of its
    name where that stood, and a new row goes at the end. New rows are stamped and checked
    (:func:`stamp_rows`)."""
    payload = json.loads(path.read_text())
    stamp_rows(rows, quick=bool(payload.get("quick")))
    fresh = {r["name"]: r for r in rows}
    stored = payload["results"]["rows"]
    names = {r["name"] for r in stored}
    payload["results"]["rows"] = [fresh.get(r["name"], r) for r in stored] + [r for r in rows if r["name"] not in names]
    _write_payload(path, payload)


def _write_payload(path: Path, payload: dict[str, Any]) -> None:
    """Replace the results file at ``path`` with ``payload`` in one step (never half written)."""
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload, indent=2, sort_keys=True))
    os.replace(tmp, path)


def store_section(path: Path, key: str, value: Any) -> None:
    """Put ``value`` under ``results[key]`` of the stored results file at ``path`` (a study run
    apart from the rows, kept beside them)."""
    payload = json.loads(path.read_text())
    payload["results"][key] = value
    _write_payload(path, payload)


def _stored_results(name: str) -> dict[str, Any]:
    """``results`` of the stored full-size ``benchmarks/results/<name>.json`` (empty without a
    readable file, or when it holds a quick run)."""
    try:
        payload = json.loads((results_dir() / f"{name}.json").read_text())
    except (OSError, ValueError):
        return {}
    return {} if payload.get("quick") else payload.get("results", {})


def stored_section(name: str, key: str) -> Any:
    """``results[key]`` of the stored full-size results (None without one): what a full rerun
    keeps of a study run apart."""
    return _stored_results(name).get(key)


def stored_rows(name: str, keep: Callable[[str], bool]) -> list[dict[str, Any]]:
    """The rows of the stored full-size ``benchmarks/results/<name>.json`` whose name ``keep``
    accepts (none without a file, or when it holds a quick run): what a rerun keeps of the rows
    that a separate command computes apart. Each keeps the stamp of the run that measured it and is
    marked ``carried_over``; a row without a stamp of its own (``commit``, ``date``, ``command``) is
    left out, since the new file would otherwise stamp it as this run's."""
    rows = [r for r in _stored_results(name).get("rows", []) if keep(str(r.get("name", "")))]
    return [{**r, "carried_over": True} for r in rows if all(r.get(k) for k in ("commit", "date", "command"))]


#: What a :class:`PartLog` versions when told nothing narrower: every source of the project's
#: libraries and benchmarks (any change to them starts its parts afresh).
ALL_CODE = ("benchmarks", "models", "treeviz")


def source_files(module: str | Path) -> list[Path]:
    """The Python sources of ``module``: a dotted name of a project module (its file) or package
    (every ``.py`` below it), or a path to a file or folder. Raises ValueError for neither."""
    path = Path(module) if isinstance(module, Path) else REPO_ROOT.joinpath(*module.split("."))
    if path.is_dir():
        return sorted(path.rglob("*.py"))
    file = path if path.suffix == ".py" else path.with_suffix(".py")
    if not file.is_file():
        raise ValueError(f"no module or package {module!s} under {REPO_ROOT}")
    return [file]


def code_version(modules: Sequence[str | Path]) -> str:
    """A short digest of the sources of ``modules`` (:func:`source_files`): their paths within the
    project and their bytes. It changes whenever one of them changes."""
    digest = hashlib.sha256()
    for file in sorted({f.resolve() for m in modules for f in source_files(m)}):
        digest.update(str(file.relative_to(REPO_ROOT) if file.is_relative_to(REPO_ROOT) else file).encode())
        digest.update(b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


class PartLog:
    """The finished parts of a long benchmark run (the trials of a search, the fits of a grid),
    one JSON object per line in ``<results>/parts/<name>.jsonl``, appended as each part ends: a
    run stopped part-way is started again and computes only what the log lacks.

    Each part is keyed by its task and the version of the code it ran (:func:`code_version` of
    ``code``: the benchmark module and the model packages it times; default :data:`ALL_CODE`), so a
    part logged before that code changed is not reused: :meth:`records` holds only the parts of
    this version, :meth:`all_records` every one."""

    def __init__(self, name: str, *, code: Sequence[str | Path] = ALL_CODE) -> None:
        self.path = results_dir() / "parts" / f"{name}.jsonl"
        self.code = code_version(code)

    def all_records(self) -> list[dict[str, Any]]:
        """Every logged part of any code version, oldest first (none without a log)."""
        if not self.path.is_file():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]

    def records(self) -> list[dict[str, Any]]:
        """The logged parts of this code version, oldest first."""
        return [r for r in self.all_records() if r.get("code") == self.code]

    def times(self) -> dict[str, float | None]:
        """Each logged key's time (its latest record's): the ``seconds`` that :func:`run_keyed` or
        :func:`retime` logged (the task's wall time in its worker), else the ``seconds`` the task
        reported in its own result (a fit that timed itself), else None (an older run's record)."""
        out: dict[str, float | None] = {}
        for r in self.records():
            own = r["result"].get("seconds") if isinstance(r.get("result"), dict) else None
            value = r.get("seconds", own)
            out[r["key"]] = float(value) if _is_number(value) else None
        return out

    def seconds(self, keys: Sequence[str]) -> float | None:
        """The summed time (:meth:`times`) of ``keys``: the compute behind a result however many
        parts it took; None when a key is missing or has no time."""
        logged = self.times()
        times = [logged.get(key) for key in keys]
        if not times or any(t is None for t in times):
            return None
        return float(sum(times))

    def estimate(self, keys: Sequence[str]) -> dict[str, Any] | None:
        """The summed time of ``keys`` when some have none: the known times plus their mean for each
        of the others (a sample re-timed by :func:`retime`, for tasks drawn alike, stands for the
        rest). ``{"seconds", "timed", "of", "se_seconds"}`` (the estimate's standard error from the
        timed ones' spread, 0 when all are timed, None from one); None when no key has a time or a
        key is missing."""
        logged = self.times()
        if not keys or any(key not in logged for key in keys):
            return None
        known = [logged[key] for key in keys if logged[key] is not None]
        if not known:
            return None
        mean, missing = sum(known) / len(known), len(keys) - len(known)
        se = None if len(known) < 2 else float(np.std(known, ddof=1) / np.sqrt(len(known)) * missing)
        return {"seconds": float(sum(known) + mean * missing), "timed": len(known), "of": len(keys),
                "se_seconds": 0.0 if missing == 0 else se}

    def add(self, records: Sequence[dict[str, Any]]) -> None:
        """Log ``records``, each under this code version (``code``)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            for record in records:
                out.write(json.dumps({**record, "code": self.code}, sort_keys=True) + "\n")


def run_keyed(tasks: Sequence[tuple[str, Any]], log: PartLog | None, *, n_jobs: int | None = None) -> dict[str, Any]:
    """Run ``(key, joblib.delayed call)`` tasks in ``n_jobs`` processes (default: every usable
    core); the result of each by key. With ``log``, the tasks it holds are not run again and each
    new result is logged (``{"key", "result", "seconds"}``, JSON; seconds: the task's wall time in
    its worker, :meth:`PartLog.seconds`) as it finishes, so a stopped run resumes."""
    done = {} if log is None else {r["key"]: r["result"] for r in log.records()}
    pending = [(key, call) for key, call in tasks if key not in done]
    if not pending:
        return done
    keyed = [delayed(_keyed_timed)(key, fn, args, kwargs) for key, (fn, args, kwargs) in pending]
    finished = len(tasks) - len(pending)
    for key, result, seconds in Parallel(n_jobs=n_jobs or threads.usable_cores(),
                                         return_as="generator_unordered")(keyed):
        done[key] = result
        finished += 1
        if log is not None:
            log.add([{"key": key, "result": result, "seconds": seconds}])
            print(f"  {key} done ({finished} of {len(tasks)}), {time.strftime('%H:%M:%S')}", flush=True)
    return done


def retime(tasks: Sequence[tuple[str, Any]], log: PartLog, *, sample: int | None = None, seed: int = 0,
           n_jobs: int | None = None) -> dict[str, Any]:
    """Time tasks that ``log`` holds without a time in this code version (an older run logged them
    before times were kept, or under an older version of the code): each is run again in ``n_jobs``
    processes (default: every usable core, as :func:`run_keyed` ran it), and when its result
    reproduces the logged one (numbers to a relative 1e-9) its time is logged beside its key with
    the logged result, under this code version, so :meth:`PartLog.seconds` sums it. A result that
    differs (the code changed since) is reported and neither it nor its time is logged.
    ``sample``: time only that many of the untimed tasks, drawn with ``seed`` (for
    :meth:`PartLog.estimate`). Returns ``{"untimed", "retimed", "differ", "seconds"}``: the counts
    of untimed tasks and of those timed now, the keys that did not reproduce, and the times logged."""
    logged = {r["key"]: r["result"] for r in [*log.all_records(), *log.records()]}  # this version's last
    times = log.times()
    untimed = [(key, call) for key, call in tasks if key in logged and times.get(key) is None]
    chosen = untimed
    if sample is not None and sample < len(untimed):
        picks = np.random.default_rng(seed).choice(len(untimed), size=sample, replace=False)
        chosen = [untimed[i] for i in sorted(picks)]
    keyed = [delayed(_keyed_timed)(key, fn, args, kwargs) for key, (fn, args, kwargs) in chosen]
    differ, timed = [], {}
    for key, result, seconds in Parallel(n_jobs=n_jobs or threads.usable_cores(),
                                         return_as="generator_unordered")(keyed):
        if not same_result(json.loads(json.dumps(result)), logged[key]):  # as the log would hold it
            differ.append(key)
            continue
        timed[key] = seconds
        log.add([{"key": key, "result": logged[key], "seconds": seconds, "retimed": True}])
        print(f"  {key} re-timed: {seconds:.1f} s ({len(timed)} of {len(chosen)}), {time.strftime('%H:%M:%S')}",
              flush=True)
    return {"untimed": len(untimed), "retimed": len(timed), "differ": sorted(differ), "seconds": timed}


def same_result(a: Any, b: Any, rel: float = 1e-9) -> bool:
    """Whether two JSON-like results agree: the same structure, numbers to a relative ``rel``
    (infinities and NaNs equal themselves), everything else exactly (a flag is not a number)."""
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    if _is_number(a) and _is_number(b):
        a, b = float(a), float(b)
        if np.isnan(a) or np.isnan(b) or np.isinf(a) or np.isinf(b):
            return (np.isnan(a) and np.isnan(b)) or a == b
        return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_result(a[k], b[k], rel) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same_result(x, y, rel) for x, y in zip(a, b))
    return a == b


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.number) and not isinstance(value, bool)


_MEMO: dict[tuple, Any] = {}
_MEMO_SIZE = 4


def memo(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, computed once per process and kept (the last few): a worker's tasks share
    what it draws, e.g. one simulation's data across its trials. ``fn`` must be deterministic."""
    key = (fn.__module__, fn.__qualname__, args)
    if key not in _MEMO:
        while len(_MEMO) >= _MEMO_SIZE:
            _MEMO.pop(next(iter(_MEMO)))
        _MEMO[key] = fn(*args)
    return _MEMO[key]


def _keyed_timed(key: str, fn: Callable[..., Any], args: tuple, kwargs: dict) -> tuple[str, Any, float]:
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return key, result, time.perf_counter() - start
