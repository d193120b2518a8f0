"""benchmarks/external/prepare.py (the setup of the authors' code) and the drivers' shared helpers,
without the network or the authors' code: a local git repository stands in for a mirror, and the
steps run here are small commands."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.external import prepare

DRIVERS = Path(prepare.__file__).parent / "drivers"


def _shared():
    spec = importlib.util.spec_from_file_location("drivers_shared", DRIVERS / "shared.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_reference_is_pinned_to_a_full_commit_with_its_patch_on_disk():
    assert {r.key for r in prepare.REFERENCES} == {"dgt", "skinny", "latent"}
    for ref in prepare.REFERENCES:
        assert len(ref.commit) == 40 and int(ref.commit, 16) >= 0
        assert ref.patch is None or (prepare.PATCHES / ref.patch).is_file()
        torch = [p for p in ref.packages if p.startswith("torch")]
        assert torch in ([], [prepare.TORCH]) and prepare.TORCH == "torch==2.13.0"
    assert "tensorflow-cpu==2.15.1" in prepare.BY_KEY["skinny"].packages
    assert prepare.BY_KEY["dgt"].label == "microsoft/DGT f5e91b2"


def test_sources_come_from_github_or_from_a_mirror_folder(tmp_path):
    dgt = prepare.BY_KEY["dgt"]
    assert prepare.source_of(dgt, None) == "https://github.com/microsoft/DGT.git"
    with pytest.raises(FileNotFoundError, match="microsoft/DGT"):
        prepare.source_of(dgt, tmp_path)
    (tmp_path / "microsoft+DGT" / "repo").mkdir(parents=True)
    assert prepare.source_of(dgt, tmp_path) == str(tmp_path / "microsoft+DGT" / "repo")
    (tmp_path / "SkinnyTrees.git").mkdir()
    assert prepare.source_of(prepare.BY_KEY["skinny"], tmp_path) == str(tmp_path / "SkinnyTrees.git")


def test_the_plan_clones_checks_out_patches_and_builds_in_order(tmp_path, capsys):
    steps = prepare.plan(["latent", "dgt"], tmp_path / "home", None, python="py")
    names = [s.name for s in steps]
    assert names[:6] == ["latent: clone", "latent: check out 82aa4bf", "latent: apply latent_torch_load.patch",
                         "latent: environment", "latent: packages", "latent: compile src/qp_fast"]
    assert names.index("dgt: packages") < names.index("dgt: abalone split 0") < names.index("synthetic tables")
    assert names[-1] == "latent: breast_cancer splits"
    packages = next(s for s in steps if s.name == "dgt: packages")
    assert packages.argv[0] == str(tmp_path / "home" / "venv_dgt" / "bin" / "pip") and "torch==2.13.0" in packages.argv
    assert prepare.main(["--ref-home", str(tmp_path / "home"), "--only", "skinny", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "git clone" in out and "tensorflow-cpu==2.15.1" in out and "latent" not in out
    assert not (tmp_path / "home").exists()


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_a_setup_from_a_mirror_checks_out_the_pinned_commit_and_resumes(tmp_path):
    """The clone, check-out and patch steps for real, on a local repository with the file a patch
    changes; a second run skips every step that left its mark."""
    origin = tmp_path / "mirror" / "someone+thing"
    (origin / "src").mkdir(parents=True)
    (origin / "src" / "a.py").write_text("x = 1\n")
    _git("init", "-q", cwd=origin)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "one", "--allow-empty", cwd=origin)
    _git("add", ".", cwd=origin)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "two", cwd=origin)
    pinned = subprocess.run(["git", "rev-parse", "HEAD"], cwd=origin, capture_output=True, text=True).stdout.strip()
    (origin / "src" / "a.py").write_text("x = 2\n")  # a later, unpinned change
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "three", cwd=origin)
    patch = tmp_path / "p.patch"
    patch.write_text("why\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 3\n")
    ref = prepare.Reference("thing", "someone/thing", pinned, None, ())
    home = tmp_path / "home"
    steps = prepare.reference_steps(ref, home, tmp_path / "mirror", sys.executable)[:2]
    steps.append(prepare.Step("apply", ("git", "-C", str(home / "thing"), "apply", str(patch)),
                              home / "thing" / ".done-patch", mark=True))
    assert prepare.run(steps, home) == 0
    assert (home / "thing" / "src" / "a.py").read_text() == "x = 3\n"  # the pinned commit, patched
    assert (home / "data").is_dir() and (home / "results").is_dir() and (home / "tmp").is_dir()
    assert prepare.run(steps, home) == 0  # applying the patch again would fail: it is skipped
    failing = prepare.Step("fails", (sys.executable, "-c", "raise SystemExit(4)"), home / "never", mark=True)
    assert prepare.run([failing], home) == 4 and not (home / "never").exists()


def test_epoch_times_leave_out_the_first_epoch():
    shared = _shared()
    marks = [(0.0, 0.0), (5.0, 3.0), (6.0, 3.5), (7.5, 4.0), (8.0, 5.0)]
    t = shared.epoch_times(marks)
    assert t["epoch_cpu_s"] == [3.0, 0.5, 0.5, 1.0] and t["median_epoch_cpu_s"] == 0.5
    assert t["epoch_s"] == [5.0, 1.0, 1.5, 0.5] and t["median_epoch_s"] == 1.0
    with pytest.raises(ValueError, match="two epochs"):
        shared.epoch_times(marks[:2])


def test_both_sides_of_a_pair_share_their_defaults():
    shared = _shared()
    a = shared.skinny_options().parse_args(["--out", "x.json"])
    assert (a.trees, a.depth, a.batch, a.lam0, a.data) == (20, 4, 16, 100.0, "breast_cancer")
    assert shared.latent_options(seed=7).parse_args(["--split_file", "f", "--out", "o"]).seed == 7
    assert shared.dgt_options().parse_args(["--out", "o", "--l1", "1e-4"]).l1 == 1e-4
