"""The contract every registered estimator keeps, checked for all of them at once.

Parametrised over :func:`models.registry.all_estimator_classes`, so a new family gets every check
for free (the test-only stump family of ``tests/families`` is registered by ``tests/conftest.py``):

* scikit-learn's own estimator checks (``parametrize_with_checks``), with the family's
  ``test_params``; checks a class cannot pass are listed, with the reason, in its
  ``_expected_failed_checks``;
* keyword-only parameters that are exactly the family's schema, with the same defaults;
* one family key: the registry's, the estimator's, every tree's, the model file's and the run's;
* save -> load, and train_run -> export_zip -> import_zip, predict identically;
* ``to_trees()`` gives valid Trees, and a single hard tree predicting from its leaves agrees with
  ``predict``;
* the Train form built from the schema round-trips the defaults;
* every preset fits on a small sample.
"""

from __future__ import annotations

import functools
import inspect

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks
from streamlit.testing.v1 import AppTest

from models.ground.tree import Tree
from models.persist import load_model, model_bytes, read_config, save_model, zip_bytes
from models.registry import all_estimator_classes, family_of_class
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.archive import export_zip, import_zip
from treeviz.services.store.runs import RunStore

CASES = list(all_estimator_classes())
IDS = [cls.__name__ for _, _, cls in CASES]
DATA = {"classification": "iris", "regression": "diabetes", "clustering": "blobs", "embedding": "iris"}


def small(family, task):
    return family.make(task, family.test_params)


@functools.cache
def prepared_for(task: str):
    return prepare(load_dataset(DATA[task]), PrepConfig(seed=0))


@functools.cache
def fitted(family_key: str, task: str):
    family = next(f for f, t, _ in CASES if f.key == family_key and t == task)
    estimator, _ = train_run(family.key, task, family.test_params, prepared_for(task))
    return estimator


def outputs(estimator, X) -> list[np.ndarray]:
    if not hasattr(estimator, "predict"):  # an embedding
        return [np.asarray(estimator.transform(X))]
    out = [np.asarray(estimator.predict(X))]
    if hasattr(estimator, "predict_proba"):
        out.append(np.asarray(estimator.predict_proba(X)))
    return out


def expected_failed_checks(estimator) -> dict[str, str]:
    """The class's ``_expected_failed_checks``. Sparse input is fitted as its dense copy, so a
    sample-weight check failed on dense data is failed on sparse data, for the same reason."""
    out = dict(getattr(type(estimator), "_expected_failed_checks", {}))
    dense = out.get("check_sample_weight_equivalence_on_dense_data")
    if dense is not None:
        out.setdefault("check_sample_weight_equivalence_on_sparse_data", dense)
    return out


#: scikit-learn checks the fast tier runs over every estimator (the contract's essentials: it
#: constructs, fits, refits, predicts in the right shape and refuses what it must); the full tier
#: runs every check.
ESSENTIAL_CHECKS = frozenset({
    "check_no_attributes_set_in_init", "check_parameters_default_constructible", "check_get_params_invariance",
    "check_set_params", "check_estimators_unfitted", "check_fit2d_predict1d", "check_estimators_dtypes",
    "check_fit_score_takes_y", "check_estimators_fit_returns_self", "check_n_features_in_after_fitting",
    "check_dont_overwrite_parameters", "check_fit_check_is_fitted",
})


def _check_name(check) -> str:
    return getattr(check, "func", check).__name__


def _tiered(checks):
    """scikit-learn's parametrisation, with every check outside :data:`ESSENTIAL_CHECKS` marked slow."""
    argnames, params = checks.mark.args
    tiered = []
    for param in params:
        values, marks, param_id = (param.values, list(param.marks), param.id) if hasattr(param, "values") \
            else (tuple(param), [], None)
        if _check_name(values[1]) not in ESSENTIAL_CHECKS:
            marks.append(pytest.mark.slow)
        tiered.append(pytest.param(*values, marks=marks, id=param_id))
    return pytest.mark.parametrize(argnames, tiered, **checks.mark.kwargs)


@_tiered(parametrize_with_checks([small(f, t) for f, t, _ in CASES], expected_failed_checks=expected_failed_checks))
def test_scikit_learn_checks(estimator, check):
    check(estimator)


def test_the_essential_checks_are_scikit_learns():
    """Every name in the fast tier's list is a check scikit-learn runs on these estimators (a
    renamed check would silently leave the fast tier)."""
    _, params = parametrize_with_checks([small(*CASES[0][:2])]).mark.args
    names = {_check_name((p.values if hasattr(p, "values") else p)[1]) for p in params}
    assert ESSENTIAL_CHECKS <= names, sorted(ESSENTIAL_CHECKS - names)


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_parameters_are_keyword_only_and_exactly_the_schema(family, task, cls):
    signature = inspect.signature(cls.__init__)
    params = {n: p for n, p in signature.parameters.items() if n != "self"}
    assert all(p.kind is p.KEYWORD_ONLY for p in params.values()), f"{cls.__name__} takes positional parameters"
    schema = {p.name: p.default for p in family.params_for(task)}
    assert set(params) == set(schema), f"{cls.__name__}: __init__ and schema differ"
    for name, default in schema.items():
        assert params[name].default == default, f"{cls.__name__}.{name}: {params[name].default!r} != {default!r}"


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_one_family_key_everywhere(family, task, cls, tmp_path):
    assert family_of_class(cls) is family
    assert sum(cls.__name__ == c.__name__ and cls.__module__ == c.__module__ for _, _, c in CASES) == 1
    estimator = fitted(family.key, task)
    assert type(estimator) is cls and estimator.family_key == family.key
    assert {tree.family for tree in estimator.to_trees()} == {family.key}
    assert read_config(zip_bytes(model_bytes(estimator)))["family"] == family.key
    record = train_run(family.key, task, family.test_params, prepared_for(task), store=RunStore(tmp_path))
    assert record.family == family.key and record.estimator == cls.__name__


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_save_and_load_predict_identically(family, task, cls, tmp_path):
    estimator = fitted(family.key, task)
    X = prepared_for(task).X_test
    for path in (tmp_path / "model", tmp_path / "model.zip"):
        loaded = load_model(save_model(estimator, path))
        assert type(loaded) is cls and loaded.get_params() == estimator.get_params()
        for a, b in zip(outputs(estimator, X), outputs(loaded, X)):
            assert np.array_equal(a, b)


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_run_archive_round_trip_predicts_identically(family, task, cls, tmp_path):
    store, other = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    record = train_run(family.key, task, family.test_params, prepared_for(task), store=store)
    imported = import_zip(other, export_zip(store, record.run_id))
    assert imported == record
    X = other.load_prepared(record.run_id).X_test
    for a, b in zip(outputs(store.load_model(record.run_id), X), outputs(other.load_model(record.run_id), X)):
        assert np.array_equal(a, b)


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_trees_are_valid_and_hard_trees_agree_with_predict(family, task, cls):
    estimator = fitted(family.key, task)
    X = prepared_for(task).X_test
    trees = estimator.to_trees()
    assert trees and all(isinstance(t, Tree) for t in trees)
    for tree in trees:
        assert tree.n_features == estimator.n_features_in_ and tree.task == task
        assert Tree.from_json(tree.to_json()).equals(tree)
    tree = trees[0]
    if len(trees) == 1 and tree.routing == "hard" and tree.meta.get("prediction") == "leaf_value":
        values = tree.predict_value(X)
        if task == "embedding":
            np.testing.assert_allclose(estimator.transform(X), values, atol=1e-9)
        elif task == "classification":
            expected = np.asarray(tree.output_names)[np.argmax(values, axis=1)]
            assert np.array_equal(np.asarray(estimator.predict(X)).astype(str), expected)
        else:
            np.testing.assert_allclose(np.asarray(estimator.predict(X)).reshape(values.shape), values)


def _form_script(family_key: str, task: str) -> None:
    import streamlit as st

    from models.registry import get_family
    from treeviz.ui.forms import param_form

    family = get_family(family_key)
    st.session_state["values"] = param_form(family, task, family.defaults(task), key="contract")


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_the_form_round_trips_the_defaults(family, task, cls):
    at = AppTest.from_function(_form_script, args=(family.key, task), default_timeout=30).run()
    assert not at.exception
    values = at.session_state["values"]
    assert values == family.defaults(task)
    assert family.validate_params(values, task) == family.defaults(task)


@pytest.mark.slow  # presets are full-size settings: about a minute for all of them
@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_every_preset_fits_on_a_small_sample(family, task, cls):
    prepared = prepared_for(task)
    X = prepared.X_train[:60]
    y = None if task in ("clustering", "embedding") else prepared.labels("train")[:60]
    for preset in family.presets_for(task):
        estimator = family.make(task, family.defaults(task, preset))
        estimator.fit(X, y)
        assert len(outputs(estimator, X)[0]) == len(X), preset
        assert estimator.to_trees(), preset
