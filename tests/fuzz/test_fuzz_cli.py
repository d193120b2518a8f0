"""Fuzz: the command line's argument parsing, ``main(argv)`` (:mod:`treeviz.cli.main`) with random argument lists.

Each argument list is built from the real commands and options (read from ``build_parser()``, so
a new option is fuzzed too) with random values: negative and huge numbers, empty and unicode text,
control characters, run ids, and paths to files, folders, devices and missing ones inside a private
folder. The property: the exit status is success (0), a refusal (1, one ``treeviz: error:``
sentence) or a usage error (2), never a crash (70) or an escaping exception, and nothing is written
or deleted outside the private folder.

Training stays short: CART and the test family ``stump`` train for real (with small sweeps), every
other fit, and every grid, stops where training would start, after the command line has checked
everything it checks (:class:`ReachedTraining`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from models.registry import families
from tests.fuzz.conftest import ci_examples
from treeviz.cli import app as app_command
from treeviz.cli import common
from treeviz.cli import grid as grid_command
from treeviz.cli import sweep as sweep_command
from treeviz.cli import train as train_command
from treeviz.cli.main import build_parser, main
from treeviz.services.data import CATALOGUE

#: Families cheap enough to train for real in every example.
CHEAP = ("cart", "stump")
#: The most points of a real λ path in one example.
CHEAP_POINTS = 3


class ReachedTraining(BaseException):
    """Raised where an expensive fit would start; a BaseException, so ``main`` does not turn it into a
    crash, and the test counts the arguments as accepted."""


# ---------------------------------------------------------------------------- places in the private folder


@dataclass(frozen=True)
class Place:
    """A path inside the example's private folder (``tmp``), resolved when the example runs."""

    name: str

    def resolve(self, tmp: Path, run_id: str) -> str:
        return str(tmp / self.name.replace("RUN", run_id))


@dataclass(frozen=True)
class RunId:
    """The template store's run id."""

    def resolve(self, tmp: Path, run_id: str) -> str:
        return run_id


PLACES = [Place(n) for n in ("table.csv", "big.csv", "empty.csv", "binary.csv", "a folder", "missing.csv",
                             "missing/deeper.csv", "run.zip", "not a zip.zip", "null", "home",
                             "home/runs/RUN", "table.csv/inside", "out.txt")]
#: Paths outside the private folder that are only read, or cannot be written.
OUTSIDE = ["/dev/null", "/dev/zero", "/proc/1", "/nonexistent/file.csv", "."]

ints = st.one_of(st.integers(-3, 70), st.integers(-2**70, 2**70), st.sampled_from([-1, 0, 2**31, 2**32, 2**64]))
floats = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 0.1, 0.95, 1e-320]))
texts = st.one_of(st.text(max_size=12),
                  st.text(st.characters(codec="utf-8", categories=("Cc", "Zs", "So", "Lo", "Mn")), max_size=6),
                  st.sampled_from(["", " ", "\x00", "-", "--", "=", "none", "unlimited", "true", "auto", "cuda:0",
                                   "tcp://127.0.0.1:1", "notaurl", "'; DROP TABLE t; --", "é" * 40]))
numbers = st.one_of(ints.map(str), floats.map(repr), floats.map(str))
#: Paths that are read: inside the private folder or anywhere.
paths = st.one_of(st.sampled_from(PLACES), st.sampled_from(OUTSIDE))
#: Paths that may be written (--out, --home): inside the private folder (relative ones too: the
#: working folder is in it), or places nothing can be written to.
relative = texts.map(lambda t: t.lstrip("/~").replace("..", "_"))
outputs = st.one_of(st.just("-"), st.sampled_from(PLACES), relative)
homes = st.one_of(st.sampled_from(PLACES[:12]), st.sampled_from(["/dev/null", "/proc/1", "."]), relative)


def _param_names() -> list[str]:
    return sorted({p.name for f in families().values() for p in f.params})


names = st.one_of(st.sampled_from(_param_names()), texts)
values = st.one_of(numbers, texts, st.sampled_from(["none", "true", "false", "3", "0.5", "-1", "gini"]))
value_lists = st.lists(values, min_size=0, max_size=4).map(",".join)
data_specs = st.one_of(st.sampled_from(list(CATALOGUE)), paths, texts, st.just("0" * 64))
family_keys = st.one_of(st.sampled_from(list(families())), texts)
run_specs = st.one_of(st.just(RunId()), st.just("20200101-000000-000000-abcdef"), paths, texts)

#: Values by the option's destination (and, where two commands share one, the command).
BY_DEST: dict[str, Any] = {
    "data": data_specs, "family": family_keys, "keys": family_keys,
    "param": st.builds("{}={}".format, names, values), "grid": st.builds("{}={}".format, names, value_lists),
    "model": run_specs, "run_id": run_specs, "run_ids": run_specs, "zips": st.one_of(paths, texts),
    "predict.table": st.one_of(paths, texts), "home": homes, "out": outputs,
    "preset": st.one_of(st.sampled_from(["quick", "deep"]), texts),
    "sweep_param": names, "values": st.one_of(numbers, value_lists), "scheduler": texts,
    "dataset": st.one_of(st.sampled_from(list(CATALOGUE)), texts), "target": st.one_of(st.just("species"), texts),
    "name": texts, "device": texts, "keep": st.one_of(st.sampled_from(["species", "island", "id"]), texts),
    "export.table": texts,
}


def _value(command: str, action: argparse.Action) -> st.SearchStrategy:
    for key in (f"{command}.{action.dest}", action.dest):
        if key in BY_DEST:
            return BY_DEST[key]
    if action.choices:  # mostly a valid choice, so that the other options are reached
        choice = st.sampled_from([str(c) for c in action.choices])
        return st.one_of(choice, choice, choice, texts)
    plausible = st.sampled_from(["0", "1", "2", "3", "0.2", "5", "-1", "10"])
    return st.one_of(plausible, plausible, numbers, texts, paths)


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


COMMANDS = _commands()


_TRAINING = st.tuples(st.just("-d"), st.sampled_from(["iris", "wine", "penguins", "blobs", "diabetes"]),
                      st.just("-f"), st.sampled_from(list(families())))
#: Arguments a command needs, valid, so that most examples get past the parser to the checks after it.
SKELETONS = {
    "train": _TRAINING, "sweep": _TRAINING,
    "grid": st.tuples(_TRAINING, st.just("-g"), st.builds("{}={}".format, names, value_lists)).map(
        lambda t: (*t[0], *t[1:])),
    "predict": st.tuples(st.just(RunId()), st.just(Place("table.csv"))),
    "export": st.tuples(st.just(RunId())), "report": st.tuples(st.just(RunId())),
    "delete": st.tuples(st.just(RunId())), "import": st.tuples(st.just(Place("run.zip"))),
}


@st.composite
def argv_lists(draw) -> list[Any]:
    """A command, its positional arguments (often valid ones), then options (a few unknown ones too)."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    parser = COMMANDS[command]
    argv: list[Any] = [command]
    if command in SKELETONS and draw(st.integers(0, 2)):
        argv += draw(SKELETONS[command])
    for action in parser._actions:
        if action.option_strings or action.nargs == 0 or len(argv) > 1:
            continue
        count = draw(st.integers(0, 2)) if action.nargs in ("*", "+") else draw(st.sampled_from([1, 1, 1, 0]))
        argv += [draw(_value(command, action)) for _ in range(count)]
    options = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    for action in draw(st.lists(st.sampled_from(options), max_size=5)):
        argv.append(draw(st.sampled_from(action.option_strings)))
        if action.nargs == 0:
            continue
        count = draw(st.integers(1, 3)) if action.nargs in ("*", "+") else 1
        argv += [draw(_value(command, action)) for _ in range(count)]
    if draw(st.sampled_from([False] * 30 + [True])):
        argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--help", "--debug", "--nope", "-x"])))
    return argv


# ---------------------------------------------------------------------------- the private folder


def _template(root: Path) -> str:
    """A run store with one CART run, in ``root/home``; returns the run id."""
    code = main(["train", "-q", "-d", "penguins", "-f", "cart", "-p", "max_depth=2", "--home", str(root / "home")])
    assert code == 0
    (run_id,) = os.listdir(root / "home" / "runs")
    assert main(["export", run_id, "--home", str(root / "home"), "--out", str(root / "run.zip"), "-q"]) == 0
    (root / "table.csv").write_text("id,island,bill_length_mm,bill_depth_mm,flipper_length_mm,body_mass_g,sex,year\n"
                                    "=1+2,Biscoe,45.1,14.5,215,5000,female,2008\n7,Dream,-3,1e308,,,,\n")
    (root / "big.csv").write_text("a,b\n" + "1,2\n" * 20000)
    (root / "empty.csv").write_bytes(b"")
    (root / "binary.csv").write_bytes(bytes(range(256)) * 4)
    (root / "not a zip.zip").write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    (root / "a folder").mkdir()
    return run_id


def _null_device(path: Path) -> None:
    """A private copy of /dev/null (outputs may go into a device without endangering the real one);
    an empty file where device nodes cannot be made."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError:
        path.write_bytes(b"")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("cli-template")
    return root, _template(root)


def _resolve(token: Any, tmp: Path, run_id: str) -> str:
    return token.resolve(tmp, run_id) if isinstance(token, (Place, RunId)) else str(token)


# ---------------------------------------------------------------------------- writes outside the folder

_WATCH: dict[str, Any] = {"root": None, "seen": []}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {"os.mkdir": 0, "os.rename": 1, "os.symlink": 1, "os.link": 1, "os.truncate": 0, "os.chmod": 0,
            "os.utime": 0, "shutil.copyfile": 1, "shutil.move": 1}
_REMOVES = {"os.remove": 0, "os.rmdir": 0, "shutil.rmtree": 0, "os.rename": 0}


def _audit(event: str, args: tuple) -> None:
    """Note every path a write, a rename or a removal names while a call is watched."""
    if _WATCH["root"] is None:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes and isinstance(path, (str, bytes, os.PathLike)):
            _WATCH["seen"].append(("write", os.path.abspath(os.fsdecode(path))))
        return
    for kinds, kind in ((_CHANGES, "write"), (_REMOVES, "remove")):
        if event in kinds:
            path = args[kinds[event]]
            if isinstance(path, (str, bytes, os.PathLike)):
                absolute = os.path.abspath(os.fsdecode(path))
                there = os.path.lexists(absolute)
                if kind == "remove" and not there:
                    continue  # nothing to remove
                if event == "os.mkdir" and there:
                    continue  # makedirs(exist_ok=True) of a folder that is there changes nothing
                _WATCH["seen"].append((kind, absolute))


sys.addaudithook(_audit)


def _outside(root: Path, seen: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The writes and removals outside ``root`` that happened (a write counts when its path exists
    afterwards); compiled bytecode and the null device are no change."""
    inside = str(root) + os.sep
    out = []
    for kind, path in seen:
        if path.startswith(inside) or path == os.devnull or "__pycache__" in path:
            continue
        if kind == "remove" or os.path.lexists(path):
            out.append((kind, path))
    return out


# ---------------------------------------------------------------------------- the property


@pytest.fixture
def cheap_training(monkeypatch):
    """Real fits for CART and the stump (short λ paths), :class:`ReachedTraining` for the rest; small
    size limits, so that reading a device to its limit is quick."""
    train_run, run_sweep = train_command.train_run, sweep_command.run_sweep

    def train(family, *args, **kwargs):
        if family not in CHEAP:
            raise ReachedTraining(family)
        return train_run(family, *args, **kwargs)

    def sweep(family, task, params, prepared, values, **kwargs):
        if family not in CHEAP or len(set(values)) > CHEAP_POINTS:
            raise ReachedTraining(family)
        return run_sweep(family, task, params, prepared, values, **kwargs)

    def grid(*args, **kwargs):
        raise ReachedTraining("grid")

    monkeypatch.setattr(train_command, "train_run", train)
    monkeypatch.setattr(sweep_command, "run_sweep", sweep)
    monkeypatch.setattr(grid_command, "run_grid", grid)

    def serve(command):  # `treeviz app` would start a server that runs until stopped
        raise ReachedTraining("app")

    monkeypatch.setattr(app_command, "launch", serve)
    monkeypatch.delenv("TREEVIZ_DASK_SCHEDULER", raising=False)
    monkeypatch.setenv("TREEVIZ_MAX_UPLOAD_MB", "0.1")  # big.csv is over it
    monkeypatch.setattr(common, "MAX_IMPORT_BYTES", 2**20)  # /dev/zero as a model file: refused after 1 MiB


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@ci_examples(25)  # about a second each (a command that reaches loading a table or a model)
@given(argv=argv_lists())
def test_the_command_line_accepts_or_refuses_every_argument_list(template, cheap_training, monkeypatch,
                                                                  capsysbinary, tmp_path, argv):
    source, run_id = template
    with tempfile.TemporaryDirectory(dir=tmp_path) as folder:
        tmp = Path(folder)
        for entry in source.iterdir():
            (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, tmp / entry.name)
        _null_device(tmp / "null")
        for name, value in (("TREEVIZ_HOME", tmp / "home"), ("HOME", tmp), ("XDG_DATA_HOME", tmp / "xdg"),
                            ("TMPDIR", tmp)):
            monkeypatch.setenv(name, str(value))
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        monkeypatch.chdir(tmp / "a folder")
        args = [_resolve(token, tmp, run_id) for token in argv]
        _WATCH.update(root=tmp, seen=[])
        try:
            code = main(args)
        except ReachedTraining:
            code = None
        finally:
            seen, _WATCH["root"] = list(_WATCH["seen"]), None
            monkeypatch.chdir(tmp_path)
        err = capsysbinary.readouterr().err.decode("utf-8", "replace")  # stdout may be a zip: bytes
        event(f"{argv[0]}: exit {'- (reached training)' if code is None else code}")
        assert _outside(tmp, seen) == [], (args, seen)
        assert code in (None, common.OK, common.USER_ERROR, common.USAGE), (args, code, err[-2000:])
        assert "Traceback" not in err, (args, err[-2000:])
        if code == common.USER_ERROR:
            assert re.match(r"treeviz: error: \S", err.rstrip("\n").splitlines()[-1]), (args, err[-2000:])
