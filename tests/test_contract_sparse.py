"""scipy.sparse input, checked for every registered estimator (a new family gets it for free).

Every estimator takes CSR and CSC input and fits and predicts exactly as on the dense array (same
seed, same outputs); a densifying estimator warns, records why in ``densified_input_``, and
refuses with a sentence a dense copy larger than the limit. A "native" estimator (CART) fits the
sparse matrix itself above the limit, and the Tree routes sparse rows in blocks.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.tree import DecisionTreeRegressor

from models import sparse_input
from models.ground import routing as tree_routing
from models.ground import threads
from models.ground.errors import TreevizError
from models.registry import all_estimator_classes
from models.schema import ANY_DATA_TASKS
from tests.test_contract import outputs
from treeviz.services.data import PrepConfig, load_dataset, prepare

CASES = list(all_estimator_classes())
IDS = [cls.__name__ for _, _, cls in CASES]
DATA = {"classification": "iris", "regression": "diabetes", "clustering": "blobs", "embedding": "iris"}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """torch on one thread, as a training job's budget does (two threads on a busy machine spin)."""
    with threads.limited(1):
        yield


@functools.cache
def sparse_data(task: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Training X (about half zeros), its targets, and test X with zeros, from the task's data set."""
    prepared = prepare(load_dataset(DATA[task]), PrepConfig(seed=0))
    X, X_test = prepared.X_train.copy(), prepared.X_test.copy()
    X[np.abs(X) < 0.6] = 0.0
    X_test[np.abs(X_test) < 0.6] = 0.0
    y = None if task in ANY_DATA_TASKS else prepared.labels("train")
    return X, y, X_test


def fitted(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return clone(estimator).fit(X, y)


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_sparse_input_fits_and_predicts_as_dense(family, task, cls):
    X, y, X_test = sparse_data(task)
    estimator = family.make(task, family.test_params)
    with pytest.warns(UserWarning, match=f"{cls.__name__} fitted a dense copy of the sparse input"):
        on_csr = clone(estimator).fit(sp.csr_matrix(X), y)
    assert on_csr.densified_input_.startswith(f"{cls.__name__} fitted a dense copy")
    on_csc = fitted(estimator, sp.csc_array(X), y)
    got = [outputs(on_csr, sp.csr_matrix(X_test)), outputs(on_csc, sp.csc_array(X_test))]
    on_dense = on_csr.fit(X, y)  # a dense refit forgets the note
    assert not hasattr(on_dense, "densified_input_")
    for container, outs in zip(("CSR", "CSC"), got):
        for a, b in zip(outputs(on_dense, X_test), outs):
            assert np.array_equal(a, b), f"{cls.__name__} on {container} input differs from dense"


@pytest.mark.parametrize(("family", "task", "cls"), [c for c in CASES if c[2]._sparse_input == "densify"],
                         ids=[c[2].__name__ for c in CASES if c[2]._sparse_input == "densify"])
def test_a_dense_copy_over_the_limit_is_refused(family, task, cls, monkeypatch):
    X, y, _ = sparse_data(task)
    monkeypatch.setattr(sparse_input, "DENSE_COPY_LIMIT_BYTES", X.size * 8 - 1)
    estimator = family.make(task, family.test_params)
    with pytest.raises(TreevizError, match=rf"dense copy of this {X.shape[0]} × {X.shape[1]} sparse input "
                                           r"would need .*; select fewer features or rows"):
        estimator.fit(sp.csr_matrix(X), y)


def test_prediction_over_the_limit_is_refused_by_a_densifying_estimator(monkeypatch):
    family, task, _ = next(c for c in CASES if c[2]._sparse_input == "densify" and c[1] == "classification")
    X, y, X_test = sparse_data(task)
    estimator = fitted(family.make(task, family.test_params), X, y)
    monkeypatch.setattr(sparse_input, "DENSE_COPY_LIMIT_BYTES", 8)
    with pytest.raises(TreevizError, match="would need"):
        estimator.predict(sp.csr_matrix(X_test))


NATIVE = [c for c in CASES if c[2]._sparse_input == "native"]


@pytest.mark.parametrize(("family", "task", "cls"), NATIVE, ids=[c[2].__name__ for c in NATIVE])
def test_a_native_estimator_fits_sparse_input_over_the_limit(family, task, cls, monkeypatch):
    X, y, X_test = sparse_data(task)
    estimator = family.make(task, family.test_params)
    dense = fitted(estimator, X, y)
    monkeypatch.setattr(sparse_input, "DENSE_COPY_LIMIT_BYTES", 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no dense copy, so no warning
        model = clone(estimator).fit(sp.csr_matrix(X), y)
    assert not hasattr(model, "densified_input_")
    if task == "classification":  # unit weights: scikit-learn's sparse splitter counts exactly
        for a, b in zip(outputs(dense, X_test), outputs(model, sp.csr_matrix(X_test))):
            assert np.array_equal(a, b)
    else:  # sums in another order: compare with scikit-learn's own sparse fit
        reference = DecisionTreeRegressor(random_state=0).fit(sp.csr_matrix(X), y)
        np.testing.assert_array_equal(model.predict(sp.csc_matrix(X_test)), reference.predict(X_test))


def test_a_native_fit_refuses_missing_values_in_sparse_input_with_a_sentence(monkeypatch):
    family, task, _ = next(c for c in NATIVE if c[1] == "classification")
    X, y, _ = sparse_data(task)
    X = X.copy()
    X[0, 0] = np.nan
    monkeypatch.setattr(sparse_input, "DENSE_COPY_LIMIT_BYTES", 8)
    with pytest.raises(TreevizError, match="missing values"):
        family.make(task, family.test_params).fit(sp.csr_matrix(X), y)


def test_tree_routes_sparse_rows_in_blocks_as_dense(monkeypatch):
    family, task, _ = next(c for c in NATIVE if c[1] == "classification")
    X, y, X_test = sparse_data(task)
    X_test = X_test.copy()
    X_test[1, 2] = np.nan  # missing values route as in the dense array
    tree = fitted(family.make(task, family.test_params), X, y).to_tree()
    monkeypatch.setattr(tree_routing, "_CHUNK_ROWS", 7)  # several blocks, the last one short
    Xs = sp.csr_array(X_test)
    assert np.array_equal(tree.apply(Xs), tree.apply(X_test))
    assert np.array_equal(tree.predict_value(Xs), tree.predict_value(X_test), equal_nan=True)
    assert (tree.decision_path(Xs) != tree.decision_path(X_test)).nnz == 0
    np.testing.assert_array_equal(tree.decision_values(Xs), tree.decision_values(X_test))
    assert tree.node_stats(Xs).count.tolist() == tree.node_stats(X_test).count.tolist()
    assert tree.sample_path(Xs[[3]]) == tree.sample_path(X_test[3])
    assert tree.apply(sp.csr_array((0, X_test.shape[1]))).shape == (0,)
    with pytest.raises(TreevizError, match="features"):
        tree.apply(sp.csr_array(X_test[:, :2]))


def test_sparse_input_that_is_not_a_table_is_refused_as_dense_input_is():
    family, task, _ = next(c for c in CASES if c[1] == "classification")
    with pytest.raises(ValueError, match="2D array"):
        family.make(task, family.test_params).fit(sp.coo_array(np.ones(5)), np.arange(5) % 2)


def test_a_sparse_validation_set_scores_as_dense():
    family, task, _ = next(c for c in CASES if c[2]._sparse_input == "densify" and c[1] == "classification")
    X, y, X_test = sparse_data(task)
    prepared = prepare(load_dataset(DATA[task]), PrepConfig(seed=0))
    y_test = prepared.labels("test")
    estimator = family.make(task, family.test_params)
    dense = clone(estimator).fit(X, y, eval_set=(X_test, y_test))
    with pytest.warns(UserWarning, match="dense copy"):
        model = clone(estimator).fit(sp.csr_matrix(X), y, eval_set=(sp.csr_matrix(X_test), y_test))
    def numbers(history):  # without the timings
        return [{k: v for k, v in record.items() if k != "seconds"} for record in history]

    assert numbers(model.history_) == numbers(dense.history_)
    assert any("val_score" in record for record in model.history_)
