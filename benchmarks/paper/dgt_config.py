"""The DGT benchmark's settings: ``dgt.toml`` beside this module (the paper's protocol), a file given
with ``--config`` over it (only the keys it changes), command-line flags over both, and ``--quick``
over everything (a smoke test's sizes). :func:`settings` turns the result into what the parts read."""

from __future__ import annotations

import argparse
import os
import tomllib
from pathlib import Path
from typing import Any

import torch

DEFAULT_CONFIG = Path(__file__).with_name("dgt.toml")
PARTS = ("table1", "table2", "table4", "table6", "speed")
REGRESSION = ("abalone", "cpu_act")
CLASSIFICATION = ("pendigits", "satimage", "letter")
#: The parts that read their own section of the config (splits, tune, ...).
SECTIONS = ("table1", "table2", "table4", "table6")
#: Parts on the shipped Abalone / Comp-Activ shuffles, of which there are five.
SHIPPED_SPLITS = 5
QUICK_EPOCHS = 2
#: Epochs of the speed part's fits (the first is warm-up, the rest are timed).
SPEED_EPOCHS = {"quick": 3, "full": 11}


def read_config(path: str | Path | None = None) -> dict[str, Any]:
    """``dgt.toml``, with the keys of the TOML file at ``path`` (same layout, any subset) over it.
    A key the defaults do not have is refused, so a misspelt key never passes silently."""
    with DEFAULT_CONFIG.open("rb") as fh:
        config = tomllib.load(fh)
    if path is not None:
        with Path(path).open("rb") as fh:
            _merge(config, tomllib.load(fh), str(path))
    return config


def _merge(base: dict[str, Any], extra: dict[str, Any], where: str) -> None:
    for key, value in extra.items():
        if key not in base:
            raise ValueError(f"{where}: unknown setting {key!r}; known: {', '.join(base)}")
        if isinstance(base[key], dict):
            if not isinstance(value, dict):
                raise ValueError(f"{where}: {key!r} is a table ([{key}]), got {value!r}")
            _merge(base[key], value, f"{where} [{key}]")
        else:
            base[key] = value


def _names(text: str) -> list[str]:
    return [s.strip().lower() for s in text.split(",") if s.strip()]


def _numbers(kind: type) -> Any:
    def parse(text: str) -> list:
        try:
            return [kind(s) for s in text.split(",") if s.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma list of numbers, got {text!r}") from None
    return parse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags that change the config (see ``dgt.toml`` for what each setting means)."""
    parser.add_argument("--config", type=Path, help="a TOML file with the settings to change (dgt.toml's layout)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: one split and seed, 2 epochs, small data, everything on the CPU")
    parser.add_argument("--parts", type=_names, help=f"comma list of {', '.join(PARTS)}")
    parser.add_argument("--datasets", type=_names, help=f"comma list of {', '.join(REGRESSION + CLASSIFICATION)}")
    parser.add_argument("--seeds", type=int, help="model seeds per split")
    parser.add_argument("--splits", type=int, help="splits per data set in every part (at most 5 for the shipped "
                                                   "Abalone / Comp-Activ shuffles)")
    parser.add_argument("--epochs", type=int, help="training epochs of every tree")
    parser.add_argument("--tune", choices=("grid", "fixed"), help="grid: tune every part; fixed: tune none")
    parser.add_argument("--l1-grid", type=_numbers(float), help="comma list of the λ1 values a grid tries")
    parser.add_argument("--trees", type=int, help="trees per Table 4 forest")
    parser.add_argument("--heights", type=_numbers(int), help="Table 4's tree heights (several: searched by the grid)")
    parser.add_argument("--passes", type=int, help="passes of Table 6's bandit stream over the training part")
    parser.add_argument("--train-device", choices=("auto", "cpu", "cuda"), help="where the trees train")
    parser.add_argument("--jobs", type=int, help="worker processes (0: one per CPU on a machine with more than 2)")
    parser.add_argument("--reuse-tuning", action="store_true", default=None,
                        help="take grid points the previous results file scored for the same setup")


def config_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The config file(s) with the flags of ``args`` over them."""
    config = read_config(args.config)
    top = {"parts": args.parts, "datasets": args.datasets, "seeds": args.seeds, "epochs": args.epochs,
           "l1_grid": args.l1_grid, "train_device": args.train_device, "jobs": args.jobs,
           "reuse_tuning": args.reuse_tuning}
    config.update({k: v for k, v in top.items() if v is not None})
    for part in SECTIONS:
        if args.splits is not None:
            config[part]["splits"] = args.splits
        if args.tune is not None:
            config[part]["tune"] = args.tune == "grid"
    for part, key, value in (("table4", "trees", args.trees), ("table4", "heights", args.heights),
                             ("table6", "passes", args.passes)):
        if value is not None:
            config[part][key] = value
    return config


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _known(values: Any, allowed: tuple[str, ...], name: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(str(v).strip().lower() for v in values))
    unknown = sorted(set(items) - set(allowed))
    if unknown or not items:
        raise ValueError(f"{name}: unknown or none: {', '.join(unknown) or '(empty)'}; known: {', '.join(allowed)}")
    return items


def _grid(values: Any) -> tuple[float, ...]:
    grid = tuple(dict.fromkeys(float(v) for v in values))
    if not grid or min(grid) < 0:
        raise ValueError(f"l1_grid must list penalties of at least 0, got {values!r}")
    return grid


def _heights(values: Any) -> tuple[int, ...]:
    heights = tuple(sorted({_positive(v, "table4.heights") for v in values}))
    if not heights:
        raise ValueError("table4.heights must list at least one height")
    return heights


def _devices(name: str, quick: bool) -> tuple[str, str]:
    """(where the supervised parts train, where the bandit stream trains) for ``train_device``."""
    cuda = torch.cuda.is_available()
    if name not in ("auto", "cpu", "cuda"):
        raise ValueError(f"train_device must be auto, cpu or cuda, got {name!r}")
    if name == "cuda" and not cuda:
        raise ValueError("train_device is cuda, but torch sees no GPU")
    if name == "auto":
        return ("cuda" if cuda and not quick else "cpu"), "cpu"
    return name, name


def settings(config: dict[str, Any] | None = None, *, quick: bool = False) -> dict[str, Any]:
    """What the parts read, from ``config`` (default: ``dgt.toml``), checked. ``quick`` keeps the
    parts, data sets, λ1 grid and jobs and replaces the sizes: one split and seed, 2 epochs, no
    grid, 2-tree forests of height 4, one bandit pass, everything on the CPU."""
    config = read_config() if config is None else config
    cpus = os.cpu_count() or 1
    device, device_bandit = _devices(str(config["train_device"]).lower(), quick)
    jobs = config["jobs"]
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 0:
        raise ValueError(f"jobs must be 0 (one per CPU) or a positive integer, got {jobs!r}")
    splits = {part: _positive(config[part]["splits"], f"{part}.splits") for part in SECTIONS}
    for part in ("table1", "table4", "table6"):
        splits[part] = min(SHIPPED_SPLITS, splits[part])
    s = {
        "parts": _known(config["parts"], PARTS, "parts"),
        "datasets": _known(config["datasets"], REGRESSION + CLASSIFICATION, "datasets"),
        "seeds": _positive(config["seeds"], "seeds"),
        "splits": splits,
        "epochs": _positive(config["epochs"], "epochs"),
        "tune": {part: bool(config[part]["tune"]) for part in SECTIONS},
        "trees": _positive(config["table4"]["trees"], "table4.trees"),
        "forest_depths": _heights(config["table4"]["heights"]),
        "l1_grid": _grid(config["l1_grid"]),
        "bandit_passes": _positive(config["table6"]["passes"], "table6.passes"),
        "device": device, "device_bandit": device_bandit,
        "cpus": cpus, "one_thread_workers": cpus > 2,
        "jobs": jobs or (cpus if cpus > 2 else 1),
        "speed_epochs": SPEED_EPOCHS["quick" if quick else "full"],
        "reuse_tuning": bool(config["reuse_tuning"]) and not quick,
        "quick": quick,
    }
    if "table4" in s["parts"] and len(s["forest_depths"]) > 1 and not s["tune"]["table4"] and not quick:
        raise ValueError(heights_refused(s["forest_depths"]))
    if quick:
        s.update(seeds=1, splits=dict.fromkeys(SECTIONS, 1), epochs=QUICK_EPOCHS, tune=dict.fromkeys(SECTIONS, False),
                 trees=2, forest_depths=(4,), bandit_passes=1)
    return s


def heights_refused(depths: tuple[int, ...]) -> str:
    """Why several Table 4 heights without the grid are refused."""
    return (f"table4.heights lists the heights {list(depths)}, but only table4.tune (the grid) searches heights; "
            "give one height (--heights 8), or set the grid")


def jobs_for(s: dict[str, Any], device: str) -> int:
    """Worker processes for fits on ``device``: at most 8 share a GPU."""
    return min(s["jobs"], 8) if device == "cuda" else s["jobs"]
