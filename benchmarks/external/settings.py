"""The five side-by-side settings, and the command lines that run one round of each.

A setting names the authors' code (pinned in :mod:`benchmarks.external.prepare`), the data, the
model and its full protocol (epochs per run, rounds). A round runs the reference's driver and
treeviz's on the same rows with the same setting, one thread each: the reference first in odd
rounds, treeviz first in even rounds, and a whole run goes round by round across the settings
(round 1 of every setting, then round 2, ...), so slow drifts of a shared machine's load fall on
both sides alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.external.prepare import BY_KEY as REFERENCES


@dataclass(frozen=True)
class Setting:
    key: str
    name: str
    reference: str  # a key of prepare.REFERENCES
    quality: str  # the test metric's key in the drivers' result files
    quality_name: str
    description: str
    epochs: int  # the full protocol: epochs per run ...
    rounds: int  # ... and rounds

    @property
    def reference_label(self) -> str:
        return REFERENCES[self.reference].label


SETTINGS: tuple[Setting, ...] = (
    Setting("dgt_abalone", "DGT, abalone", "dgt", "test_rmse", "test RMSE",
            "abalone (the reference's own splits: shuffle seed split + 1, 2004 / 502 / 1671 rows), height 6, "
            "L 3 (over_param [[16,16]]), batch 128, RMSprop lr 1e-2, l1 1e-5, grad clip 0.01, best validation "
            "epoch kept; round r trains on split (r - 1) mod 5", 200, 5),
    Setting("dgt_big", "DGT, 20 000 x 50", "dgt", "test_rmse", "test RMSE",
            "synthetic regression, 20 000 training rows x 50 features (+ 5 000 / 5 000), height 8, L 3 "
            "(over_param [[6,6]]), batch 512, l1 1e-5; round r uses seed r on both sides (the rows stay the same)",
            5, 3),
    Setting("skinny_toy", "Skinny Trees, the authors' toy", "skinny", "test_auc", "test AUC",
            "the authors' ToyExample notebook: breast_cancer (their split, seed 8), 20 trees, depth 4, batch 16, "
            "lambda0 100, l2 0.1, temperature 0.01, SGD lr 0.1, sigmoid routing; round r uses seed r - 1 on both sides",
            30, 3),
    Setting("skinny_big", "Skinny Trees, 20 000 x 100", "skinny", "test_auc", "test AUC",
            "synthetic binary classification, 20 000 training rows x 100 features (+ 5 000 / 5 000), 50 trees, "
            "depth 5, batch 256, the toy's other settings; round r uses seed r - 1 on both sides", 4, 3),
    Setting("latent", "Latent trees, training epoch", "latent", "test_accuracy", "test accuracy",
            "breast_cancer with the latent_train benchmark's split (standard scaling, 20 % test, 10 % validation, "
            "PrepConfig seed = split; 398 / 57 / 114 rows), depth 4, batch 64, lambda 1, QHAdam lr 1e-2, linear "
            "split and head, fixed epochs (no early stop), best validation epoch kept; round r trains on split "
            "(r - 1) mod 5", 30, 5),
)
BY_KEY = {s.key: s for s in SETTINGS}


def protocol(setting: Setting, epochs: int, rounds: int) -> tuple[str, str]:
    """("full" | "reduced", what was cut) for a run of ``epochs`` x ``rounds`` of ``setting``."""
    cuts = []
    if epochs != setting.epochs:
        cuts.append(f"{epochs} epochs per run instead of {setting.epochs}")
    if rounds != setting.rounds:
        cuts.append(f"{rounds} rounds instead of {setting.rounds}")
    if not cuts:
        return "full", f"the full protocol: {setting.rounds} rounds of {setting.epochs} epochs"
    return "reduced", "reduced: " + ", ".join(cuts)


@dataclass(frozen=True)
class Command:
    setting: str
    round: int
    side: str  # "ref" or "ours"
    argv: tuple[str, ...]
    cwd: str
    env: tuple[tuple[str, str], ...]  # set on top of the runner's environment
    out: str  # the driver's result file


def result_name(key: str, r: int, side: str) -> str:
    """The file a driver writes in the run's folder: ``<setting>_r<round>_<ref|ours>.json``."""
    return f"{key}_r{r}_{side}.json"


def commands(key: str, epochs: int, r: int, run_dir: Path, home: Path, source: Path, python: str) -> list[Command]:
    """The reference's and treeviz's command for round ``r`` of a setting, in the round's order.

    ``home`` is REF_HOME (the references, their environments, the data), ``source`` the treeviz
    source measured (its drivers run too), ``python`` the interpreter of treeviz's side."""
    if key not in BY_KEY:
        raise ValueError(f"Unknown setting {key!r}; use one of {', '.join(BY_KEY)}.")
    drivers, data, E = source / "benchmarks" / "external" / "drivers", home / "data", str(epochs)
    ref_python = str(home / f"venv_{BY_KEY[key].reference}" / "bin" / "python")
    ref_cwd, ref_args, ours_args = str(home), [], []
    if key.startswith("dgt"):
        abalone = key == "dgt_abalone"
        split = (r - 1) % 5 if abalone else 0
        seed = "1" if abalone else str(r)  # one split for the big table: seeds give its quality a spread
        common = ["--height", "6" if abalone else "8", "--epochs", E, "--batch", "128" if abalone else "512",
                  "--l1", "1e-5", "--seed", seed]
        ref_cwd = str(home / "dgt" / "src")  # the reference reads its data with relative paths
        ref_args = [str(drivers / "ref_dgt.py"), "--dataset", "abalone" if abalone else "synth50", "--split",
                    str(split), "--over_param", "[[16,16]]" if abalone else "[[6,6]]", *common]
        split_file = data / (f"abalone_split{split}.npz" if abalone else "dgt_synth50.npz")
        ours_args = [str(drivers / "ours_dgt.py"), "--split_file", str(split_file), "--n_layers", "3", *common]
    elif key.startswith("skinny"):
        common = ["--epochs", E, "--seed", str(r - 1)]
        if key == "skinny_big":
            common += ["--data", str(data / "skinny_synth100.npz"), "--trees", "50", "--depth", "5", "--batch", "256"]
        ref_args, ours_args = [str(drivers / "ref_skinny.py"), *common], [str(drivers / "ours_skinny.py"), *common]
    else:
        split = (r - 1) % 5
        common = ["--split_file", str(data / f"latent_bc_split{split}.npz"), "--epochs", E]
        ref_args = [str(drivers / "ref_latent.py"), *common]
        ours_args = [str(drivers / "ours_latent.py"), *common, "--seed", str(split)]
    out = {side: str(run_dir / result_name(key, r, side)) for side in ("ref", "ours")}
    ref = Command(key, r, "ref", (ref_python, "-W", "ignore", *ref_args, "--out", out["ref"]), ref_cwd,
                  (("REF_HOME", str(home)),), out["ref"])
    ours = Command(key, r, "ours", (python, "-W", "ignore", *ours_args, "--out", out["ours"]), str(home),
                   (("PYTHONPATH", str(source)),), out["ours"])
    return [ref, ours] if r % 2 else [ours, ref]


def plan(keys: Sequence[str], epochs: dict[str, int], rounds: dict[str, int], run_dir: Path, home: Path,
         source: Path, python: str) -> list[Command]:
    """Round by round across the settings: round 1 of every setting, then round 2, ..."""
    out = []
    for r in range(1, max(rounds[k] for k in keys) + 1):
        for key in keys:
            if r <= rounds[key]:
                out += commands(key, epochs[key], r, run_dir, home, source, python)
    return out
