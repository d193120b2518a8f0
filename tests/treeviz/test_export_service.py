"""The export service (treeviz.services.views.export): one set of decisions (units, missing values, leaf or
prediction, every term) for the Tree explorer, the command line and the report."""

import math
import re

import numpy as np
import pytest

from models.ground.errors import TreevizError
from models.registry import get_family
from treeviz.cli.main import main as cli_main
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.export import TREE_FORMATS, Format, render, rules_file, tree_exports


def fitted(family, dataset, scaling="standard"):
    prep = prepare(load_dataset(dataset), PrepConfig(scaling=scaling, seed=0))
    est, _ = train_run(family, "classification", dict(get_family(family).test_params), prep)
    return est, prep


@pytest.fixture(scope="module")
def tao():
    return fitted("tao", "breast_cancer")


def predict_function(source):
    namespace = {}
    exec(compile(source, "<generated>", "exec"), namespace)
    return namespace["predict"]


def test_files_hold_every_term_and_the_screen_may_fold(tao):
    est, prep = tao
    [export] = tree_exports(est, prep, run_name="r", run_id="x", dataset_name="breast_cancer")
    root_terms = int(np.count_nonzero(export.tree.weight[0]))
    assert root_terms > 4 and export.units == "input"
    text = render("rules", [export])
    assert "more)" not in text and text.startswith("# Rules\n# Thresholds are in the data's own units.\n")
    first_rule = text.splitlines()[2]
    root_condition = first_rule.split(" AND ")[0]
    assert len(re.findall(r"·", root_condition)) == root_terms  # one product per nonzero weight
    folded = rules_file([export], max_terms=2)
    assert f"({root_terms - 2} more)" in folded


def test_code_reads_raw_rows_fills_missing_values_with_the_training_medians_and_predicts_as_the_model():
    est, prep = fitted("tao", "penguins")  # a table with missing values: the preparation imputes them
    [export] = tree_exports(est, prep)
    predict = predict_function(render("python", [export]))
    names = prep.dataset.feature_names
    raw = prep.dataset.X[prep.test_idx][:40].copy()
    raw[::3, 0] = np.nan  # missing values: the code fills them with the medians, as the app does
    rows = [{n: (None if math.isnan(v) else float(v)) for n, v in zip(names, x, strict=True)} for x in raw]
    assert prep.imputer is not None and np.allclose(export.fill_values, prep.imputer.statistics_)
    expected = est.predict(prep.transform(raw))  # the app's preparation: medians, then scaling
    assert [str(predict(r)) for r in rows] == [str(e) for e in expected]
    assert 'FROM "data"' in render("sql", [export]) and 'FROM "rows"' in render("sql", [export], table="rows")


def test_model_units_when_asked_when_the_data_is_missing_and_when_the_scaling_is_not_affine(tao):
    est, prep = tao
    [asked] = tree_exports(est, prep, original_units=False)
    [no_data] = tree_exports(est, None)
    assert asked.units == no_data.units == "model" and asked.fill_values is None
    assert "as asked" in asked.units_note and "not available" in no_data.units_note
    q_est, q_prep = fitted("cart", "breast_cancer", scaling="quantile")
    [quantile] = tree_exports(q_est, q_prep)
    assert quantile.units == "model" and "not affine" in quantile.units_note
    assert render("rules", [quantile]).splitlines()[1] == f"# {quantile.units_note}"


def test_a_family_with_a_head_exports_leaf_ids_and_a_soft_tree_has_no_code():
    latent, prep = fitted("latent", "iris")
    [export] = tree_exports(latent, prep)
    assert export.output == "leaf" and "each row's leaf" in export.output_note
    skinny, prep = fitted("skinny", "iris")
    exports = tree_exports(skinny, prep, indices=[1])
    assert not exports[0].has_code and exports[0].index == 1 and exports[0].n_trees > 1
    with pytest.raises(TreevizError, match="soft tree"):
        render("python", exports)
    assert "# tree 1 of" in render("rules", exports)


def test_bad_requests_get_sentences(tao):
    est, prep = tao
    with pytest.raises(TreevizError, match="Unknown export format 'png'"):
        render("png", tree_exports(est, prep))
    with pytest.raises(TreevizError, match="choose a tree from 0 to 0"):
        tree_exports(est, prep, indices=[3])
    assert set(TREE_FORMATS) == {"rules", "python", "sql"}
    assert all(f.label and f.suffix and f.mime and f.help for f in TREE_FORMATS.values())


def test_a_new_row_in_the_table_is_a_new_flag_of_the_export_command(tmp_path, monkeypatch, capsys):
    """Adding a format is one function and one row: the command line reads its flags from the table."""
    def leaf_count(exports, **_):
        return f"{exports[0].tree.n_leaves} leaves\n"

    monkeypatch.setitem(TREE_FORMATS, "leaves", Format("leaves", "Leaf count (.txt)", "_leaves.txt", "text/plain",
                                                       "How many leaves the tree has.", leaf_count, noun="leaf count"))
    prep = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, prep, store=RunStore(tmp_path))
    assert cli_main(["export", record.run_id, "--leaves", "--home", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"{record.n_leaves} leaves\n"
    assert cli_main(["export", record.run_id, "--leaves", "--home", str(tmp_path), "-o", str(tmp_path / "n.txt")]) == 0
    assert "wrote the leaf count to" in capsys.readouterr().err
