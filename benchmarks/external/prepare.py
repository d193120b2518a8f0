"""Set up the authors' code for the side-by-side runs in a scratch folder, ``$REF_HOME``.

``python -m benchmarks.external.prepare`` (default ``REF_HOME=/work/scratch/ref``):

1. clones each reference and checks out its pinned commit (``$REF_HOME/dgt``, ``skinny``,
   ``latent``), from ``https://github.com/<owner>/<name>.git``, or with ``--from-mirror DIR`` from
   local git repositories in DIR (``DIR/<owner>+<name>/repo``, ``DIR/<owner>+<name>``,
   ``DIR/<name>`` or ``DIR/<name>.git``), then applies its patch from ``patches/``;
2. builds each reference's virtual environment (``venv_dgt``, ``venv_skinny``, ``venv_latent``)
   with the packages below, and compiles the latent trees' C++ pruning QP in place;
3. writes the data both sides read into ``$REF_HOME/data``: the reference's own abalone splits
   (exported by ``drivers/export_dgt_split.py`` in the DGT environment), the synthetic tables and
   the latent trees' breast_cancer splits (:mod:`benchmarks.external.data`).

Every step leaves a mark (the file it made, or a ``.done-<step>`` file) and is skipped when run
again, so a setup stopped half way resumes. ``--dry-run`` prints the steps as shell lines and
runs nothing; ``--only dgt skinny latent`` picks references.

The authors' code never enters the project, and treeviz never needs it: only
``python -m benchmarks.reference_speed --run`` does.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVERS = HERE / "drivers"
PATCHES = HERE / "patches"
DEFAULT_REF_HOME = "/work/scratch/ref"
#: torch pinned to the CPU build this project uses (another version pulls a multi-GB CUDA build).
TORCH = "torch==2.13.0"


@dataclass(frozen=True)
class Reference:
    """One of the authors' repositories, pinned, with its patch and its environment."""

    key: str  # its folder in REF_HOME, and venv_<key>
    repo: str  # owner/name on GitHub
    commit: str
    patch: str | None
    packages: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.repo} {self.commit[:7]}"


REFERENCES: tuple[Reference, ...] = (
    Reference("dgt", "microsoft/DGT", "f5e91b26c4cb681b0aa6a67d1a604e7c1d15d1ef", "dgt_xcommon_cpu.patch",
              (TORCH, "numpy<2", "pandas<2", "scipy", "scikit-learn", "matplotlib", "requests", "vowpalwabbit")),
    Reference("skinny", "mazumder-lab/SkinnyTrees", "b2c48f9b0de632408408cf6aa3f0bd46ba5a2d51", None,
              ("tensorflow-cpu==2.15.1", "scikit-learn", "pandas")),
    Reference("latent", "vzantedeschi/LatentTrees", "82aa4bf779e73d91a0a65c7d58b9a13de61fa8ce",
              "latent_torch_load.patch",
              (TORCH, "numpy<2", "pandas<2", "scipy", "scikit-learn", "qhoptim", "tensorboardX", "tqdm",
               "category_encoders", "pybind11", "setuptools", "requests")),
)
BY_KEY = {r.key: r for r in REFERENCES}
#: The abalone splits the DGT rows train on (the reference's shuffle seed is split + 1).
ABALONE_SPLITS = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class Step:
    """One command of the setup; skipped when ``done`` exists, which it leaves behind (a marker
    file is written after the command when ``mark`` is set)."""

    name: str
    argv: tuple[str, ...]
    done: Path
    cwd: Path | None = None
    env: dict[str, str] = field(default_factory=dict)
    mark: bool = False

    def shell(self) -> str:
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        line = " ".join(shlex.quote(a) for a in self.argv)
        return f"(cd {shlex.quote(str(self.cwd))} && {env + ' ' if env else ''}{line})" if self.cwd else line


def source_of(ref: Reference, mirror: Path | None) -> str:
    """Where to clone ``ref`` from: GitHub, or its repository under ``mirror``."""
    if mirror is None:
        return f"https://github.com/{ref.repo}.git"
    owner, name = ref.repo.split("/")
    for candidate in (mirror / f"{owner}+{name}" / "repo", mirror / f"{owner}+{name}", mirror / name,
                      mirror / f"{name}.git"):
        if candidate.is_dir():
            return str(candidate)
    raise FileNotFoundError(f"No git repository of {ref.repo} under {mirror} (looked for {owner}+{name}/repo, "
                            f"{owner}+{name}, {name} and {name}.git).")


def reference_steps(ref: Reference, home: Path, mirror: Path | None, python: str) -> list[Step]:
    """Clone, check out, patch, build the environment (and compile, for the latent trees)."""
    tree, venv = home / ref.key, home / f"venv_{ref.key}"
    steps = [Step(f"{ref.key}: clone", ("git", "clone", "--quiet", "--no-checkout", source_of(ref, mirror), str(tree)),
                  tree / ".git"),
             Step(f"{ref.key}: check out {ref.commit[:7]}",
                  ("git", "-C", str(tree), "checkout", "--quiet", "--detach", ref.commit), tree / ".done-checkout",
                  mark=True)]
    if ref.patch:
        steps.append(Step(f"{ref.key}: apply {ref.patch}", ("git", "-C", str(tree), "apply", str(PATCHES / ref.patch)),
                          tree / ".done-patch", mark=True))
    steps += [Step(f"{ref.key}: environment", (python, "-m", "venv", str(venv)), venv / "bin" / "python"),
              Step(f"{ref.key}: packages", (str(venv / "bin" / "pip"), "install", "--quiet", *ref.packages),
                   venv / ".done-packages", mark=True)]
    if ref.key == "latent":  # its pruning QP is C++ (src/qp_fast), built against the environment's torch
        steps.append(Step("latent: compile src/qp_fast", (str(venv / "bin" / "python"), "setup.py", "--quiet",
                                                          "build_ext", "--inplace"),
                          tree / ".done-build", cwd=tree, env={"CXX": "g++"}, mark=True))
    return steps


def data_steps(keys: Sequence[str], home: Path, python: str) -> list[Step]:
    """The data both sides read (each after its reference is set up)."""
    data, steps = home / "data", []
    ours_env = {"PYTHONPATH": str(REPO)}
    if "dgt" in keys:
        for s in ABALONE_SPLITS:
            out = data / f"abalone_split{s}.npz"
            steps.append(Step(f"dgt: abalone split {s}", (str(home / "venv_dgt" / "bin" / "python"),
                                                          str(DRIVERS / "export_dgt_split.py"), "abalone", str(s),
                                                          str(out)), out, cwd=home / "dgt" / "src"))
    if "dgt" in keys or "skinny" in keys:
        steps.append(Step("synthetic tables", (python, "-m", "benchmarks.external.data", "synth", str(home)),
                          data / "skinny_synth100.npz", cwd=REPO, env=ours_env))
    if "latent" in keys:
        steps.append(Step("latent: breast_cancer splits", (python, "-m", "benchmarks.external.data", "latent",
                                                           str(home)), data / "latent_bc_split4.npz", cwd=REPO,
                          env=ours_env))
    return steps


def plan(keys: Sequence[str], home: Path, mirror: Path | None, python: str = sys.executable) -> list[Step]:
    """Every step of the setup of ``keys``, in order."""
    steps = []
    for key in keys:
        steps += reference_steps(BY_KEY[key], home, mirror, python)
    return steps + data_steps(keys, home, python)


def run(steps: Sequence[Step], home: Path) -> int:
    """Run the steps not done yet; stop at the first that fails (its status)."""
    for folder in ("data", "results", "tmp"):
        (home / folder).mkdir(parents=True, exist_ok=True)
    for step in steps:
        if step.done.exists():
            print(f"-- {step.name}: done before", flush=True)
            continue
        print(f"== {step.name}", flush=True)
        done = subprocess.run(step.argv, cwd=step.cwd, env={**os.environ, **step.env})
        if done.returncode:
            print(f"{step.name} failed (status {done.returncode}): {step.shell()}", file=sys.stderr)
            return done.returncode
        if step.mark:
            step.done.write_text("")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.external.prepare",
                                 description="Fetch the authors' code at its pinned commits, build its environments.")
    ap.add_argument("--ref-home", type=Path, default=Path(os.environ.get("REF_HOME", DEFAULT_REF_HOME)),
                    help=f"the scratch folder (default $REF_HOME, else {DEFAULT_REF_HOME})")
    ap.add_argument("--from-mirror", type=Path, metavar="DIR", help="clone from local git repositories in DIR")
    ap.add_argument("--only", nargs="+", choices=list(BY_KEY), help="these references only")
    ap.add_argument("--dry-run", action="store_true", help="print the steps, run nothing")
    a = ap.parse_args(argv)
    home = a.ref_home.resolve()
    try:
        steps = plan(a.only or list(BY_KEY), home, a.from_mirror)
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 1
    if a.dry_run:
        for step in steps:
            print(f"{step.shell()}   # {step.name}")
        return 0
    return run(steps, home)


if __name__ == "__main__":
    raise SystemExit(main())
