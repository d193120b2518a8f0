"""The online linear baselines: a linear model learned under the same protocol, estimators and
optimiser as DGT-Bandit (not a family: a baseline for comparisons)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import nn

from models.base import TreeEstimator
from models.dgt.bandit.policy import normalised_sigmoids
from models.dgt.bandit.simulation import BanditFit


def _linear_builder(n_features: int, n_outputs: int, generator: torch.Generator):
    """Logits Wx + b (or wx + b): PyTorch's default weight bound 1/√d, zero bias."""
    layer = nn.Linear(n_features, n_outputs)
    with torch.no_grad():
        bound = 1.0 / math.sqrt(n_features)
        layer.weight.uniform_(-bound, bound, generator=generator)
        layer.bias.zero_()
    return layer, layer, layer


class _LinearBandit(BanditFit, BaseEstimator):
    """An online linear model under the same protocol, estimators and optimiser as DGT-Bandit (not
    a family: a baseline for comparisons). Same ``fit`` arguments, records and attributes
    (``coef_`` (K, d) and ``intercept_`` (K,) in the data's units instead of a tree)."""

    _notify = TreeEstimator._notify
    _begin_training = TreeEstimator._begin_training
    _record = TreeEstimator._record
    _cancel_requested = TreeEstimator._cancel_requested
    _progress = TreeEstimator._progress
    _end_training = TreeEstimator._end_training
    _set_feature_names = TreeEstimator._set_feature_names

    def _fit_linear(self, X, targets, n_outputs, eval_set, callbacks, feature_names, comparator_rows) -> None:
        self._set_feature_names(feature_names, X.shape[1])
        layer, _ = self._simulate(X, targets, n_outputs, _linear_builder, eval_set, callbacks, comparator_rows)
        weight = layer.weight.detach().cpu().double().numpy()
        bias = layer.bias.detach().cpu().double().numpy()
        self.coef_ = weight / self.x_scale_
        self.intercept_ = bias - self.coef_ @ self.x_mean_

    def _scores(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_.T + self.intercept_


class LinearBanditClassifier(ClassifierMixin, _LinearBandit):
    """Online linear ε-greedy classifier (logits Wx + b, one sigmoid per class) learned from
    bandit feedback exactly as :class:`DGTBanditClassifier` learns its tree."""

    _task = "classification"

    def __init__(self, *, exploration=0.3, learning_rate=1e-3, accumulate=4, n_rounds=None, eval_every=None,
                 device="auto", random_state=0):
        self.exploration = exploration
        self.learning_rate = learning_rate
        self.accumulate = accumulate
        self.n_rounds = n_rounds
        self.eval_every = eval_every
        self.device = device
        self.random_state = random_state

    def fit(self, X, y, *, callbacks=None, eval_set=None, feature_names=None, comparator=None):
        X, Y, ev, rows = self._classification_inputs(X, y, eval_set, comparator)
        self._fit_linear(X, Y, self.classes_.size, ev, callbacks, feature_names, rows)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        return normalised_sigmoids(self._scores(X))

    def predict(self, X: Any) -> np.ndarray:
        return self.classes_.take(self._scores(X).argmax(axis=1))


class LinearBanditRegressor(RegressorMixin, _LinearBandit):
    """Online linear regression wx + b learned from bandit feedback exactly as
    :class:`DGTBanditRegressor` learns its tree (the paper's bandit regression baseline)."""

    _task = "regression"

    def __init__(self, *, estimator="two_point", delta=0.5, loss="squared", learning_rate=1e-3, accumulate=4,
                 n_rounds=None, eval_every=None, device="auto", random_state=0):
        self.estimator = estimator
        self.delta = delta
        self.loss = loss
        self.learning_rate = learning_rate
        self.accumulate = accumulate
        self.n_rounds = n_rounds
        self.eval_every = eval_every
        self.device = device
        self.random_state = random_state

    def fit(self, X, y, *, callbacks=None, eval_set=None, feature_names=None, comparator=None):
        X, Y, ev, rows = self._regression_inputs(X, y, eval_set, comparator)
        self._fit_linear(X, Y, Y.shape[1], ev, callbacks, feature_names, rows)
        return self

    def predict(self, X: Any) -> np.ndarray:
        out = self._scores(X) * self.target_range_ + self.target_min_
        return out[:, 0] if getattr(self, "_y_ndim", 1) == 1 and out.shape[1] == 1 else out
