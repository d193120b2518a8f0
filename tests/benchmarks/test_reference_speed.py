"""benchmarks/reference_speed.py reads the side-by-side harness's per-run JSONs and writes the table
(no timing is asserted: the figures here are made up)."""

import json
import os

from benchmarks import reference_speed as rs


def _run(path, *, cpu, wall, epochs=5, **extra):
    per_epoch = [cpu * 3] + [cpu] * (epochs - 1)  # epoch 1 is slower (warm-up) and must not count
    path.write_text(json.dumps({"median_epoch_cpu_s": cpu, "median_epoch_s": wall, "epoch_cpu_s": per_epoch,
                                "torch_threads": 1, **extra}))


def _fake_results(folder):
    folder.mkdir()
    # DGT abalone: three splits, RMSE per split
    for i, (ref, ours, r_rmse, o_rmse) in enumerate([(0.30, 0.03, 2.1, 2.2), (0.32, 0.04, 2.2, 2.1),
                                                      (0.34, 0.02, 2.3, 2.3)]):
        _run(folder / f"dgt_abalone_e5_s{i}_ref.json", cpu=ref, wall=3 * ref, test_rmse=r_rmse)
        _run(folder / f"dgt_abalone_e5_s{i}_ours.json", cpu=ours, wall=3 * ours, test_rmse=o_rmse)
    # an older latent tag and a newer one: the newer is read
    _run(folder / "latent_old_r1_ref.json", cpu=1.0, wall=1.0, test_accuracy=0.5)
    _run(folder / "latent_old_r1_ours.json", cpu=1.0, wall=1.0, test_accuracy=0.5)
    os.utime(folder / "latent_old_r1_ref.json", (1_000_000, 1_000_000))
    os.utime(folder / "latent_old_r1_ours.json", (1_000_000, 1_000_000))
    _run(folder / "latent_e30_r1_ref.json", cpu=0.04, wall=0.1, test_accuracy=0.97)
    _run(folder / "latent_e30_r1_ours.json", cpu=0.004, wall=0.01, test_accuracy=0.96)
    # a round with only one side is left out
    _run(folder / "latent_e30_r2_ref.json", cpu=9.0, wall=9.0, test_accuracy=0.1)
    # Skinny: AUC plus the features kept
    _run(folder / "skinny_toy_e30_r1_ref.json", cpu=0.1, wall=0.2, test_auc=0.998, features_kept=30,
         test_accuracy=0.98)
    _run(folder / "skinny_toy_e30_r1_ours.json", cpu=0.01, wall=0.02, test_auc=0.997, features_kept=29,
         test_accuracy=0.97)
    (folder / "unrelated.json").write_text("{}")


def test_rows_hold_medians_ratios_and_quality_with_spreads(tmp_path):
    folder = tmp_path / "results"
    _fake_results(folder)
    results = rs.collect(folder)
    rows = {r["key"]: r for r in results["rows"]}
    assert set(rows) == {"dgt_abalone", "latent", "skinny_toy"}
    assert set(results["missing"]) == {"dgt_big", "skinny_big"}

    dgt = rows["dgt_abalone"]
    assert dgt["reference_s"] == 0.32 and dgt["ours_s"] == 0.03  # medians over the three rounds
    assert abs(dgt["ratio"] - 0.32 / 0.03) < 1e-12
    assert dgt["rounds"] == 3 and dgt["epochs"] == 5 and dgt["threads"] == 1
    assert dgt["reference"] == "microsoft/DGT f5e91b2"
    q = dgt["quality"]
    assert q["metric"] == "test RMSE" and abs(q["reference"] - 2.2) < 1e-12 and q["reference_std"] > 0
    assert q["ours_rounds"] == [2.2, 2.1, 2.3] and "±" in q["text"]
    assert q["within_spread"] is True and q["no_worse"] is True and abs(q["difference"]) < 1e-12
    assert rows["latent"]["quality"]["within_spread"] is None  # one round: no spread to judge by

    lat = rows["latent"]
    assert lat["tag"] == "latent_e30" and lat["rounds"] == 1
    assert lat["reference_s"] == 0.04 and lat["quality"]["ours"] == 0.96
    assert rows["skinny_toy"]["quality"]["ours_features_kept"] == [29]
    for row in results["rows"]:
        for key in ("name", "reference_s", "ours_s", "ratio", "quality", "reference", "protocol"):
            assert key in row
    assert results["machine"]["cpu_model"] and results["machine"]["threads"] == 1 and results["date"]


def test_quality_judgement_knows_which_direction_is_better(tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    for i, (r_rmse, o_rmse, r_auc, o_auc) in enumerate([(2.0, 1.0, 0.90, 0.80), (2.1, 1.1, 0.91, 0.81)]):
        _run(folder / f"dgt_big_e3_r{i + 1}_ref.json", cpu=1.0, wall=1.0, test_rmse=r_rmse)
        _run(folder / f"dgt_big_e3_r{i + 1}_ours.json", cpu=0.1, wall=0.1, test_rmse=o_rmse)
        _run(folder / f"skinny_big_e3_r{i + 1}_ref.json", cpu=1.0, wall=1.0, test_auc=r_auc)
        _run(folder / f"skinny_big_e3_r{i + 1}_ours.json", cpu=0.1, wall=0.1, test_auc=o_auc)
    rows = {r["key"]: r for r in rs.collect(folder)["rows"]}
    dgt, skinny = rows["dgt_big"]["quality"], rows["skinny_big"]["quality"]
    assert dgt["within_spread"] is False and dgt["no_worse"] is True  # a lower RMSE is better
    assert skinny["within_spread"] is False and skinny["no_worse"] is False  # a lower AUC is worse
    assert "worse beyond the spread" in rs.table({"rows": [rows["skinny_big"]]})


def test_main_writes_results_rows_and_a_pinned_tag_wins(tmp_path, capsys):
    folder = tmp_path / "results"
    _fake_results(folder)
    out = tmp_path / "reference_speed.json"
    assert rs.main(["--results", str(folder), "--out", str(out), "--tag", "latent=latent_old",
                    "--extra", "latent=latent_e30"]) == 0
    payload = json.loads(out.read_text())
    rows = {r["key"]: r for r in payload["results"]["rows"]}
    assert payload["benchmark"] == "reference_speed" and rows["latent"]["tag"] == "latent_old"
    assert [r["tag"] for r in payload["results"]["extra_rows"]] == ["latent_e30"]
    assert "DGT, abalone" in capsys.readouterr().out


def test_absent_results_folder_is_one_sentence_and_a_nonzero_exit(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("REF_HOME", str(tmp_path / "nowhere"))
    monkeypatch.delenv("REF_RESULTS", raising=False)
    out = tmp_path / "reference_speed.json"
    assert rs.main(["--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert "does not exist" in err and err.count("\n") == 0 and not out.exists()


def test_empty_results_folder_is_refused(tmp_path, capsys):
    (tmp_path / "results").mkdir()
    assert rs.main(["--results", str(tmp_path / "results"), "--out", str(tmp_path / "o.json")]) == 1
    assert "no complete pair" in capsys.readouterr().err


def test_run_plan_interleaves_every_setting_and_writes_where_the_reader_looks(tmp_path, capsys):
    keys = [s.key for s in rs.SETTINGS]
    cmds = rs.plan(keys, dict.fromkeys(keys, 3), dict.fromkeys(keys, 2), "_x", tmp_path, tmp_path / "repo")
    assert len(cmds) == 2 * 2 * len(keys)
    assert [c.setting for c in cmds[:2 * len(keys)]] == [k for k in keys for _ in range(2)]  # round 1 of all first
    for c in cmds:
        name = os.path.basename(c.out)
        m = rs.FILE_RE.match(name)
        assert m and m["side"] == c.side and m["tag"].startswith(rs.BY_KEY[c.setting].prefix)
        assert "--epochs" in c.argv and c.argv[c.argv.index("--epochs") + 1] == "3"
        if c.side == "ours":
            assert dict(c.env)["PYTHONPATH"] == str(tmp_path / "repo")
    first_round = [c for c in cmds if c.setting == "latent" and c.round == 1]
    second_round = [c for c in cmds if c.setting == "latent" and c.round == 2]
    assert [c.side for c in first_round] == ["ref", "ours"] and [c.side for c in second_round] == ["ours", "ref"]
    # the dry run prints one shell line per command and runs nothing
    assert rs.main(["--run", "--dry-run", "--only", "latent", "--epochs", "2", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and "ref_latent.py" in lines[0] and "ours_latent.py" in lines[1]
