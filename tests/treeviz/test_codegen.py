"""Rules as code (treeviz.readers.codegen): the generated Python and SQL reproduce each family's predictions
on raw rows in the data's own units, route missing values as the Tree does, quote every name, and
refuse what cannot be exported."""

import math
import sqlite3

import numpy as np
import pytest

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers import codegen
from treeviz.readers.codegen import plan as codegen_plan
from treeviz.readers.codegen import python_source, sql_expression, sql_query
from treeviz.readers.codegen import to_python as codegen_python
from treeviz.services.data import load_dataset, prepare
from treeviz.services.experiments.training import train_run

NAN = np.nan
_PREPARED = {}


def prepared(key):
    if key not in _PREPARED:
        _PREPARED[key] = prepare(load_dataset(key))
    return _PREPARED[key]


def fitted(family, task, params, key):
    prep = prepared(key)
    estimator, _ = train_run(family, task, params, prep)
    return estimator, prep


def raw_tree(tree, prep):
    """The tree in the data's own units (the run's standard scaling folded in)."""
    return tree.in_input_units(*prep.affine_scaling())


def python_function(source, name):
    namespace = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # an empty namespace: no imports needed
    return namespace[name]


def run_python(source, names, X, name="predict"):
    """The generated function on every row, once by name (a dict) and once by position."""
    by_name = python_function(source, name)
    by_position = python_function(source, f"{name}_by_position")
    rows = [{n: (None if math.isnan(v) else float(v)) for n, v in zip(names, x)} for x in X]
    out = [by_name(row) for row in rows]
    assert [by_position(x) for x in X] == out or _same_floats(out, [by_position(x) for x in X])
    return out


def _same_floats(a, b):
    return np.array_equal(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True)


def _ident(name):
    return '"' + name.replace('"', '""') + '"'


def sql_table(names, X):
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE TABLE t ({', '.join(_ident(n) + ' REAL' for n in names)})")
    marks = ", ".join("?" for _ in names)
    con.executemany(f"INSERT INTO t VALUES ({marks})",
                    [[None if math.isnan(v) else float(v) for v in x] for x in X])
    return con


def run_sql(expression, names, X):
    con = sql_table(names, X)
    return [r[0] for r in con.execute(f"SELECT {expression} AS prediction FROM t ORDER BY rowid")]


def run_query(query, names, X):
    con = sql_table(names, X)
    return con.execute(query.replace('FROM "t"', 'FROM "t" ORDER BY rowid')).fetchall()


def check_classes(tree, X_raw, expected):
    """Python and SQL give exactly the expected class names on the raw rows."""
    names = tree.feature_names
    expected = [str(c) for c in expected]
    py = run_python(python_source(tree, units="input"), names, X_raw)
    assert py == expected
    assert run_sql(sql_expression(tree), names, X_raw) == expected


def check_values(tree, X_raw, expected):
    """Python and SQL agree exactly with each other and to 1e-9 relative with ``expected``."""
    expected = np.asarray(expected, dtype=np.float64).reshape(len(X_raw), -1)
    names = tree.feature_names
    py = np.asarray(run_python(python_source(tree, units="input"), names, X_raw), dtype=np.float64)
    py = py.reshape(expected.shape)
    scale = np.abs(expected).max()
    np.testing.assert_allclose(py, expected, rtol=1e-9, atol=1e-12 * scale)
    if tree.n_outputs == 1:
        sql = np.asarray(run_sql(sql_expression(tree), names, X_raw), dtype=np.float64)[:, None]
    else:
        sql = np.asarray(run_query(sql_query(tree, "t"), names, X_raw), dtype=np.float64)
    np.testing.assert_array_equal(sql, py)


def check_leaves(tree, X_raw, expected):
    names = tree.feature_names
    py = run_python(python_source(tree, output="leaf"), names, X_raw, name="leaf")
    np.testing.assert_array_equal(py, expected)
    np.testing.assert_array_equal(run_sql(sql_expression(tree, output="leaf"), names, X_raw), expected)


def header(source):
    """The generated header comment as one line of text."""
    lines = [line[2:] for line in source.splitlines() if line.startswith(("# ", "-- "))]
    return " ".join(line.lstrip("- ") for line in lines)


def raw_test_rows(prep):
    return prep.dataset.X[prep.test_idx]


# ----------------------------------------------------------------------------------------- families
def test_cart_classifier_and_its_leaves_on_raw_rows():
    est, prep = fitted("cart", "classification", {"max_depth": 4}, "iris")
    tree = raw_tree(est.to_tree(), prep)
    X = raw_test_rows(prep)
    check_classes(tree, X, est.predict(prep.X_test))
    check_leaves(tree, X, est.apply(prep.X_test))
    source = python_source(tree, units="input")
    assert "x3 <= " in source and "Inputs are raw values in the data's own units" in header(source)
    # every CART split reads as an exact threshold, not a linear expression
    assert " * x" not in source


def test_cart_regressor():
    est, prep = fitted("cart", "regression", {"max_depth": 5}, "diabetes")
    check_values(raw_tree(est.to_tree(), prep), raw_test_rows(prep), est.predict(prep.X_test))


def test_tao_classifier_with_oblique_splits():
    est, prep = fitted("tao", "classification", {"depth": 2, "max_iter": 3}, "breast_cancer")
    tree = raw_tree(est.to_tree(), prep)
    assert np.count_nonzero(tree.weight[0]) > 1  # oblique
    check_classes(tree, raw_test_rows(prep), est.predict(prep.X_test))
    check_leaves(tree, raw_test_rows(prep), est.apply(prep.X_test))


def test_tao_classifier_with_linear_leaves_takes_the_arg_max():
    est, prep = fitted("tao", "classification", {"depth": 1, "max_iter": 2, "leaf": "linear"}, "wine")
    tree = raw_tree(est.to_tree(), prep)
    assert any(np.count_nonzero(tree.leaf_weight[leaf]) for leaf in tree.leaves)
    X = prep.dataset.X  # every row, so the linear leaf predicts several classes
    expected = est.predict(prep.transform(X))
    assert len(set(expected)) == 3
    check_classes(tree, X, expected)
    assert "_best_class" in python_source(tree)


def test_tao_regressor_with_linear_leaves():
    est, prep = fitted("tao", "regression", {"depth": 2, "max_iter": 3, "leaf": "linear"}, "diabetes")
    tree = raw_tree(est.to_tree(), prep)
    assert any(np.count_nonzero(tree.leaf_weight[leaf]) for leaf in tree.leaves)
    check_values(tree, raw_test_rows(prep), est.predict(prep.X_test))


def test_each_tree_of_a_tao_forest():
    est, prep = fitted("tao_forest", "classification", {"n_trees": 2, "depth": 2, "max_iter": 3}, "iris")
    X = raw_test_rows(prep)
    for i, member in enumerate(est.to_trees()):
        tree = raw_tree(member, prep)
        expected = np.asarray(member.output_names)[np.argmax(member.predict_value(prep.X_test), axis=1)]
        check_classes(tree, X, expected)
        assert f"This is tree {i + 1} of a forest of 2, on its own." in header(python_source(tree))


def test_laptao_classifier():
    est, prep = fitted("laptao", "classification", {"depth": 2, "perplexity": 5.0, "n_mu": 3, "tao_iter": 3},
                       "iris")
    check_classes(raw_tree(est.to_tree(), prep), raw_test_rows(prep), est.predict(prep.X_test))


def test_tree_embedding_gives_both_coordinates():
    params = {"depth": 2, "perplexity": 5.0, "n_mu": 2, "free_iter": 60, "z_iter": 10, "tao_iter": 3, "leaf": "linear"}
    est, prep = fitted("tree_embedding", "embedding", params, "iris")
    tree = raw_tree(est.to_tree(), prep)
    X = raw_test_rows(prep)
    check_values(tree, X, est.transform(prep.X_test))
    query = sql_query(tree, "t")
    assert 'AS "z1",' in query and 'AS "z2"' in query
    assert "OUTPUTS = ('z1', 'z2')" in python_source(tree)
    # one SQL expression per coordinate
    z2 = np.asarray(run_sql(sql_expression(tree, output_index=1), tree.feature_names, X), dtype=np.float64)
    np.testing.assert_allclose(z2, est.transform(prep.X_test)[:, 1], rtol=1e-9, atol=1e-9)
    with pytest.raises(TreevizError, match="2 outputs"):
        sql_expression(tree)
    with pytest.raises(TreevizError, match="from 0 to 1"):
        sql_expression(tree, output_index=2)


def test_latent_tree_exports_its_leaves_only():
    params = {"depth": 2, "max_epochs": 5, "learning_rate": 0.05, "batch_size": 32}
    est, prep = fitted("latent", "classification", params, "iris")
    model_tree = est.to_tree()
    tree = raw_tree(model_tree, prep)
    check_leaves(tree, raw_test_rows(prep), model_tree.apply(prep.X_test))
    source = python_source(tree, output="leaf")
    assert "The model itself predicts from a learned predictor" in header(source)
    for export in (python_source, sql_expression, sql_query):
        with pytest.raises(TreevizError, match=r"does not predict from its tree's leaves.*export the leaf"):
            export(tree)


def test_soft_trees_are_refused():
    params = {"n_trees": 2, "depth": 2, "max_epochs": 2, "batch_size": 16, "learning_rate": 0.2, "lambda0": 10.0}
    est, _ = fitted("skinny", "classification", params, "iris")
    tree = est.to_trees()[0]
    assert tree.routing == "soft"
    for output in codegen.OUTPUTS:
        for export in (python_source, sql_expression, sql_query):
            with pytest.raises(TreevizError, match=r"routes softly.*Only hard trees"):
                export(tree, output=output)


# ------------------------------------------------------------------------------------ missing values
def test_missing_values_follow_the_side_cart_learned():
    ds = load_dataset("iris")
    rng = np.random.default_rng(0)
    X = ds.X.copy()
    X[rng.random(X.shape) < 0.2] = NAN
    est = CARTClassifier(max_depth=5).fit(X[::2], ds.y_labels[::2], feature_names=ds.feature_names)
    tree = est.to_tree()
    assert tree.missing_right[tree.decision_nodes].any() and not tree.missing_right[tree.decision_nodes].all()
    check_classes(tree, X, est.predict(X))
    check_leaves(tree, X, est.apply(X))
    assert "IS NULL" in sql_expression(tree) and "IS NOT NULL" in sql_expression(tree)


def test_missing_values_in_raw_rows_after_a_run_that_imputed():
    """A run's model never sees a missing value: prepare imputed the training medians. Raw rows with
    missing values go to the side the tree keeps for them, unless the medians are given as fill
    values, which reproduces the run's whole preprocessing."""
    prep = prepared("penguins")
    assert prep.imputer is not None
    rng = np.random.default_rng(1)
    X = prep.dataset.X.copy()
    X[rng.random(X.shape) < 0.15] = NAN
    medians = prep.imputer.statistics_
    for family, params in (("cart", {"max_depth": 4}), ("tao", {"depth": 2, "max_iter": 3})):
        est, _ = train_run(family, "classification", params, prep)
        tree = raw_tree(est.to_tree(), prep)
        expected = [str(c) for c in est.predict(prep.transform(X))]  # impute, scale, predict
        names = tree.feature_names
        py = run_python(python_source(tree, fill_values=medians), names, X)
        assert py == expected
        expression = sql_expression(tree, fill_values=medians)
        assert "COALESCE" in expression and "IS NULL" not in expression
        assert run_sql(expression, names, X) == expected
        # without fill values: the Tree's own routing of missing values
        routed = np.asarray(tree.output_names)[np.argmax(tree.predict_value(X), axis=1)].tolist()
        assert run_python(python_source(tree), names, X) == routed
        assert run_sql(sql_expression(tree), names, X) == routed
        assert "export with fill values to match it" in header(python_source(tree))
        assert "first replaced by FILL" in header(python_source(tree, fill_values=medians))
        assert "first replaced by the fill values written in COALESCE" in header(
            sql_query(tree, fill_values=medians))


def test_a_linear_leaf_with_a_missing_input_gives_nan_or_no_class():
    t = Tree([1, -1, -1], [2, -1, -1], [[1.0, 0.0], [0, 0], [0, 0]], [0.0, 0, 0],
             [[NAN, NAN], [0.0, 0.0], [1.0, 0.5]], leaf_weight=np.array([[[0, 0], [0, 0]], [[0, 0], [0, 0]],
                                                                         [[0, 2.0], [0, -1.0]]], dtype=float),
             feature_names=("a", "b"), output_names=("p", "q"), task="classification")
    X = np.array([[1.0, 1.0], [1.0, -1.0], [1.0, NAN], [-1.0, NAN], [NAN, NAN], [1.0, 0.5 / 3]])
    expected = ["p", "q", None, "p", "p", "p"]  # the last row is a tie (1 + 1/3 = 0.5 + 5/6): the first class
    assert run_python(python_source(t), t.feature_names, X) == expected
    assert run_sql(sql_expression(t), t.feature_names, X) == expected
    reg = Tree([1, -1, -1], [2, -1, -1], [[1.0, 0.0], [0, 0], [0, 0]], [0.0, 0, 0], [[NAN], [0.0], [1.0]],
               leaf_weight=np.array([[[0, 0]], [[0, 0]], [[0, 2.0]]], dtype=float), task="regression")
    py = run_python(python_source(reg), reg.feature_names, X)
    np.testing.assert_array_equal(py, reg.predict_value(X)[:, 0])
    sql = run_sql(sql_expression(reg), reg.feature_names, X)
    np.testing.assert_array_equal(np.array(sql, dtype=float), reg.predict_value(X)[:, 0])


# ---------------------------------------------------------------------------------- names and forms
def test_names_are_quoted_and_escaped():
    names = ('a"b', "it's", "back\\slash", "naïve é", "line\nbreak", "x0")
    classes = ("c'1", 'c"2', "c\\3\n", "ü ☃")
    d, k = len(names), len(classes)
    weight = np.zeros((7, d))
    weight[0, 0], weight[1, [1, 2]], weight[2, [3, 4]] = 1.0, [0.5, -2.0], [1.0, 1.0]
    tree = Tree([1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1], weight, [0.0, 0.25, -1.0, 0, 0, 0, 0],
                np.vstack([np.full((3, k), NAN), np.eye(k)]), feature_names=names, output_names=classes,
                missing_right=[True, False, True, False, False, False, False])
    X = np.random.default_rng(2).normal(size=(60, d))
    X[::7, 0] = NAN
    X[::5, 3] = NAN
    expected = np.asarray(classes)[np.argmax(tree.predict_value(X), axis=1)].tolist()
    assert len(set(expected)) == k
    source = python_source(tree, notes=["a note\nwith a line break"])
    assert run_python(source, names, X) == expected
    assert run_sql(sql_expression(tree), names, X) == expected
    assert [r[0] for r in run_query(sql_query(tree, 'my "table"').replace('"my ""table"""', '"t"'), names, X)] \
        == expected
    assert "# a note with a line break" in source


def test_deep_trees_are_split_into_helper_functions(monkeypatch):
    est, prep = fitted("cart", "classification", {}, "breast_cancer")
    tree = raw_tree(est.to_tree(), prep)
    assert tree.max_depth >= 5
    monkeypatch.setattr(codegen_python, "_MAX_NESTED", 2)
    source = python_source(tree)
    assert "def _node_" in source
    X = prep.dataset.X
    assert run_python(source, tree.feature_names, X) == est.predict(prep.transform(X)).tolist()


def test_thresholds_are_exact_float64_boundaries():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        w = float(abs(rng.normal()) * 10.0 ** rng.integers(-6, 6))
        b = float(rng.normal() * 10.0 ** rng.integers(-6, 6))
        t = codegen_plan.left_threshold(w, b)
        assert t is not None
        assert w * t + b <= 0 < w * math.nextafter(t, math.inf) + b
    # model units: an axis-aligned split on x > 0.5 is the threshold 0.5 itself
    source = python_source(Tree([1, -1, -1], [2, -1, -1], [[1.0], [0], [0]], [-0.5, 0, 0], [[NAN], [0.0], [1.0]],
                                task="regression"))
    assert "x0 <= 0.5:" in source
    negative = Tree([1, -1, -1], [2, -1, -1], [[-4.0], [0], [0]], [2.0, 0, 0], [[NAN], [0.0], [1.0]], task="regression")
    assert "x0 >= 0.5:" in python_source(negative)
    assert run_python(python_source(negative), ("x0",), np.array([[0.5], [0.4999], [NAN]])) == [0.0, 1.0, 0.0]


def test_constant_splits_and_positional_calls():
    t = Tree([1, -1, 3, -1, -1], [2, -1, 4, -1, -1], [[0.0, 0.0], [0, 0], [0.0, 1.0], [0, 0], [0, 0]],
             [1.0, 0, -0.5, 0, 0], [[NAN, NAN], [1.0, 0.0], [NAN, NAN], [0.0, 1.0], [0.25, 0.75]],
             feature_names=("a", "b"), output_names=("no", "yes"))
    source = python_source(t)
    assert "every row goes right" in source and "USED = (1,)" in source
    predict = python_function(source, "predict")
    assert predict({"b": 0.9}) == "yes" and predict({"b": "0.1"}) == "yes" and predict({"b": 0.4}) == "yes"
    leaf = python_function(python_source(t, output="leaf"), "leaf")
    assert leaf({"b": 0.9}) == 4 and leaf({"b": 0.1}) == 3 and leaf({"b": None}) == 3
    by_position = python_function(python_source(t, output="leaf"), "leaf_by_position")
    assert by_position(np.array([5.0, 0.9])) == 4
    with pytest.raises(ValueError, match="expected 2 values"):
        by_position([0.9])
    custom = python_function(python_source(t, name="classify"), "classify_by_position")
    assert custom([0.0, 0.9]) == "yes"


def test_bad_requests_are_refused_with_a_sentence():
    t = Tree([1, -1, -1], [2, -1, -1], [[1.0, 0.0], [0, 0], [0, 0]], [0.0, 0, 0], [[NAN], [0.0], [1.0]],
             task="regression")
    with pytest.raises(TreevizError, match="one of prediction, leaf"):
        python_source(t, output="proba")
    with pytest.raises(TreevizError, match="units"):
        sql_query(t, units="metres")
    for name in ("class", "_x", "FEATURES", "2x", "a-b"):
        with pytest.raises(TreevizError, match="function name"):
            python_source(t, name=name)
    with pytest.raises(TreevizError, match="one finite number per feature"):
        python_source(t, fill_values=[1.0])
    with pytest.raises(TreevizError, match="one finite number per feature"):
        sql_expression(t, fill_values=[1.0, NAN])
    same = Tree([1, -1, -1], [2, -1, -1], [[1.0, 0.0], [0, 0], [0, 0]], [0.0, 0, 0], [[NAN], [0.0], [1.0]],
                feature_names=("a", "a"), task="regression")
    with pytest.raises(TreevizError, match="share the name 'a'"):
        python_source(same)
    nul = Tree([1, -1, -1], [2, -1, -1], [[1.0], [0], [0]], [0.0, 0, 0], [[NAN], [0.0], [1.0]],
               feature_names=("a\x00b",), task="regression")
    with pytest.raises(TreevizError, match="NUL"):
        sql_expression(nul)
    assert "a\\x00b" in python_source(nul)
    huge = Tree([1, -1, -1], [2, -1, -1], [[np.inf], [0], [0]], [0.0, 0, 0], [[NAN], [0.0], [1.0]], task="regression")
    with pytest.raises(TreevizError, match="infinite"):
        python_source(huge)
