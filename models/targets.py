"""What every regressor with one target or several shares.

:class:`MultiOutputRegression` is a mixin placed before ``RegressorMixin`` and the family's base
class. It gives

* the scikit-learn tag ``multi_output`` (a 2-D ``y`` is fitted as several targets);
* the prologue of ``fit`` (:meth:`~MultiOutputRegression._regression_data`): ``X`` and ``y``
  validated, the sample weights checked (None stays None), and whether ``y`` was 1-D remembered;
* :meth:`~MultiOutputRegression._as_y_shape`: outputs of shape (n, k) given back in ``y``'s shape
  (1-D for a 1-D ``y``);
* that shape kept in model files (``y_ndim`` in the learned values), through the
  ``_get_model_state`` / ``_set_model_state`` chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.utils.validation import _check_sample_weight, validate_data


class MultiOutputRegression:
    """Mixin of the regressors: the multi-output tag, the ``fit`` prologue and ``y``'s shape."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _regression_data(self, X: Any, y: Any, sample_weight: Any = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Validated ``X``, the targets as an (n, k) array and the checked sample weights (None if
        none were given); remembers whether ``y`` was 1-D."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True)
        W = None if sample_weight is None else _check_sample_weight(sample_weight, X, dtype=np.float64,
                                                                    ensure_non_negative=True)
        self._remember_y_shape(y)
        return X, np.asarray(y, dtype=np.float64).reshape(X.shape[0], -1), W

    def _remember_y_shape(self, y: Any) -> None:
        self._y_ndim = int(np.ndim(y))

    def _as_y_shape(self, out: np.ndarray) -> np.ndarray:
        """(n, k) outputs in the shape of the ``y`` the model was fitted on."""
        return out[:, 0] if getattr(self, "_y_ndim", 1) == 1 and out.shape[1] == 1 else out

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        learned, arrays = super()._get_model_state()
        learned["y_ndim"] = int(getattr(self, "_y_ndim", 1))
        return learned, arrays

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self._y_ndim = int(learned.get("y_ndim", 1))
        super()._set_model_state(learned, arrays)
