"""The simulation every bandit estimator shares: the stream, the oracle (the only holder of the
labels), the learner, the held-out evaluation and the comparator."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from sklearn.metrics import r2_score
from sklearn.utils.validation import validate_data
from torch import Tensor, nn

from models.base import Callback, class_targets, seed_everything
from models.devices import resolve_device
from models.dgt.bandit.loop import default_rounds, learn, stream_order
from models.dgt.bandit.oracles import ClassificationOracle, RegressionOracle, bandit_loss
from models.dgt.bandit.perturbation import ESTIMATORS, OnePoint, TwoPoint
from models.dgt.bandit.policy import EpsilonGreedy
from models.dgt.bandit.rounds import hand_written
from models.dgt.estimators import standardiser
from models.ground import threads

#: Records in a run when ``eval_every`` is None (about).
DEFAULT_RECORDS = 50


def bandit_device(device: str) -> str:
    """The device of the online learner: ``"auto"`` means the CPU here, because one round is a
    handful of tiny tensor operations whose kernel launches cost more on a GPU than the arithmetic
    (20 000 rounds took 3.5 times longer on an H100 than on one CPU thread); "cuda" is still
    honoured when asked for."""
    return "cpu" if device == "auto" else resolve_device(device)


class BanditFit:
    """The simulation every bandit estimator shares: the stream, the oracle (the only holder of
    the labels), the learner, the held-out evaluation and the comparator."""

    _task = ""

    def _stream_length(self, n_rows: int) -> int:
        return int(self.n_rounds) if self.n_rounds is not None else default_rounds(n_rows)

    def _record_every(self, n_rounds: int) -> int:
        if self.eval_every is not None:
            return int(self.eval_every)
        acc = max(1, int(self.accumulate))
        return acc * max(1, math.ceil(n_rounds / (DEFAULT_RECORDS * acc)))

    def _estimator(self, n_outputs: int) -> Any:
        if self._task == "classification":
            if not 0.0 <= float(self.exploration) <= 1.0:
                raise ValueError(f"exploration must be in [0, 1], got {self.exploration!r}")
            return EpsilonGreedy(self.exploration, n_outputs)
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if not float(self.delta) > 0:
            raise ValueError(f"delta must be positive, got {self.delta!r}")
        return TwoPoint(self.delta) if self.estimator == "two_point" else OnePoint(self.delta)

    def _simulate(self, X: np.ndarray, targets: np.ndarray, n_outputs: int,
                  build: Callable[[int, int, torch.Generator], tuple[nn.Module, Callable, Callable]],
                  eval_set: tuple[np.ndarray, np.ndarray] | None, callbacks: Iterable[Callback] | None,
                  comparator_rows: np.ndarray | None) -> tuple[nn.Module, dict[str, Any]]:
        """Simulate the bandit on (X, targets): class indices, or targets in the data's units.
        ``comparator_rows``: a comparator's prediction per row (class index, or value in the data's
        units). Returns the learned module and the learner's summary."""
        device = bandit_device(self.device)
        rng = seed_everything(self.random_state)
        generator = torch.Generator().manual_seed(int(rng.integers(2**31 - 1)))
        n = X.shape[0]
        self.x_mean_, self.x_scale_ = standardiser(X)
        n_rounds = self._stream_length(n)
        self.stream_ = stream_order(n, n_rounds, rng)
        order = torch.as_tensor(self.stream_, dtype=torch.long, device=device)

        def scaled(a: np.ndarray) -> Tensor:
            return torch.tensor((a - self.x_mean_) / self.x_scale_, dtype=torch.float32, device=device)

        estimator = self._estimator(n_outputs)
        classification = self._task == "classification"
        if classification:
            oracle: Any = ClassificationOracle(torch.as_tensor(targets, dtype=torch.long, device=device), order)
            draws = estimator.draws(n_rounds, generator)
        else:
            oracle = RegressionOracle(targets, order, loss=self.loss, budget=estimator.budget)
            self.target_min_, self.target_range_ = oracle.target_min, oracle.target_range
            draws = estimator.draws(n_rounds, generator, n_outputs)
        draws = [d.to(device) for d in draws]
        module, forward, predict = build(X.shape[1], n_outputs, generator)
        module.to(device)
        comparator = None
        if comparator_rows is not None:
            if classification:
                rows = torch.as_tensor(comparator_rows, dtype=torch.long, device=device)
            else:
                rows = torch.as_tensor((comparator_rows.reshape(n, -1) - self.target_min_) / self.target_range_,
                                       dtype=torch.float32, device=device)
            comparator = oracle.comparator_losses(rows)
        evaluate = None
        if eval_set is not None and len(eval_set[0]):
            evaluate = self._evaluator(scaled(eval_set[0]), eval_set[1], predict, device)
        every = self._record_every(n_rounds)
        self._begin_training(callbacks, total=math.ceil(n_rounds / every))
        try:
            # a round is a handful of tiny tensor operations: on the CPU, a second thread only adds its
            # synchronisation (a softmax over 4 rows took 8 ms with 2 threads on a busy machine, 1 µs with 1)
            with threads.limited(1 if device == "cpu" else torch.get_num_threads()):
                info = learn(forward, module.parameters(), scaled(X), order, oracle, estimator, draws,
                             learning_rate=self.learning_rate, accumulate=self.accumulate, eval_every=every,
                             record=self._record, evaluate=evaluate, comparator=comparator,
                             stop=self._cancel_requested, hand=module if hand_written(module) else None)
        finally:
            self._end_training()
        module.eval()
        self.n_rounds_, self.n_queries_, self.n_steps_ = int(info["rounds"]), int(oracle.queries), int(info["steps"])
        return module, info

    def _evaluator(self, X_val: Tensor, y_val: np.ndarray, predict: Callable[[Tensor], Tensor], device: str
                   ) -> Callable[[], dict[str, float]]:
        if self._task == "classification":
            labels = torch.as_tensor(y_val, dtype=torch.long, device=device)

            def evaluate() -> dict[str, float]:
                with torch.no_grad():
                    accuracy = float((predict(X_val).argmax(dim=1) == labels).double().mean())
                return {"val_score": accuracy, "val_loss": 1.0 - accuracy}

            return evaluate
        Y = np.asarray(y_val, dtype=np.float64).reshape(X_val.shape[0], -1)
        truth_scaled = (Y - self.target_min_) / self.target_range_
        truth = torch.as_tensor(truth_scaled, dtype=torch.float32, device=device)
        span = torch.as_tensor(self.target_range_, dtype=torch.float32, device=device)

        def evaluate() -> dict[str, float]:
            with torch.no_grad():
                out = predict(X_val)
                diff = out - truth
                numbers = {"val_loss": float(bandit_loss(diff, self.loss).mean()),
                           "val_rmse": float((diff * span).double().pow(2).mean().sqrt())}
            if Y.shape[0] >= 2:
                numbers["val_score"] = float(r2_score(truth_scaled, out.double().cpu().numpy()))
            return numbers

        return evaluate

    # --------------------------------------------------------------- inputs shared by the estimators
    def _classification_inputs(self, X: Any, y: Any, eval_set: Any, comparator: Any):
        X, Y, ev = class_targets(self, X, y, eval_set)
        classes = self.classes_
        rows = None
        if comparator is not None:
            predicted = np.asarray(_comparator_predict(comparator, X))
            index = np.clip(np.searchsorted(classes, predicted), 0, classes.size - 1)
            rows = np.where(classes[index] == predicted, index, -1)  # an unknown class is always wrong
        return X, Y, ev, rows

    def _regression_inputs(self, X: Any, y: Any, eval_set: Any, comparator: Any):
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, multi_output=True)
        self._y_ndim = np.ndim(y)
        Y = np.asarray(y, dtype=np.float64).reshape(X.shape[0], -1)
        ev = None
        if eval_set is not None:
            X_val = validate_data(self, eval_set[0], reset=False, dtype=np.float64)
            ev = (X_val, np.asarray(eval_set[1], dtype=np.float64).reshape(X_val.shape[0], -1))
        rows = None
        if comparator is not None:
            rows = np.asarray(_comparator_predict(comparator, X), dtype=np.float64).reshape(X.shape[0], -1)
        return X, Y, ev, rows


def _comparator_predict(comparator: Any, X: np.ndarray) -> Any:
    """A comparator is a fitted model (its ``predict``) or a function of X."""
    if hasattr(comparator, "predict"):
        return comparator.predict(X)
    if callable(comparator):
        return comparator(X)
    raise TypeError("comparator must be a fitted model with predict, or a function of X")
