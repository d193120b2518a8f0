"""The run store: every trained model, with what is needed to reopen it after a restart.

Layout under the store's root (:func:`default_root`)::

    runs/<run_id>/run.json              RunRecord (family, params, metrics, data fingerprints, ...)
    runs/<run_id>/history.json          the estimator's history_ (for training curves)
    runs/<run_id>/config.json           }  the model file of :mod:`models.persist`, so a run
    runs/<run_id>/weights.safetensors   }  folder (and its export zip) is also a model file
    datasets/<fingerprint>/dataset.json         names, task, class names, provenance
    datasets/<fingerprint>/arrays.safetensors   X and y

Every write is atomic (:mod:`treeviz.services.store.atomic`): files go into a hidden temporary folder
(``.tmp-*``) in the same parent, are fsynced, and the folder is renamed into place, so a crash
leaves either nothing or a complete run. A data set's two files are its own stored form
(:meth:`Dataset.to_files` / :meth:`Dataset.from_files`). Nothing here pickles or unpickles. A run
leaves the store as a zip through :mod:`treeviz.services.store.archive`, which holds that format.

Two ``RunStore`` objects on one root (two browser tabs, two app processes) always agree. A store
keeps the records it has parsed, each with the identity of the ``run.json`` it came from (inode,
modification time in nanoseconds, size), and trusts nothing else it remembers: every
:meth:`RunStore.list` and :meth:`RunStore.get` looks at the files again (``lstat``) and parses only
a ``run.json`` that is new or whose identity changed; a run gone from disk is dropped. The store
never rewrites a file in place (a rename writes a new ``run.json`` through :func:`os.replace`, so a
new inode), so a changed record always has another identity. At 5 000 runs a listing with nothing
changed costs two ``lstat`` calls per run (:meth:`RunStore.list`), not a JSON parse and check.

The store neither follows nor writes through symbolic links below its ``runs/`` and ``datasets/``
folders: a run or data set folder that is a link, or a link in place of a run's ``run.json``,
``config.json`` or weights, is left out with a sentence saying so (:attr:`RunStore.problems`); files
are read with ``O_NOFOLLOW``; a save or an import never writes where a link stands (it takes another
id, or replaces the link itself); and deleting removes a link, never what it points to.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from models.ground import __version__
from models.ground.errors import TreevizError
from models.ground.jsonio import dumps_json, jsonable
from models.persist import CONFIG_NAME, WEIGHTS_NAME, load_model, model_bytes
from models.registry import family_of_class, get_family, registered_class
from treeviz.services.data.dataset import ARRAYS, DATASET_JSON, Dataset
from treeviz.services.data.pipeline import Preprocessing
from treeviz.services.data.preprocess import PreparedData, PrepConfig, prepare
from treeviz.services.store.atomic import (
    TMP_PREFIX,
    TRASH_PREFIX,
    discard_folder,
    publish_folder,
    remove_entry,
    replace_file,
)
from treeviz.services.store.files import (
    LINK,
    RACY_S,
    RUN_JSON,
    RUN_JSON_TAIL,
    FileIdentity,
    Known,
    identity_of,
    is_link,
    lstat_or_none,
    parse_run_json,
    read_regular,
)
from treeviz.services.store.record import (
    FINGERPRINT_RE,
    MAX_NAME,
    RUN_ID_RE,
    STATUSES,
    RunRecord,
    clean_metrics,
    clean_name,
    device_used,
    new_run_id,
    tree_size,
)

#: The files of a run folder (the last two are the model file of :mod:`models.persist`).
HISTORY_JSON, CONFIG_JSON, WEIGHTS = "history.json", CONFIG_NAME, WEIGHTS_NAME
#: The lock file (in the store's root) held while a default run name is chosen.
NAMING_LOCK = ".naming.lock"
#: A hidden temporary folder older than this (seconds) is reported as left over by a crash.
STALE_TMP_S = 600.0


def default_root() -> Path:
    """The store's root: ``$TREEVIZ_HOME``, else ``$XDG_DATA_HOME/treeviz``, else
    ``~/.local/share/treeviz``."""
    home = os.environ.get("TREEVIZ_HOME")
    if home:
        return Path(home).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "treeviz"


class RunStore:
    """Runs and their data sets in a folder; safe to share between threads and processes.

    Parameters
    ----------
    root
        The store's folder; :func:`default_root` when None. Created on the first write.

    Attributes
    ----------
    problems : list of str
        Sentences about folders the last :meth:`list` skipped (damaged, left over by a crash, or
        a symbolic link).

    Records already parsed are kept with their ``run.json``'s identity and used again only while
    that identity holds (see the module's docstring), so the store always says what is on disk.
    """

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_root()
        self.runs_dir = self.root / "runs"
        self.datasets_dir = self.root / "datasets"
        self.problems: list[str] = []
        #: run id -> what was parsed from its run.json, with the identities that say it still holds
        self._records: dict[str, Known] = {}

    def __repr__(self) -> str:
        return f"RunStore({str(self.root)!r})"

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (sent to a worker process) without the records it keeps: the worker reads its own."""
        out = dict(self.__dict__)
        out["_records"] = {}
        return out

    # ------------------------------------------------------------------ saving
    def save(self, estimator: Any, prepared: PreparedData, *, name: str | None = None,
             family: str | None = None, task: str | None = None,
             params: Mapping[str, Any] | None = None, metrics: Mapping[str, Any] | None = None,
             duration_s: float = 0.0, status: str = "finished",
             notes: Iterable[str] = (), sweep: Mapping[str, Any] | None = None) -> RunRecord:
        """Store a fitted estimator with its data and return the new :class:`RunRecord`.

        ``family`` defaults to the estimator's registry family, ``task`` to the data set's,
        ``params`` to ``estimator.get_params()``. The data set is stored once per fingerprint.
        ``sweep`` tags a run of a parameter sweep (see :mod:`treeviz.services.experiments.sweep`).
        """
        if status not in STATUSES:
            raise TreevizError(f"Unknown run status {status!r}; use one of {', '.join(STATUSES)}.")
        fam = get_family(family) if family else family_of_class(type(estimator))
        # a user's subclass is stored as the registered estimator it derives from (its model file does
        # the same); an unregistered class given with its family keeps its own name
        try:
            estimator_name = registered_class(type(estimator))[1].__name__
        except TreevizError:
            estimator_name = type(estimator).__name__
        dataset = prepared.dataset
        self.store_dataset(dataset)
        now = datetime.now(UTC)
        run_id = new_run_id(now)
        params = dict(params if params is not None else estimator.get_params(deep=False))
        record = RunRecord(
            run_id=run_id, name="-", family=fam.key,
            estimator=estimator_name, task=task or dataset.task,
            params=jsonable(params), dataset=jsonable(dataset.summary()),
            dataset_fingerprint=dataset.fingerprint,
            prep=prepared.config.to_dict(), prepared_fingerprint=prepared.fingerprint,
            metrics=clean_metrics(metrics or {}), **tree_size(estimator),
            created=now.isoformat(timespec="milliseconds"), duration_s=float(duration_s),
            status=status, notes=tuple(str(n) for n in notes), treeviz_version=__version__,
            sweep=None if sweep is None else jsonable(dict(sweep)),
            device=str(getattr(estimator, "device_", "") or device_used(params)),  # "auto" chose by size
        )
        context = {"run_id": run_id, "dataset_fingerprint": record.dataset_fingerprint,
                   "prepared_fingerprint": record.prepared_fingerprint,
                   "feature_names": list(dataset.feature_names), "dataset_name": dataset.name}
        # the model file carries the fitted preprocessing: the run predicts from a table's columns
        # without re-running prepare(), and its file leaves the app whole (model_file)
        files = model_bytes(estimator, context=context,
                            preprocessing=Preprocessing.from_prepared(prepared).to_state())
        files[HISTORY_JSON] = dumps_json(list(getattr(estimator, "history_", [])))
        if name is not None:
            return self.publish_run(replace(record, name=clean_name(name)), files)
        with self._naming_lock():  # another process may be choosing the same default name
            name = self._default_name(fam.label, dataset.name)
            return self.publish_run(replace(record, name=name), files)

    def publish_run(self, record: RunRecord, files: dict[str, bytes]) -> RunRecord:
        """Write a run folder from its record and files (a new id if the record's is taken).

        The record is checked by :meth:`RunRecord.from_dict` first, exactly as an imported one.
        """
        record = RunRecord.from_dict(json.loads(dumps_json(record.to_dict())))
        for _ in range(5):  # a clash of ids is all but impossible; never overwrite one anyway
            files[RUN_JSON] = dumps_json(record.to_dict())
            if publish_folder(files, self.runs_dir, record.run_id):
                return record
            record = replace(record, run_id=new_run_id())
        raise TreevizError(f"Could not find a free run id in {self.runs_dir}.")  # pragma: no cover

    @contextmanager
    def _naming_lock(self) -> Iterator[None]:
        """Held while a default name is chosen and its run published, so that two processes
        saving at once never give two runs one name."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / NAMING_LOCK
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(path, flags, 0o644)
        except OSError:
            if not is_link(lstat_or_none(path)):
                raise
            os.unlink(path)  # a link put where the lock file goes: removed itself, never followed
            fd = os.open(path, flags, 0o644)
        with open(fd, "r+b") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def free_name(self, name: str, *, run_id: str | None = None) -> str:
        """``name`` if no run other than ``run_id`` has it, else the first of "name (2)",
        "name (3)", ... that none has (call under the naming lock, as :meth:`publish_unique` and
        :meth:`rename` do, so two processes never pick the same one)."""
        name = clean_name(name)
        taken = {r.name for r in self.list() if r.run_id != run_id}
        n, candidate = 1, name
        while candidate in taken:
            n += 1
            suffix = f" ({n})"
            candidate = name[:MAX_NAME - len(suffix)] + suffix
        return candidate

    def publish_unique(self, record: RunRecord, files: dict[str, bytes]) -> RunRecord:
        """:meth:`publish_run` under a name no other run has (an imported run whose name is taken,
        e.g. the same zip imported twice, becomes "name (2)")."""
        with self._naming_lock():
            return self.publish_run(replace(record, name=self.free_name(record.name)), files)

    def _default_name(self, family_label: str, dataset_name: str) -> str:
        short = family_label.split(" (")[0]
        prefix = f"{short} on {clean_name(dataset_name)[:MAX_NAME // 2]} #"
        taken = [r.name for r in self.list()]
        n = 1 + sum(1 for t in taken if t.startswith(prefix))
        while f"{prefix}{n}" in taken:
            n += 1
        return f"{prefix}{n}"

    # ------------------------------------------------------------------ data sets
    def store_dataset(self, dataset: Dataset) -> str:
        """Store ``dataset`` under its fingerprint (once) and return the fingerprint."""
        fp = dataset.fingerprint
        final = self.datasets_dir / fp
        if self._dataset_complete(fp):
            return fp
        files = dataset.to_files()
        if os.path.lexists(final):  # damaged by hand, or a link: moved aside (a link itself), never trusted
            discard_folder(final, self.datasets_dir, missing_ok=True)
        publish_folder(files, self.datasets_dir, fp)
        return fp

    def _dataset_complete(self, fingerprint: str) -> bool:
        """Whether ``datasets/<fingerprint>`` is a folder (not a link) holding both files (not links)."""
        folder = self.datasets_dir / fingerprint
        st = lstat_or_none(folder)
        if st is None or not stat.S_ISDIR(st.st_mode):
            return False
        return all((f := lstat_or_none(folder / n)) is not None and stat.S_ISREG(f.st_mode)
                   for n in (DATASET_JSON, ARRAYS))

    def _dataset_bytes(self, fingerprint: str) -> dict[str, bytes]:
        """The two stored files of a data set, never read through a symbolic link.

        Raises
        ------
        TreevizError
            If the data set's folder or one of its files is a symbolic link.
        OSError
            If a file is missing or unreadable.
        """
        folder = self.datasets_dir / fingerprint
        if is_link(lstat_or_none(folder)):
            raise TreevizError(f"The data set folder {fingerprint} in {self.datasets_dir} {LINK}; "
                               "remove the link, then import the run with its data or load the data set again.")
        out = {}
        for name in (DATASET_JSON, ARRAYS):
            try:
                out[name] = read_regular(folder / name)[0]
            except OSError:
                if is_link(lstat_or_none(folder / name)):
                    raise TreevizError(f"The {name} of the data set {fingerprint} {LINK}; remove the link, "
                                       "then import the run with its data or load the data set again.") from None
                raise
        return out

    def list_datasets(self) -> list[dict[str, Any]]:
        """Summaries of the stored data sets, newest first (unreadable folders are skipped).

        Each is ``{"fingerprint", "name", "task", "n_samples", "n_features", "source"}``.
        """
        out = []
        entries = list(os.scandir(self.datasets_dir)) if self.datasets_dir.is_dir() else []
        for entry in entries:
            if not FINGERPRINT_RE.fullmatch(entry.name) or not entry.is_dir(follow_symlinks=False):
                continue  # a link is left out: the store never follows one
            try:
                info = json.loads(read_regular(Path(entry.path) / DATASET_JSON)[0])
                mtime = entry.stat(follow_symlinks=False).st_mtime
                if not self._dataset_complete(entry.name):
                    continue
            except (OSError, ValueError):
                continue
            out.append((mtime, {
                "fingerprint": entry.name, "name": str(info.get("name", entry.name)),
                "task": str(info.get("task", "")), "n_samples": info.get("n_samples", "?"),
                "n_features": info.get("n_features", len(info.get("feature_names", []))),
                "source": str(info.get("source", "")),
            }))
        return [summary for _, summary in sorted(out, key=lambda t: t[0], reverse=True)]

    def dataset_files(self, fingerprint: str) -> dict[str, bytes] | None:
        """The stored files of a data set (for archives), or None when it is not complete here (or
        is a symbolic link, which the store never follows)."""
        try:
            return self._dataset_bytes(fingerprint)
        except (OSError, TreevizError):
            return None

    def load_dataset(self, fingerprint: str) -> Dataset:
        """The stored data set with this fingerprint (checked against its arrays)."""
        if not FINGERPRINT_RE.fullmatch(str(fingerprint)):
            raise TreevizError(f"{fingerprint!r} is not a data set fingerprint.")
        try:
            files = self._dataset_bytes(fingerprint)
        except OSError:
            raise TreevizError(
                f"The data set {fingerprint} is not in the run store {self.root}; "
                "import the run with its data, or load the data set again and retrain."
            ) from None
        return Dataset.from_files(files[DATASET_JSON], files[ARRAYS], fingerprint)

    # ------------------------------------------------------------------ reading
    def list(self) -> list[RunRecord]:
        """Every readable run, newest first; skipped folders are described in :attr:`problems`.

        Each call looks at every run folder again and parses only the ``run.json`` files that are
        new or changed since this store last read them; a run deleted while the store is being
        listed (its folder gone) is simply not listed. A run known from an earlier listing costs two
        ``lstat`` calls, its folder's and its ``run.json``'s: while the folder's identity holds, no
        file in it was added, removed, replaced or turned into a link, so its model files are
        checked again only when it changed (or changed within :data:`RACY_S` of being looked at).
        """
        records, problems = [], []
        kept, fresh = self._records, {}
        try:
            with os.scandir(self.runs_dir) as scan:
                entries = list(scan)
        except FileNotFoundError:
            entries = []
        now = time.time()
        for entry in entries:
            known = kept.get(entry.name)
            if known is not None and known.folder is not None and entry.is_dir(follow_symlinks=False):
                # the short way, inline (it runs for every run): a known run whose folder and run.json
                # are as they were, its folder old enough to be trusted (see _record_in)
                try:
                    folder, own = entry.stat(follow_symlinks=False), os.lstat(entry.path + RUN_JSON_TAIL)
                except OSError:
                    folder = own = None
                if (folder is not None and (folder.st_ino, folder.st_mtime_ns, folder.st_size) == known.folder
                        and (own.st_ino, own.st_mtime_ns, own.st_size) == known.json and stat.S_ISREG(own.st_mode)):
                    fresh[entry.name] = known
                    records.append(known.record)
                    continue
            if entry.is_symlink():
                if not entry.name.startswith(".") and (RUN_ID_RE.fullmatch(entry.name) or entry.is_dir()):
                    problems.append(f"The run folder {entry.name} was skipped: it {LINK}.")
                continue
            if not entry.is_dir(follow_symlinks=False):
                continue
            if entry.name.startswith("."):
                try:
                    age = now - entry.stat(follow_symlinks=False).st_mtime
                except OSError:
                    continue
                if entry.name.startswith((TMP_PREFIX, TRASH_PREFIX)) and age > STALE_TMP_S:
                    problems.append(
                        f"The folder {entry.name} was left by a save or delete that did not finish; "
                        "it is ignored (RunStore.remove_leftovers() deletes it)."
                    )
                continue
            if entry.name not in kept and not RUN_ID_RE.fullmatch(entry.name):
                problems.append(f"The run folder {entry.name} was skipped: {entry.name!r} is not a run id.")
                continue
            try:
                found = self._record_in(entry.name, entry.path, kept, entry.stat(follow_symlinks=False), now)
            except Exception as err:
                if not os.path.lexists(entry.path):
                    continue  # deleted (perhaps by another process) while the store was listed
                if isinstance(err, TreevizError):
                    problems.append(f"The run folder {entry.name} was skipped: {err}")
                else:
                    problems.append(f"The run folder {entry.name} was skipped: it is unreadable "
                                    f"({type(err).__name__}).")
                continue
            fresh[entry.name] = found
            records.append(found.record)
        self._records = fresh  # runs gone from disk are forgotten
        self.problems = sorted(problems)
        records.sort(key=lambda r: (r.created, r.run_id), reverse=True)
        return records

    def run_path(self, run_id: str) -> Path:
        """The folder of an existing run (a TreevizError sentence if there is none)."""
        return self._run_dir(run_id)

    def _run_dir(self, run_id: str) -> Path:
        if not isinstance(run_id, str) or not RUN_ID_RE.fullmatch(run_id):
            raise TreevizError(f"{run_id!r} is not a run id.")
        path = self.runs_dir / run_id
        st = lstat_or_none(path)
        if is_link(st):
            raise TreevizError(f"The run folder {run_id} in {self.runs_dir} {LINK}; remove the link, or copy "
                               "the run into the store (or import its zip).")
        if st is None or not stat.S_ISDIR(st.st_mode):
            raise TreevizError(
                f"There is no run {run_id} in {self.runs_dir}; it may have been deleted in another tab."
            )
        return path

    @staticmethod
    def _file_stats(folder: str | os.PathLike, names: Iterable[str]) -> dict[str, os.stat_result]:
        """``lstat`` of each named file of a run folder; a TreevizError sentence ("it ...") when one
        is missing, not a regular file, or a symbolic link."""
        stats, missing, links = {}, [], []
        base = os.fspath(folder) + os.sep  # plain strings: this runs for every file of every run
        for name in names:
            st = lstat_or_none(base + name)
            if is_link(st):
                links.append(name)
            elif st is None or not stat.S_ISREG(st.st_mode):
                missing.append(name)
            else:
                stats[name] = st
        if links:
            raise TreevizError(f"its {links[0]} {LINK}." if len(links) == 1 else
                               f"its {', '.join(links)} are symbolic links, which the store never follows.")
        if missing:
            raise TreevizError(f"it lacks {', '.join(missing)}.")
        return stats

    def _record_in(self, run_id: str, folder: str | os.PathLike, kept: Mapping[str, Known],
                   folder_stat: os.stat_result | None = None, now: float = 0.0) -> Known:
        """The record of a run folder, its three files checked: the one in ``kept`` while the
        identity of its ``run.json`` is unchanged, else the file read (never through a link) and
        parsed. With the folder's ``lstat`` (taken before anything in it was looked at) and the
        time, the result says whether the folder may be trusted at the next listing
        (:meth:`list`'s short way)."""
        path = os.path.join(folder, RUN_JSON)
        known = kept.get(run_id)
        stats = self._file_stats(folder, (RUN_JSON, CONFIG_JSON, WEIGHTS))
        trusted = None
        if folder_stat is not None and now - folder_stat.st_mtime > RACY_S:
            trusted = identity_of(folder_stat)
        if known is not None and known.json == identity_of(stats[RUN_JSON]):
            return known if folder_stat is None else known._replace(folder=trusted)
        try:
            data, st = read_regular(path)  # its fstat: the identity of exactly these bytes
        except OSError:
            if is_link(lstat_or_none(path)):
                raise TreevizError(f"its run.json {LINK}.") from None
            raise TreevizError("its run.json is not readable JSON.") from None
        return Known(identity_of(st), parse_run_json(data, run_id), trusted)

    def _read_record(self, run_id: str) -> RunRecord:
        found = self._record_in(run_id, self._run_dir(run_id), self._records)
        self._records[run_id] = found
        return found.record

    def get(self, run_id: str) -> RunRecord:
        """The record of one run; a TreevizError sentence if it is missing or damaged."""
        try:
            return self._read_record(run_id)
        except TreevizError as err:
            text = str(err)
            if text[:1].islower():
                raise TreevizError(f"The run {run_id} cannot be opened: {text}") from None
            raise

    def exists(self, run_id: str) -> bool:
        """Whether a run folder (a folder, not a symbolic link) of this id is in the store."""
        if not (isinstance(run_id, str) and RUN_ID_RE.fullmatch(run_id)):
            return False
        st = lstat_or_none(self.runs_dir / run_id)
        return st is not None and stat.S_ISDIR(st.st_mode)

    def identity(self, run_id: str) -> tuple[FileIdentity, ...]:
        """What tells this run's files from those of another run stored later under the same id
        (deleted, then imported again): the inode, modification time (ns) and size of the run folder,
        its ``run.json``, ``config.json`` and weights. A cache of anything read from a run keys on
        it, so a new run under an old id never meets the old run's entry. A TreevizError sentence
        when the run is missing, damaged or a symbolic link."""
        folder = self._run_dir(run_id)
        try:
            stats = self._file_stats(folder, (RUN_JSON, CONFIG_JSON, WEIGHTS))
            top = os.lstat(folder)
        except TreevizError as err:
            raise TreevizError(f"The run {run_id} cannot be opened: {err}") from None
        except OSError:
            raise TreevizError(f"There is no run {run_id} in {self.runs_dir}; it may have been deleted in "
                               "another tab.") from None
        return (identity_of(top), *(identity_of(stats[n]) for n in (RUN_JSON, CONFIG_JSON, WEIGHTS)))

    def load_model(self, run_id: str) -> Any:
        """The run's fitted estimator, loaded with :func:`models.persist.load_model` (a model file
        that is a symbolic link is refused)."""
        folder = self._run_dir(run_id)
        try:
            self._file_stats(folder, (CONFIG_JSON, WEIGHTS))
        except TreevizError as err:
            raise TreevizError(f"The run {run_id} cannot be opened: {err}") from None
        return load_model(folder)

    def history(self, run_id: str) -> list[dict[str, Any]]:
        """The estimator's ``history_`` records (without loading the model); none when the file is
        missing, damaged or a symbolic link."""
        try:
            data = json.loads(read_regular(self._run_dir(run_id) / HISTORY_JSON)[0])
        except (OSError, ValueError):
            return []
        return [r for r in data if isinstance(r, dict)] if isinstance(data, list) else []

    def run_files(self, run_id: str) -> dict[str, bytes]:
        """The files of a run folder (``run.json``, ``history.json``, ``config.json``, weights), read
        without following a symbolic link: a missing or linked ``history.json`` is left out; the
        other three must be there (a TreevizError sentence otherwise)."""
        self.get(run_id)
        folder = self._run_dir(run_id)
        out = {}
        for name in (RUN_JSON, HISTORY_JSON, CONFIG_JSON, WEIGHTS):
            try:
                out[name] = read_regular(folder / name)[0]
            except OSError:
                if name != HISTORY_JSON:
                    raise TreevizError(f"The run {run_id} cannot be read: its {name} is missing, unreadable or "
                                       "a symbolic link.") from None
        return out

    def load_prepared(self, run_id: str) -> PreparedData:
        """The run's data, split and preprocessed exactly as when it was trained."""
        record = self.get(run_id)
        dataset = self.load_dataset(record.dataset_fingerprint)
        if record.dataset.get("name") and record.dataset["name"] != dataset.name:
            dataset = replace(dataset, name=str(record.dataset["name"]))
        prepared = prepare(dataset, PrepConfig.from_dict(record.prep))
        if prepared.fingerprint != record.prepared_fingerprint:
            raise TreevizError(
                f"The data of run '{record.name}' cannot be rebuilt exactly (its preprocessing "
                "fingerprint differs); retrain the model on the data set instead."
            )
        return prepared

    # ------------------------------------------------------------------ changing
    def rename(self, run_id: str, name: str) -> RunRecord:
        """Give a run a new display name (atomic rewrite of its run.json); a name another run has
        becomes "name (2)" (see :meth:`free_name`), so the returned record says the name given."""
        with self._naming_lock():
            record = replace(self.get(run_id), name=self.free_name(name, run_id=run_id))
            try:
                replace_file(self._run_dir(run_id) / RUN_JSON, dumps_json(record.to_dict()))
            except FileNotFoundError:
                raise TreevizError(f"The run {run_id} was deleted (perhaps in another tab).") from None
        return record

    def delete(self, run_id: str) -> None:
        """Remove a run (its data set stays: other runs may share it)."""
        discard_folder(self._run_dir(run_id), self.runs_dir)

    def remove_leftovers(self, older_than_s: float = STALE_TMP_S) -> int:
        """Delete hidden temporary folders left by crashed saves; returns how many."""
        count, now = 0, time.time()
        for parent in (self.runs_dir, self.datasets_dir):
            for entry in (parent.iterdir() if parent.is_dir() else ()):
                st = lstat_or_none(entry)
                if (entry.name.startswith((TMP_PREFIX, TRASH_PREFIX)) and st is not None
                        and (stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode))
                        and now - st.st_mtime > older_than_s):
                    remove_entry(entry)  # a link is removed itself, never what it points to
                    count += 1
        return count
