"""scipy.sparse input for every estimator, in one place.

Each estimator class declares what it does with a sparse ``X`` (``TreeEstimator._sparse_input``):

* ``"densify"`` (the default, so a new family gets it for free): the method computes with dense
  arrays, so ``X`` becomes a dense float64 copy. Fitting on it is then exactly fitting on the dense
  array. ``fit`` warns (a ``UserWarning`` naming the estimator and the reason) and the fitted model
  keeps the sentence in ``densified_input_``. A copy larger than :data:`DENSE_COPY_LIMIT_BYTES` is
  refused with a :class:`~models.ground.errors.TreevizError` saying how large it would be.
* ``"native"``: the estimator takes CSR/CSC as it is. It still fits on a dense copy when the copy
  is within the limit, because that is what makes the sparse fit equal to the dense fit (a sparse
  solver adds in another order, so near-ties can break differently); above the limit it fits the
  sparse matrix itself instead of refusing. Predicting never makes a whole dense copy.

:func:`takes_sparse` wraps the public methods that take ``X`` (:data:`X_METHODS`);
``TreeEstimator.__init_subclass__`` applies it to every estimator class, so families write their
input checks for dense arrays only.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from models.ground.errors import TreevizError
from models.registry import all_estimator_classes, family_of_class

#: The largest dense float64 copy of a sparse input an estimator makes (bytes).
DENSE_COPY_LIMIT_BYTES = 2 * 1024**3

#: The public methods whose first argument (or ``X=``) is the input matrix.
X_METHODS = ("fit", "fit_predict", "fit_transform", "predict", "predict_proba", "predict_log_proba",
             "decision_function", "transform", "score", "apply")

_INT32_MAX = np.iinfo(np.int32).max


def _size_text(n_bytes: int) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes} bytes"


def dense_copy_bytes(X: Any) -> int:
    """Bytes of a dense float64 copy of ``X``."""
    return int(np.prod(X.shape, dtype=np.int64)) * 8


def _native_families() -> str:
    keys = sorted({family_of_class(cls).key for _, _, cls in all_estimator_classes()
                   if cls._sparse_input == "native"})
    return ", ".join(keys) or "none"


def _densified(estimator: Any, X: Any) -> np.ndarray:
    """A dense float64 copy of the sparse ``X``, or a TreevizError when it would be too large."""
    size = dense_copy_bytes(X)
    if size > DENSE_COPY_LIMIT_BYTES:
        raise TreevizError(
            f"{type(estimator).__name__} works on dense arrays, and a dense copy of this "
            f"{X.shape[0]} × {X.shape[1]} sparse input would need {_size_text(size)}, more than the "
            f"{_size_text(DENSE_COPY_LIMIT_BYTES)} allowed; select fewer features or rows, or use a "
            f"family that fits sparse input as it is ({_native_families()})."
        )
    if X.dtype.kind not in "biuf":
        raise TreevizError(
            f"The sparse input holds {X.dtype} values; {type(estimator).__name__} needs numbers."
        )
    return X.toarray().astype(np.float64, copy=False)


def _sparse_for_fit(estimator: Any, X: Any) -> Any:
    """``X`` as CSR/CSC with 32-bit indices, as scikit-learn's sparse tree needs, or a sentence."""
    X = X if X.format in ("csr", "csc") else X.tocsr()
    if X.dtype.kind == "f" and np.isnan(X.data).any():
        raise TreevizError(
            f"{type(estimator).__name__} takes missing values (NaN) only in a dense array, and a dense "
            f"copy of this {X.shape[0]} × {X.shape[1]} input would need {_size_text(dense_copy_bytes(X))}; "
            "impute the missing values first."
        )
    if X.indices.dtype != np.int32 or X.indptr.dtype != np.int32:
        if X.nnz > _INT32_MAX or max(X.shape) > _INT32_MAX:
            raise TreevizError(
                f"This sparse input has {X.nnz} stored values, more than the 2^31 the sparse tree "
                "can index; use fewer rows or features."
            )
        X = X.copy()
        X.indices = X.indices.astype(np.int32)
        X.indptr = X.indptr.astype(np.int32)
    return X


def usable_input(estimator: Any, X: Any, *, fitting: bool) -> tuple[Any, str | None]:
    """``X`` as the estimator can use it, and the note to record when a fit made a dense copy.

    Anything that is not a scipy.sparse matrix or array is returned as it is (the estimator's
    own checks handle it)."""
    if not sp.issparse(X):
        return X, None
    if X.ndim != 2:  # a 1-D sparse array: the estimator's own checks refuse it as for dense input
        return X.toarray(), None
    native = type(estimator)._sparse_input == "native"
    if native and not fitting:
        return (X if X.format in ("csr", "csc") else X.tocsr()), None
    if native and dense_copy_bytes(X) > DENSE_COPY_LIMIT_BYTES:
        return _sparse_for_fit(estimator, X), None
    dense = _densified(estimator, X)
    note = None
    if fitting:
        note = (f"{type(estimator).__name__} fitted a dense copy of the sparse input "
                f"({X.shape[0]} × {X.shape[1]}, {_size_text(dense.nbytes)}): "
                f"{type(estimator)._densify_reason}.")
    return dense, note


def takes_sparse(method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap an estimator method taking ``X`` so that a sparse ``X`` (and ``eval_set``'s) reaches
    it as the estimator declares (see the module's docstring)."""
    fitting = method.__name__.startswith("fit")

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        note = None
        if args:
            first, note = usable_input(self, args[0], fitting=fitting)
            args = (first, *args[1:])
        elif "X" in kwargs:
            kwargs["X"], note = usable_input(self, kwargs["X"], fitting=fitting)
        eval_set = kwargs.get("eval_set")
        if isinstance(eval_set, tuple | list) and len(eval_set) == 2 and sp.issparse(eval_set[0]):
            kwargs["eval_set"] = (usable_input(self, eval_set[0], fitting=False)[0], eval_set[1])
        if note is not None:
            warnings.warn(note, UserWarning, stacklevel=2)
        out = method(self, *args, **kwargs)
        if fitting:
            if note is not None:
                self.densified_input_ = note
            else:
                vars(self).pop("densified_input_", None)
        return out

    return wrapper
