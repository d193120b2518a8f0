"""A benchmark's logged parts are keyed by the version of the code they ran: a part logged before
that code changed is computed again, never reused."""

from __future__ import annotations

from pathlib import Path

import pytest
from joblib import delayed

from benchmarks.common import REPO_ROOT, PartLog, code_version, retime, run_keyed, source_files
from benchmarks.paper import laptao, tao_paper


def _square(i: int) -> int:
    return i * i


def _package(root, text="def f():\n    return 1\n"):
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "fit.py").write_text(text)
    (root / "bench.py").write_text("NAME = 'bench'\n")
    return [root / "bench.py", root / "pkg"]


def test_source_files_reads_a_module_a_package_or_a_path():
    assert source_files("benchmarks.common") == [REPO_ROOT / "benchmarks" / "common.py"]
    tao = source_files("models.tao")
    assert REPO_ROOT / "models" / "tao" / "estimators.py" in tao and all(p.suffix == ".py" for p in tao)
    with pytest.raises(ValueError, match="no module or package"):
        source_files("models.no_such_family")


def test_the_version_changes_with_any_source_of_the_code_it_covers(tmp_path):
    code = _package(tmp_path)
    before = code_version(code)
    assert code_version(code) == before and code_version(list(reversed(code))) == before
    assert code_version(code[:1]) != before  # the package is part of it
    (tmp_path / "pkg" / "fit.py").write_text("def f():\n    return 2\n")
    assert code_version(code) != before
    (tmp_path / "pkg" / "fit.py").write_text("def f():\n    return 1\n")
    assert code_version(code) == before
    (tmp_path / "pkg" / "extra.py").write_text("")  # a new module of the package counts too
    assert code_version(code) != before


def test_a_changed_model_invalidates_the_logged_parts(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path / "results"))
    code = _package(tmp_path)
    tasks = [(f"k{i}", delayed(_square)(i)) for i in range(3)]
    log = PartLog("grid", code=code)
    assert run_keyed(tasks, log, n_jobs=1) == {"k0": 0, "k1": 1, "k2": 4}
    assert {r["code"] for r in log.records()} == {log.code} and len(log.records()) == 3
    run_keyed(tasks, PartLog("grid", code=code), n_jobs=1)
    assert len(log.all_records()) == 3  # the same code: nothing ran again

    (tmp_path / "pkg" / "fit.py").write_text("def f():\n    return 2\n")  # the model changes
    changed = PartLog("grid", code=code)
    assert changed.code != log.code and changed.records() == [] and len(changed.all_records()) == 3
    assert changed.times() == {} and changed.seconds(["k0"]) is None
    assert run_keyed(tasks, changed, n_jobs=1) == {"k0": 0, "k1": 1, "k2": 4}
    assert len(changed.all_records()) == 6 and len(changed.records()) == 3  # every part ran again


def test_retime_carries_an_older_versions_part_over_only_when_the_code_reproduces_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path / "results"))
    code = _package(tmp_path)
    old = PartLog("old", code=code)
    old.add([{"key": "k1", "result": 1}, {"key": "k2", "result": 99}])  # k2: not what the code gives now
    (tmp_path / "pkg" / "fit.py").write_text("def f():\n    return 2\n")
    new = PartLog("old", code=code)
    got = retime([("k1", delayed(_square)(1)), ("k2", delayed(_square)(2))], new, n_jobs=1)
    assert got["retimed"] == 1 and got["differ"] == ["k2"]
    assert [(r["key"], r["result"]) for r in new.records()] == [("k1", 1)]


def test_the_benchmarks_logs_cover_their_module_and_the_models_they_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(tmp_path))
    for module in (tao_paper, laptao):
        covered = {f for m in module.CODE for f in source_files(m)}
        assert source_files(Path(module.__file__))[0] in covered
        assert REPO_ROOT / "models" / "tao" / "estimators.py" in covered
    assert REPO_ROOT / "models" / "laptao" / "estimators.py" in {f for m in laptao.CODE for f in source_files(m)}
    assert tao_paper._forest_log("letter", "TAO-l forest", {}).code == code_version(tao_paper.CODE)
