"""Grid sweeps: one run per point of a grid of parameter values (λ × depth × seed, ...), trained in
parallel on this machine or on a Dask cluster.

A grid names some of a family's parameters and lists values for each (``{"l1_penalty": [0.01,
0.1], "depth": [3, 4], "random_state": [0, 1]}``); :func:`grid_points` is their cartesian product
(the last name varies fastest). :func:`run_grid` trains one model per point, on top of the
caller's fixed parameters. The points are independent (no warm start), so they run at once:

* locally by default, in joblib worker processes (loky), as many as this process's thread budget
  allows (:mod:`models.ground.threads`), each on its share of the cores;
* on a Dask cluster when a scheduler address is given (or set in ``$TREEVIZ_DASK_SCHEDULER``,
  :func:`default_scheduler`): each trial is a task submitted through a :class:`distributed.Client`,
  as many at once as the cluster has threads (or ``n_jobs``). The prepared data is sent to every
  worker once. Each trial runs on its host's share of the cores (the host's cores over the Dask
  threads running there).

Trusting a scheduler means running its code: Dask sends results back as pickles, which this process
unpickles, so a scheduler (or a worker) under someone else's control runs code here, and it receives
the prepared data. The app therefore never takes an address from a page: a :class:`GridJob` runs
either here or on the scheduler configured in ``$TREEVIZ_DASK_SCHEDULER`` by whoever started the app.

A worker only fits and scores: it returns the fitted estimator, its scores and the fit's duration,
and this process stores the run (:meth:`treeviz.services.store.runs.RunStore.save`) as soon as the trial comes
back. So workers on other machines need no access to the run store's folder, only treeviz itself
on their Python path. Every run is tagged ``RunRecord.sweep = {"id", "kind": "grid", "label",
"names", "size", "where", "index", "params"}`` (``params``: the point's values; for a family with
a λ path also ``param`` and ``value``, the λ of the run), so a grid's runs group together.

A trial whose fit fails (a bad combination of values, a diverging fit) is kept with its error and
stores nothing; the other trials go on. A cancel (the job's ``progress`` handle, or ``on_trial``
raising :class:`~models.ground.errors.TrainingCancelled`) stops the grid: trials not yet started are
dropped, those already stored stay.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import secrets
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.util import find_spec
from typing import Any

from joblib import Parallel, delayed, parallel_config

from models.devices import resolve_device
from models.ground import threads
from models.ground.errors import TreevizError
from models.registry import get_family
from models.schema import Family, Param
from treeviz.services.data import PreparedData
from treeviz.services.experiments.sweep import tagged_groups
from treeviz.services.experiments.training import build_estimator, evaluate, fit_estimator, fit_warnings, model_cost
from treeviz.services.jobs.manager import Progress
from treeviz.services.store.record import RunRecord, tree_size
from treeviz.services.store.runs import RunStore

KIND = "grid"
#: Environment variable holding the default Dask scheduler address (empty or unset: run locally).
SCHEDULER_ENV = "TREEVIZ_DASK_SCHEDULER"
#: The most points one grid may have.
MAX_POINTS = 1000
#: Seconds to wait for a Dask scheduler to answer, and for it to have a worker.
CONNECT_TIMEOUT_S = 10.0
#: The protocols a scheduler address may name.
PROTOCOLS = ("tcp", "tls", "ws", "wss", "inproc")
#: HOST:PORT, the host a name, an IPv4 address or a bracketed IPv6 address.
_HOST_PORT = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):([0-9]{1,5})")
#: An in-process address: HOST/PID/N.
_INPROC = re.compile(r"[^\s/]+/([0-9]+)/[0-9]+")
_NONE = ("none", "null")
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def default_scheduler() -> str | None:
    """The Dask scheduler address in ``$TREEVIZ_DASK_SCHEDULER``, or None (run locally)."""
    return scheduler_address(os.environ.get(SCHEDULER_ENV))


def scheduler_address(text: str | None) -> str | None:
    """A scheduler address as typed (``tcp://host:8786`` or ``host:8786``), with ``tcp://`` added
    when no protocol is given; None for an empty one (run locally). Checked by its form alone, at
    once and before any connection: ``PROTOCOL://HOST:PORT`` with one of :data:`PROTOCOLS`, or
    ``inproc://HOST/PID/N`` for a cluster inside this process (PID is this process's id)."""
    address = (text or "").strip()
    if not address:
        return None
    protocol, sep, location = address.partition("://")
    if not sep:
        protocol, location = "tcp", address
    protocol = protocol.lower()
    if not _valid_location(protocol, location):
        shown = address if len(address) <= 80 else f"{address[:77]}..."
        raise TreevizError(f"'{shown}' is not a Dask scheduler address; write it as tcp://HOST:PORT, for example "
                           "tcp://127.0.0.1:8786.")
    return f"{protocol}://{location}"


def _valid_location(protocol: str, location: str) -> bool:
    if protocol == "inproc":  # HOST/PID/N of a cluster in this process; another process's cannot be reached
        found = _INPROC.fullmatch(location)
        return found is not None and found.group(1) == str(os.getpid())
    found = _HOST_PORT.fullmatch(location)
    return protocol in PROTOCOLS and found is not None and 0 < int(found.group(1)) < 65536


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as one dict per point (the last name varies fastest).

    >>> grid_points({"depth": [3, 4], "random_state": [0, 1]})
    [{'depth': 3, 'random_state': 0}, {'depth': 3, 'random_state': 1}, {'depth': 4, 'random_state': 0}, \
{'depth': 4, 'random_state': 1}]
    """
    if not grid:
        raise TreevizError("A grid needs at least one parameter with values.")
    for name, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or len(values) == 0:
            raise TreevizError(f"The grid gives no values for '{name}'; list at least one.")
    size = math.prod(len(v) for v in grid.values())
    if size > MAX_POINTS:
        raise TreevizError(f"This grid has {size:,} points; at most {MAX_POINTS:,} are allowed. Use fewer values.")
    names = list(grid)
    return [dict(zip(names, combo)) for combo in itertools.product(*(grid[n] for n in names))]


def parse_value(param: Param, text: str) -> Any:
    """One value as typed in a list (``none`` or the parameter's optional label for None,
    ``true``/``false`` for a switch), checked against the schema."""
    raw = text.strip()
    low = raw.lower()
    if (param.optional_label is not None or param.kind == "seed") and (
            low in _NONE or (param.optional_label is not None and low == param.optional_label.lower())):
        return param.validate(None)
    if param.kind == "bool":
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    return param.validate(raw)


def parse_values(param: Param, text: str) -> list[Any]:
    """A comma-separated list of values (``"0.01, 0.1, 1"``), each checked, duplicates dropped."""
    values = [parse_value(param, part) for part in str(text).split(",") if part.strip()]
    if not values:
        raise TreevizError(f"The grid gives no values for '{param.name}'; list at least one, separated by commas.")
    return _unique(values)


def _unique(values: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def check_grid(family: Family, task: str, grid: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """The grid with every name checked against the family's parameters for ``task`` and every
    value validated (coerced as a form would: ``"3"`` becomes 3), duplicates dropped."""
    if not grid:
        raise TreevizError("A grid needs at least one parameter with values.")
    known = {p.name: p for p in family.params_for(task, form_only=True)}
    unknown = [name for name in grid if name not in known]
    if unknown:
        raise TreevizError(f"{family.label} has no parameter {', '.join(repr(n) for n in unknown)} to vary for "
                           f"{task}; its parameters: {', '.join(sorted(known))}.")
    out: dict[str, list[Any]] = {}
    for name, values in grid.items():
        if isinstance(values, str):
            out[name] = parse_values(known[name], values)
            continue
        if not isinstance(values, Sequence) or len(values) == 0:
            raise TreevizError(f"The grid gives no values for '{name}'; list at least one.")
        out[name] = _unique([parse_value(known[name], v) if isinstance(v, str) else known[name].validate(v)
                             for v in values])
    return out


def value_text(value: Any) -> str:
    """A grid value as shown in run names and tables (``0.1``, ``3``, ``none``)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


# ---------------------------------------------------------------------------- results

@dataclass(frozen=True)
class GridTrial:
    """One point of a grid: its values, metrics, and its run (stored) or estimator (not stored);
    ``error`` says why a failed trial has no model. ``metrics`` are the run's (scores, model cost);
    without a store they also hold ``n_nodes``, ``n_leaves`` and ``depth``, as ``train_run`` returns."""

    index: int
    params: dict[str, Any]
    metrics: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    status: str | None = None
    duration_s: float = 0.0
    estimator: Any = None
    error: str | None = None


@dataclass(frozen=True)
class GridResult:
    """A finished (or cancelled) grid: its id, label, the varied names, where it ran (``"local"``
    or the scheduler's address) and every trial that came back, in grid order."""

    grid_id: str
    label: str
    names: tuple[str, ...]
    size: int
    where: str
    trials: tuple[GridTrial, ...]


@dataclass(frozen=True)
class _Fitted:
    """What a worker sends back: the fitted estimator, its scores and the fit's duration."""

    index: int
    estimator: Any = None
    scores: dict[str, float] | None = None
    duration_s: float = 0.0
    stopped: bool = False
    error: str | None = None


def fit_trial(family_key: str, task: str, index: int, params: dict[str, Any], prepared: PreparedData,
              device: str | None, n_threads: int | None, host_threads: dict[str, int] | None) -> _Fitted:
    """Fit and score one point (in a worker; nothing is stored here). ``n_threads`` is the
    thread budget of a local worker process; ``host_threads`` (on a Dask cluster) the Dask
    threads on each host, over which this host's cores are shared."""
    on_cluster = host_threads is not None
    budget = _cluster_budget(host_threads) if on_cluster else n_threads
    # the budget holds in this task's thread only (a Dask worker runs several tasks in threads at once)
    scoped = threads.budget(budget) if budget is not None else contextlib.nullcontext()
    # on a cluster, a family's own joblib loops (a forest's trees) run in this task, not as more Dask tasks
    inner = parallel_config(backend="sequential") if on_cluster else contextlib.nullcontext()
    try:
        with scoped, inner:
            estimator = build_estimator(family_key, task, params, prepared, device=device)
            duration, stopped = fit_estimator(estimator, task, prepared)
            scores = evaluate(estimator, prepared, task)
            scores.update(model_cost(estimator, prepared.X_train))
    except (TreevizError, ValueError, ArithmeticError) as err:
        return _Fitted(index, error=str(err) or type(err).__name__)
    return _Fitted(index, estimator, scores, duration, stopped)


def _cluster_budget(host_threads: dict[str, int]) -> int:
    """This Dask worker's share of its host's cores: the cores over every Dask thread on the host."""
    from distributed import get_worker  # deferred: distributed is heavy and optional
    from distributed.comm import get_address_host  # deferred: as above

    host = get_address_host(get_worker().address)
    return threads.job_budget(max(1, int(host_threads.get(host, 1))))


# ---------------------------------------------------------------------------- running a grid

def run_grid(family_key: str, task: str, base_params: Mapping[str, Any] | None, prepared: PreparedData,
             grid: Mapping[str, Sequence[Any]], *, store: RunStore | None = None, scheduler: str | None = None,
             n_jobs: int | None = None, progress: Progress | None = None,
             on_trial: Callable[[GridTrial], None] | None = None, device: str | None = None,
             name: str | None = None, connect_timeout: float = CONNECT_TIMEOUT_S) -> GridResult:
    """Train one model per point of ``grid`` and store each as a run as soon as it is done.

    Parameters
    ----------
    family_key, task
        The family and the task of every trial.
    base_params
        Fixed parameters of every trial; the grid's values replace them where both name one.
    grid
        Parameter name -> values (a list, or a comma-separated string as :func:`parse_values`
        reads it). Checked by :func:`check_grid`.
    store
        Store every trial as a run (tagged as one grid); without it trials keep their estimator.
    scheduler
        A Dask scheduler address (``tcp://host:8786``): run the trials on that cluster. None or
        empty runs them here (pass :func:`default_scheduler` to honour ``$TREEVIZ_DASK_SCHEDULER``).
    n_jobs
        Trials at once, in scikit-learn's meaning: locally None and -1 use this process's thread
        budget (one process per core), 1 runs them one after another in this process; on a
        cluster None and -1 use every Dask thread, k at most k.
    progress
        A job's progress handle: one stage of ``size`` steps, one record per trial.
    on_trial
        Called with each trial as it is stored (in the order trials finish); raising
        :class:`TrainingCancelled` stops the grid.
    device
        Passed to families with a ``device`` parameter; locally a GPU runs the trials one by one.
    name
        The grid's label (default "<family> on <data set>, <names> grid"), which starts every run's name.
    connect_timeout
        Seconds to wait for the scheduler to answer and to have a worker.
    """
    address = scheduler_address(scheduler)  # a malformed address is refused before anything else
    family = get_family(family_key)
    axes = check_grid(family, task, grid)
    points = grid_points(axes)
    base = family.validate_params(dict(base_params or {}), task)
    settings = [{**base, **point} for point in points]
    for values in settings:  # a bad combination is one sentence now, not a failed trial per point
        family.validate_params(values, task)
    build_estimator(family_key, task, settings[0], prepared, device=device)  # task and data set match
    if n_jobs is not None and int(n_jobs) == 0:
        raise TreevizError("The number of trials at once must be -1 (every core, or every Dask thread) or at least "
                           "1; got 0.")
    names = tuple(axes)
    grid_id = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    label = name or f"{family.short_label} on {prepared.dataset.name}, {' × '.join(names)} grid"
    where = address or "local"
    path = family.lambda_path
    tag = {"id": grid_id, "kind": KIND, "label": label, "names": list(names), "size": len(points), "where": where}
    if progress is not None:
        progress.stages(1)
        progress.begin(len(points))
    trials: list[GridTrial] = []

    def keep(fitted: _Fitted) -> None:
        point = points[fitted.index]
        trial = _store_trial(fitted, point, settings[fitted.index], prepared, family, task, store, tag, label, path)
        trials.append(trial)
        if progress is not None:
            progress.record({"trial": len(trials), "index": trial.index, "error": trial.error,
                             **{k: v for k, v in point.items() if isinstance(v, (int, float, str))}})
        if on_trial is not None:
            on_trial(trial)

    args = [(family_key, task, i, values, prepared, device) for i, values in enumerate(settings)]
    if address is None:
        _run_local(args, n_jobs, device, keep)
    else:
        _run_on_cluster(args, address, n_jobs, connect_timeout, prepared, keep)
    trials.sort(key=lambda t: t.index)
    return GridResult(grid_id, label, names, len(points), where, tuple(trials))


def _store_trial(fitted: _Fitted, point: dict[str, Any], values: dict[str, Any], prepared: PreparedData,
                 family: Family, task: str, store: RunStore | None, tag: dict[str, Any], label: str,
                 path: Any) -> GridTrial:
    """A worker's result as a trial, stored as a run when there is a store (here, in the client)."""
    if fitted.error is not None:
        return GridTrial(fitted.index, point, error=fitted.error)
    estimator, scores = fitted.estimator, dict(fitted.scores or {})
    status = "cancelled" if fitted.stopped else "finished"
    if store is None:
        return GridTrial(fitted.index, point, {**scores, **tree_size(estimator)}, status=status,
                         duration_s=fitted.duration_s, estimator=estimator)
    run_tag = {**tag, "index": fitted.index, "params": dict(point)}
    if path is not None:
        lam = values.get(path.param, estimator.get_params().get(path.param))
        run_tag.update(param=path.param, value=float(lam) if isinstance(lam, (int, float)) else float(fitted.index))
    notes = fit_warnings(estimator, scores, prepared, task)
    if fitted.stopped:
        n = len(getattr(estimator, "history_", []))
        notes += (f"Training was stopped at the user's request after {n} epoch(s).",)
    record = store.save(estimator, prepared, name=f"{label} · {point_text(point)}", family=family.key, task=task,
                        params=estimator.get_params(deep=False), metrics=scores, duration_s=fitted.duration_s,
                        status=status, notes=notes, sweep=run_tag)
    return GridTrial(fitted.index, point, dict(record.metrics), record.run_id, record.status, record.duration_s)


def point_text(point: Mapping[str, Any]) -> str:
    """``l1_penalty=0.1, depth=3, random_state=0``."""
    return ", ".join(f"{k}={value_text(v)}" for k, v in point.items())


def _consume(results: Iterator[_Fitted], keep: Callable[[_Fitted], None]) -> None:
    """Store each result as it comes; on a cancel (or any error), drop the trials not yet done."""
    try:
        for fitted in results:
            keep(fitted)
    except BaseException:
        close = getattr(results, "close", None)
        if close is not None:
            with warnings.catch_warnings():  # joblib counts the trials dropped; that is what a cancel means
                warnings.simplefilter("ignore", UserWarning)
                close()
        raise


def _run_local(args: list[tuple], n_jobs: int | None, device: str | None, keep: Callable[[_Fitted], None]) -> None:
    on_gpu = device is not None and resolve_device(device).startswith("cuda")
    workers = 1 if on_gpu else threads.worker_count(-1 if n_jobs is None else n_jobs, len(args))
    if workers == 1:
        _consume((fit_trial(*a, None, None) for a in args), keep)
        return
    inner = max(1, threads.current_budget() // workers)
    results = Parallel(n_jobs=workers, batch_size=1, return_as="generator_unordered")(
        delayed(fit_trial)(*a, inner, None) for a in args)
    _consume(results, keep)


def _run_on_cluster(args: list[tuple], address: str, n_jobs: int | None, timeout: float, prepared: PreparedData,
                    keep: Callable[[_Fitted], None]) -> None:
    try:
        import distributed  # deferred: dask is heavy and only needed for a cluster
    except ImportError:
        raise TreevizError("Running a grid on a Dask cluster needs dask and distributed (pip install "
                           "'dask[distributed]'), or run the grid on this machine.") from None
    try:
        client = distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError, ValueError, TypeError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise TreevizError(f"Could not reach the Dask scheduler at {address}: {reason.rstrip('.')}. Start one with "
                           "`dask scheduler`, or run the grid on this machine.") from None
    with client:
        try:
            client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, OSError):
            raise TreevizError(f"The Dask scheduler at {address} has no workers; start some with "
                               f"`dask worker {address}`.") from None
        _check_imports(client, address)
        host_threads: dict[str, int] = {}
        for info in client.scheduler_info(n_workers=-1)["workers"].values():
            host_threads[info["host"]] = host_threads.get(info["host"], 0) + int(info["nthreads"])
        total = sum(host_threads.values())  # n_jobs as scikit-learn reads it, over the cluster's threads
        at_once = total if n_jobs is None else int(n_jobs) if int(n_jobs) > 0 else total + 1 + int(n_jobs)
        try:
            finished = distributed.as_completed(loop=client.loop)
            _submit_trials(client, finished, args, prepared, host_threads, max(1, at_once), keep)
        except Exception as err:
            missing = _missing_module(err)
            if missing is None:
                raise
            raise TreevizError(f"The Dask workers of {address} cannot import treeviz ({missing}); start them in "
                               "treeviz's folder with PYTHONPATH set to it (README, 'Sweeps on a cluster').") from None


def _submit_trials(client: Any, finished: Any, args: list[tuple], prepared: PreparedData,
                   host_threads: dict[str, int], at_once: int, keep: Callable[[_Fitted], None]) -> None:
    """Submit the trials, ``at_once`` at a time, and store each as it comes back (``finished`` is an
    empty :class:`distributed.as_completed`). On a cancel (or any error) the trials not yet done are
    cancelled on the cluster. The prepared data goes to every worker once; the tasks refer to it."""
    data = client.scatter(prepared, broadcast=True, hash=False)
    waiting = iter(args)
    submitted = []

    def submit_next() -> None:
        a = next(waiting, None)
        if a is not None:
            family_key, task, index, values, _, device = a
            submitted.append(client.submit(fit_trial, family_key, task, index, values, data, device, None,
                                           host_threads, pure=False))
            finished.add(submitted[-1])

    for _ in range(at_once):
        submit_next()
    try:
        for future in finished:
            keep(future.result())
            submit_next()
    except BaseException:
        client.cancel(submitted)
        raise


def _check_imports(client: Any, address: str) -> None:
    """Refuse a cluster whose scheduler or workers cannot import treeviz: the scheduler unpickles
    every task, and one it cannot read is only logged there, so the grid would wait for ever."""
    missing = [] if client.run_on_scheduler(find_spec, "treeviz") is not None else ["scheduler"]
    workers = client.run(find_spec, "treeviz")
    lacking = sorted(w for w, spec in workers.items() if spec is None)
    if lacking:
        missing.append(f"{len(lacking)} of its {len(workers)} workers" if len(lacking) < len(workers) else "workers")
    if missing:
        raise TreevizError(f"The Dask {' and '.join(missing)} at {address} cannot import treeviz; start them in "
                           "treeviz's folder with PYTHONPATH set to it (README, 'Sweeps on a cluster').")


def _missing_module(err: BaseException) -> str | None:
    """The "No module named ..." sentence of a worker that could not unpickle a trial or the data
    (it comes back as an ImportError, or wrapped in a plain Exception), else None."""
    text = " ".join(str(err).split())
    found = re.search(r"No module named '([^']+)'", text)
    if found:
        return f"no module named '{found.group(1)}'"
    if isinstance(err, ImportError):
        return text or type(err).__name__
    return None


@dataclass(frozen=True)
class GridJob:
    """A job function that runs one grid into a store and returns its grid id. A plain object, so the
    job manager can send it to a worker process.

    It runs here, or with ``on_cluster`` on the scheduler configured in ``$TREEVIZ_DASK_SCHEDULER``
    (read when the job is made, in the app's process). No address can be passed in: a scheduler
    runs code in the process that reads its results, so only whoever started the app chooses it."""

    family_key: str
    task: str
    params: dict[str, Any]
    prepared: PreparedData
    grid: dict[str, list[Any]]
    store: RunStore
    on_cluster: bool = False
    device: str | None = None
    scheduler: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.on_cluster is not True and self.on_cluster is not False:
            raise TreevizError("Choose whether the grid runs on this machine or on the configured Dask cluster.")
        if self.on_cluster:
            scheduler = default_scheduler()
            if scheduler is None:
                raise TreevizError(f"No Dask cluster is configured for this app; whoever starts it sets "
                                   f"{SCHEDULER_ENV} (README, 'Sweeps on a cluster').")
            object.__setattr__(self, "scheduler", scheduler)

    def __call__(self, progress: Progress) -> str:
        return run_grid(self.family_key, self.task, self.params, self.prepared, self.grid, store=self.store,
                        scheduler=self.scheduler, progress=progress, device=self.device).grid_id


def grids(store: RunStore) -> dict[str, list[RunRecord]]:
    """Stored grids: grid id -> its runs in grid order (newest grid first)."""
    groups = tagged_groups(store, KIND)
    ordered = sorted(groups.items(), key=lambda kv: max(r.created for r in kv[1]), reverse=True)
    return {k: sorted(v, key=lambda r: int(r.sweep.get("index", 0))) for k, v in ordered}


def grid_rows(records: Sequence[RunRecord]) -> list[dict[str, Any]]:
    """One row per stored trial: its index, the point's values, status, run id and every metric."""
    rows = []
    for r in records:
        point = r.sweep.get("params", {}) if r.sweep else {}
        rows.append({"trial": int(r.sweep.get("index", 0)) + 1 if r.sweep else None,
                     **{k: value_text(v) for k, v in point.items()}, "status": r.status, "run_id": r.run_id,
                     **r.metrics})
    return rows
