"""benchmarks/reference_speed.py and benchmarks/external/: the plan of a side-by-side run, running
it and recording failures, the table of one run built from its own folder only, the run-id
selection and the full / reduced / skipped labels. The authors' code is not needed: the commands
run here are small Python one-liners standing in for the drivers, and no timing is asserted (the
figures are made up)."""

import json
import sys
from pathlib import Path

import pytest

from benchmarks import reference_speed as rs
from benchmarks.common import STAMP_KEYS, row_problems
from benchmarks.external import runs, settings
from benchmarks.external.settings import BY_KEY, SETTINGS, Command, result_name
from benchmarks.external.table import build_row, collect, quality, table

KEYS = [s.key for s in SETTINGS]


def _result(cpu, wall, quality_key, quality, epochs=5, **extra):
    per_epoch = [cpu * 3] + [cpu] * (epochs - 1)  # epoch 1 is slower (warm-up) and must not count
    return {"median_epoch_cpu_s": cpu, "median_epoch_s": wall, "epoch_cpu_s": per_epoch, "torch_threads": 1,
            quality_key: quality, **extra}


def _fake_run(home, run_id, plan, files, failures=()):
    """A run folder as runs.execute leaves it: the record and the drivers' result files."""
    run_dir = home / "results" / run_id
    run_dir.mkdir(parents=True)
    record = runs.new_record(run_id, list(plan), {k: e for k, (e, _) in plan.items()},
                             {k: r for k, (_, r) in plan.items()}, commit="c0ffee" * 6 + "abcd", source=Path("/src"))
    record["failures"] = list(failures)
    runs.write_record(run_dir, record)
    for (key, r, side), content in files.items():
        (run_dir / result_name(key, r, side)).write_text(json.dumps(content))
    return run_dir


def _abalone_files(scale=1.0):
    files = {}
    for r, (ref, ours, r_rmse, o_rmse) in enumerate([(0.30, 0.03, 2.1, 2.2), (0.32, 0.04, 2.2, 2.1),
                                                      (0.34, 0.02, 2.3, 2.3)], start=1):
        files["dgt_abalone", r, "ref"] = _result(ref * scale, 3 * ref, "test_rmse", r_rmse)
        files["dgt_abalone", r, "ours"] = _result(ours * scale, 3 * ours, "test_rmse", o_rmse)
    return files


def test_protocol_is_full_only_at_the_settings_own_epochs_and_rounds():
    s = BY_KEY["dgt_abalone"]
    assert settings.protocol(s, s.epochs, s.rounds)[0] == "full"
    label, note = settings.protocol(s, 20, s.rounds)
    assert label == "reduced" and "20 epochs per run instead of 200" in note
    label, note = settings.protocol(s, s.epochs, 2)
    assert label == "reduced" and "2 rounds instead of 5" in note and "epochs" not in note


def test_plan_interleaves_every_setting_and_each_side_writes_into_the_run_folder(tmp_path):
    run_dir = tmp_path / "home" / "results" / "R"
    cmds = settings.plan(KEYS, dict.fromkeys(KEYS, 3), dict.fromkeys(KEYS, 2), run_dir, tmp_path / "home",
                         tmp_path / "src", "/usr/bin/python3")
    assert len(cmds) == 2 * 2 * len(KEYS)
    assert [c.setting for c in cmds[:2 * len(KEYS)]] == [k for k in KEYS for _ in range(2)]  # round 1 of all first
    for c in cmds:
        assert Path(c.out).parent == run_dir and Path(c.out).name == result_name(c.setting, c.round, c.side)
        assert c.argv[c.argv.index("--out") + 1] == c.out
        assert c.argv[c.argv.index("--epochs") + 1] == "3"
        driver = Path(next(a for a in c.argv if a.endswith(".py")))
        assert driver.parent == tmp_path / "src" / "benchmarks" / "external" / "drivers"
        assert driver.name.startswith(c.side)
        assert (Path(rs.REPO) / "benchmarks" / "external" / "drivers" / driver.name).is_file()
        if c.side == "ours":
            assert dict(c.env)["PYTHONPATH"] == str(tmp_path / "src") and c.argv[0] == "/usr/bin/python3"
        else:
            assert "PYTHONPATH" not in dict(c.env)
            assert c.argv[0] == str(tmp_path / "home" / f"venv_{BY_KEY[c.setting].reference}" / "bin" / "python")
    latent = [c.side for c in cmds if c.setting == "latent"]
    assert latent == ["ref", "ours", "ours", "ref"]  # the reference first in odd rounds only
    splits = [c.argv[c.argv.index("--split") + 1] for c in cmds if c.setting == "dgt_abalone" and c.side == "ref"]
    assert splits == ["0", "1"]


def test_dry_run_prints_one_shell_line_per_command_and_makes_nothing(tmp_path, capsys):
    home = tmp_path / "ref"
    assert rs.main(["--run", "--dry-run", "--ref-home", str(home), "--only", "latent", "skinny_toy",
                    "--epochs", "2", "--rounds", "latent=2", "--rounds", "skinny_toy=1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 * 2 + 2 * 1
    assert "ref_latent.py" in lines[0] and "ours_latent.py" in lines[1]
    assert "--epochs 2" in lines[0] and "ours_latent.py" in lines[4] and "ref_latent.py" in lines[5]
    assert not home.exists()


def test_too_few_epochs_are_refused(tmp_path):
    with pytest.raises(SystemExit, match="at least 2 epochs"):
        rs.main(["--run", "--dry-run", "--ref-home", str(tmp_path), "--epochs", "1"])
    with pytest.raises(SystemExit, match="Unknown setting"):
        rs.main(["--run", "--dry-run", "--ref-home", str(tmp_path), "--epochs", "nope=3"])


def test_a_row_holds_medians_ratios_quality_and_the_runs_stamp(tmp_path):
    files = _abalone_files()
    files["skinny_toy", 1, "ref"] = _result(0.1, 0.2, "test_auc", 0.998, features_kept=30, test_accuracy=0.98)
    files["skinny_toy", 1, "ours"] = _result(0.01, 0.02, "test_auc", 0.997, features_kept=29, test_accuracy=0.97)
    files["latent", 1, "ref"] = _result(9.0, 9.0, "test_accuracy", 0.1)  # treeviz's side of this round failed
    failure = {"setting": "latent", "round": 1, "side": "ours", "status": 1, "tail": "Traceback\nImportError: x"}
    run_dir = _fake_run(tmp_path, "20260101T000000Z-aaaaaa",
                        {"dgt_abalone": (200, 5), "skinny_toy": (30, 1), "latent": (30, 5)}, files, [failure])
    results = collect(run_dir)
    rows = {r["key"]: r for r in results["rows"]}
    assert list(rows) == ["dgt_abalone", "skinny_toy", "latent"]  # the table's order, only what the run planned

    dgt = rows["dgt_abalone"]
    assert dgt["reference_s"] == 0.32 and dgt["ours_s"] == 0.03  # medians over the three rounds
    assert abs(dgt["ratio"] - 0.32 / 0.03) < 1e-12 and dgt["rounds"] == 3 and dgt["epochs"] == 200
    assert dgt["threads"] == 1 and dgt["reference"] == "microsoft/DGT f5e91b2"
    # 3 of 5 rounds finished: reduced, whatever the epochs
    assert dgt["protocol"] == "reduced" and "3 of 5 rounds finished" in dgt["protocol_note"]
    q = dgt["quality"]
    assert q["metric"] == "test RMSE" and abs(q["reference"] - 2.2) < 1e-12 and q["reference_std"] > 0
    assert q["ours_rounds"] == [2.2, 2.1, 2.3] and q["within_spread"] is True and q["no_worse"] is True

    toy = rows["skinny_toy"]
    assert toy["protocol"] == "reduced" and "1 rounds instead of 3" in toy["protocol_note"]
    assert toy["quality"]["within_spread"] is None and toy["quality"]["ours_features_kept"] == [29]

    latent = rows["latent"]
    assert latent["protocol"] == "skipped" and "ImportError: x" in latent["protocol_note"]
    assert "reference_s" not in latent
    for row in rows.values():
        assert row["run_id"] == "20260101T000000Z-aaaaaa" and row["commit"] == "c0ffee" * 6 + "abcd"
        assert row_problems(row) == [] and all(row[k] for k in STAMP_KEYS)
    text = table(results["rows"])
    assert "**10.67×**" in text and "skipped: no round finished on both sides" in text


def test_full_protocol_row_is_labelled_full(tmp_path):
    files = {("dgt_big", r, side): _result(1.0 if side == "ref" else 0.1, 1.0, "test_rmse", 4.0 + r)
             for r in (1, 2, 3) for side in ("ref", "ours")}
    run_dir = _fake_run(tmp_path, "20260101T000000Z-bbbbbb", {"dgt_big": (5, 3)}, files)
    row = build_row(BY_KEY["dgt_big"], run_dir, runs.read_record(run_dir))
    assert row["protocol"] == "full" and row["protocol_note"].startswith("the full protocol")


def test_quality_judgement_knows_which_direction_is_better(tmp_path):
    files = {}
    for r, (r_rmse, o_rmse, r_auc, o_auc) in enumerate([(2.0, 1.0, 0.90, 0.80), (2.1, 1.1, 0.91, 0.81)], start=1):
        files["dgt_big", r, "ref"] = _result(1.0, 1.0, "test_rmse", r_rmse)
        files["dgt_big", r, "ours"] = _result(0.1, 0.1, "test_rmse", o_rmse)
        files["skinny_big", r, "ref"] = _result(1.0, 1.0, "test_auc", r_auc)
        files["skinny_big", r, "ours"] = _result(0.1, 0.1, "test_auc", o_auc)
    run_dir = _fake_run(tmp_path, "20260101T000000Z-cccccc", {"dgt_big": (3, 2), "skinny_big": (3, 2)}, files)
    rows = {r["key"]: r for r in collect(run_dir)["rows"]}
    dgt, skinny = rows["dgt_big"]["quality"], rows["skinny_big"]["quality"]
    assert dgt["within_spread"] is False and dgt["no_worse"] is True  # a lower RMSE is better
    assert skinny["within_spread"] is False and skinny["no_worse"] is False  # a lower AUC is worse
    assert "worse beyond the spread" in table([rows["skinny_big"]])


def test_run_id_picks_that_run_alone_and_the_printed_table_is_the_file(tmp_path, monkeypatch, capsys):
    home, out = tmp_path / "ref", tmp_path / "out"
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(out))
    _fake_run(home, "20260101T000000Z-aaaaaa", {"dgt_abalone": (200, 5)}, _abalone_files())
    _fake_run(home, "20260102T000000Z-bbbbbb", {"dgt_abalone": (200, 5), "dgt_big": (5, 3)},
              _abalone_files(scale=10.0))  # newer, other numbers, and a setting with no files
    assert runs.run_ids(home) == ["20260101T000000Z-aaaaaa", "20260102T000000Z-bbbbbb"]

    assert rs.main(["--ref-home", str(home), "--run-id", "20260101T000000Z-aaaaaa"]) == 0
    printed = capsys.readouterr().out
    rows = json.loads((out / "reference_speed.json").read_text())["results"]["rows"]
    assert [r["run_id"] for r in rows] == ["20260101T000000Z-aaaaaa"]  # the older run: named, not the newest
    assert rows[0]["reference_s"] == 0.32 and rows[0]["command"] and rows[0]["commit"] == "c0ffee" * 6 + "abcd"
    assert printed.startswith(table(rows) + "\n")

    assert rs.main(["--ref-home", str(home), "--run-id", "20260102T000000Z-bbbbbb"]) == 0
    rows = json.loads((out / "reference_speed.json").read_text())["results"]["rows"]
    assert [(r["key"], r["protocol"]) for r in rows] == [("dgt_abalone", "reduced"), ("dgt_big", "skipped")]
    assert abs(rows[0]["reference_s"] - 3.2) < 1e-12
    assert capsys.readouterr().out.startswith(table(rows) + "\n")


def test_without_a_run_id_it_lists_the_runs_and_fails(tmp_path, capsys):
    home = tmp_path / "ref"
    assert rs.main(["--ref-home", str(home)]) == 1
    assert "holds no run" in capsys.readouterr().err
    _fake_run(home, "20260101T000000Z-aaaaaa", {"dgt_abalone": (200, 5)}, {})
    assert rs.main(["--ref-home", str(home)]) == 1
    assert "20260101T000000Z-aaaaaa" in capsys.readouterr().err
    assert rs.main(["--ref-home", str(home), "--run-id", "20260101T000000Z-ffffff"]) == 1
    assert "No run" in capsys.readouterr().err


def _stand_in(c: Command, ok: bool = True) -> Command:
    """A command that writes a driver's result file (or fails), in place of the real driver."""
    content = _result(0.5 if c.side == "ref" else 0.1, 0.5, BY_KEY[c.setting].quality, 0.9)
    code = (f"import json,sys; json.dump({content!r}, open({c.out!r}, 'w')); print(json.dumps({{'impl': {c.side!r}}}))"
            if ok else "import sys; print('boom', file=sys.stderr); sys.exit(3)")
    return Command(c.setting, c.round, c.side, (sys.executable, "-c", code), c.cwd, c.env, c.out)


def test_run_executes_the_plan_records_failures_and_writes_only_this_run(tmp_path, monkeypatch, capsys):
    home, out = tmp_path / "ref", tmp_path / "out"
    for folder in ("data", "venv_dgt", "venv_latent", "dgt/src"):
        (home / folder).mkdir(parents=True)
    monkeypatch.setenv("TREEVIZ_BENCH_RESULTS", str(out))
    _fake_run(home, "20260101T000000Z-aaaaaa", {"dgt_abalone": (200, 5)}, _abalone_files())  # an earlier run
    real_plan = rs.plan

    def stand_in_plan(keys, epochs, rounds, run_dir, ref_home, source, python):
        assert source == rs.REPO and ref_home == home.resolve()
        # latent's treeviz side fails in round 2: that round is left out, the row says so
        return [_stand_in(c, ok=not (c.setting == "latent" and c.side == "ours" and c.round == 2))
                for c in real_plan(keys, epochs, rounds, run_dir, ref_home, source, python)]

    monkeypatch.setattr(rs, "plan", stand_in_plan)
    monkeypatch.setattr(runs, "preflight", lambda keys, source, python: None)  # tested on its own below
    status = rs.main(["--run", "--ref-home", str(home), "--only", "dgt_abalone", "latent", "--epochs", "4",
                      "--rounds", "2"])
    assert status == 1  # a command failed
    captured = capsys.readouterr()
    assert "boom" in captured.err
    payload = json.loads((out / "reference_speed.json").read_text())
    rows = payload["results"]["rows"]
    new_id = payload["results"]["run_id"]
    assert new_id != "20260101T000000Z-aaaaaa" and {r["run_id"] for r in rows} == {new_id}
    by_key = {r["key"]: r for r in rows}
    assert set(by_key) == {"dgt_abalone", "latent"}
    assert by_key["dgt_abalone"]["ratio"] == 5.0 and by_key["dgt_abalone"]["rounds"] == 2
    assert by_key["dgt_abalone"]["protocol"] == "reduced" and "4 epochs per run instead of 200" in \
        by_key["dgt_abalone"]["protocol_note"]
    assert by_key["latent"]["rounds"] == 1 and "1 of 2 rounds finished" in by_key["latent"]["protocol_note"]
    record = runs.read_record(home.resolve() / "results" / new_id)
    assert record["finished"] and [(f["setting"], f["round"], f["side"]) for f in record["failures"]] == \
        [("latent", 2, "ours")]
    assert not (home.resolve() / "results" / new_id / result_name("latent", 2, "ours")).exists()
    assert table(rows) in captured.out  # the closing table is the rows written


def test_run_refuses_a_ref_home_that_is_not_set_up(tmp_path, capsys):
    assert rs.main(["--run", "--ref-home", str(tmp_path / "nowhere"), "--only", "latent"]) == 1
    assert "benchmarks.external.prepare" in capsys.readouterr().err


def test_a_source_whose_estimators_do_not_import_stops_the_run_before_it_starts(tmp_path):
    assert runs.preflight(["dgt_big", "latent"], rs.REPO, sys.executable) is None
    broken = tmp_path / "src"
    (broken / "models" / "dgt").mkdir(parents=True)
    for folder in ("models", "models/dgt"):
        (broken / folder / "__init__.py").write_text("")
    (broken / "models" / "dgt" / "estimators.py").write_text("from models.dgt.gone import X\n")
    assert "No module named 'models.dgt.gone'" in runs.preflight(["dgt_abalone"], broken, sys.executable)


def test_one_round_has_no_spread_rather_than_a_spread_of_zero():
    setting = BY_KEY["latent"]
    pair = ({setting.quality: 0.91}, {setting.quality: 0.93})
    one = quality(setting, [pair])
    assert one["reference_std"] is None and one["ours_std"] is None and one["within_spread"] is None
    assert "one round" in one["text"] and "±" not in one["text"]
    two = quality(setting, [pair, ({setting.quality: 0.93}, {setting.quality: 0.91})])
    assert two["reference_std"] == pytest.approx(0.01) and two["within_spread"] is True
