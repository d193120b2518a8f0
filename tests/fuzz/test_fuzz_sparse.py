"""Fuzz: scipy.sparse input of any format, dtype, index width, shape and values (NaN, ±inf) routed
through a Tree and a CART model either gives exactly what the same dense array gives, or is
refused with a TreevizError sentence."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.datasets import load_iris

from models.cart.estimators import CARTClassifier
from models.ground.errors import TreevizError

FORMATS = ("csr", "csc", "coo", "lil", "dok", "bsr", "dia")
DTYPES = (np.float64, np.float32, np.int64, np.bool_, np.complex128)
VALUES = st.sampled_from([0.0, 1.0, -2.5, 0.7, 3.0, np.nan, np.inf, -np.inf, 1e300])


@functools.cache
def model() -> CARTClassifier:
    X, y = load_iris(return_X_y=True)
    return CARTClassifier(max_depth=4).fit(X, y)


@st.composite
def sparse_inputs(draw):
    n = draw(st.integers(0, 12))
    d = draw(st.sampled_from([4, 4, 4, 3, 5]))
    dense = np.array(draw(st.lists(VALUES, min_size=n * d, max_size=n * d)), dtype=np.float64).reshape(n, d)
    dense[np.array(draw(st.lists(st.booleans(), min_size=n * d, max_size=n * d)), dtype=bool).reshape(n, d)] = 0
    dtype = draw(st.sampled_from(DTYPES))
    with np.errstate(invalid="ignore", over="ignore"):
        values = dense.astype(dtype) if dtype not in (np.int64, np.bool_) else np.nan_to_num(dense).astype(dtype)
    X = sp.csr_array(values).asformat(draw(st.sampled_from(FORMATS)))
    if X.format in ("csr", "csc") and draw(st.booleans()):
        X.indices, X.indptr = X.indices.astype(np.int64), X.indptr.astype(np.int64)
    return X


@given(sparse_inputs())
def test_sparse_input_routes_as_dense_or_is_refused_with_a_sentence(X):
    estimator, tree = model(), model().to_tree()
    try:
        leaves = tree.apply(X)
        proba = estimator.predict_proba(X)
    except TreevizError as error:
        assert str(error).endswith(".") and "\n" not in str(error)
        return
    except ValueError:  # scikit-learn's own input check refuses the same dense array too
        with pytest.raises(ValueError):
            estimator.predict_proba(X.toarray())
        return
    dense = X.toarray().astype(np.float64)
    assert np.array_equal(leaves, tree.apply(dense))
    assert np.array_equal(proba, estimator.predict_proba(dense))
