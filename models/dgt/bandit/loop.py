"""The stream and the learning loop: which row each round shows, the rounds played through the
oracle, one optimiser step every ``accumulate`` rounds, and the records."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from torch import Tensor, nn

from models.dgt.bandit.rounds import AutogradRounds, hand_rounds
from models.dgt.stream import DEFAULT_PASSES, DEFAULT_ROUNDS, MAX_DEFAULT_ROUNDS, default_rounds
from models.ground.errors import TreevizError

# the stream's length lives in models.dgt.stream (no heavy imports), which the family's declaration reads too
__all__ = ["DEFAULT_PASSES", "DEFAULT_ROUNDS", "MAX_DEFAULT_ROUNDS", "default_rounds", "learn", "regret_curve",
           "stream_order"]


def learn(forward: Callable[[Tensor], Tensor], parameters: Iterable[Tensor], X: Tensor, order: Tensor,
          oracle: Any, estimator: Any, draws: Sequence[Tensor], *, learning_rate: float, accumulate: int,
          eval_every: int, record: Callable[..., bool], evaluate: Callable[[], dict[str, float]] | None = None,
          comparator: np.ndarray | None = None, stop: Callable[[], bool] = lambda: False,
          hand: nn.Module | None = None) -> dict[str, Any]:
    """Run the stream: round t shows ``X[order[t]]`` (never a label); ``estimator`` plays through
    ``oracle`` and returns the surrogate whose gradient is g·∇f; one RMSprop step every
    ``accumulate`` rounds (and after the last round). ``record(**numbers)`` every ``eval_every``
    rounds and after the last; it returns False to stop. ``stop()``, asked before every batch of
    rounds, ends the stream at once when True (a cancel between records). ``comparator``:
    per-round losses of a comparator, for the regret. ``hand``: the module that ``forward`` and
    ``parameters`` belong to, to run its rounds by :func:`hand_rounds` (the same arithmetic without
    autograd's overhead) instead of autograd; it must be :func:`hand_written`. Returns ``{"rounds", "steps",
    "stopped"}``."""
    n_rounds, accumulate, eval_every = int(order.shape[0]), max(1, int(accumulate)), max(1, int(eval_every))
    if hand is not None:
        rounds: Any = hand_rounds(hand, learning_rate=learning_rate, accumulate=accumulate)
    else:
        rounds = AutogradRounds(forward, parameters, learning_rate=learning_rate, accumulate=accumulate)
    comparator_sum = None if comparator is None else np.concatenate([[0.0], np.cumsum(comparator)])
    total, window = 0.0, 0.0  # loss incurred since the start, and since the previous record
    t, last, steps, begin = 0, 0, 0, time.perf_counter()
    stopped = False
    while t < n_rounds:
        if stop():
            stopped = True
            break
        upto = min((t // accumulate + 1) * accumulate, (t // eval_every + 1) * eval_every, n_rounds)
        lost = rounds.play(X, order[t:upto], t, [d[t:upto] for d in draws], oracle, estimator)
        total += lost
        window += lost
        t = upto
        if t % accumulate == 0 or t == n_rounds:
            rounds.step()
            steps += 1
        if t % eval_every == 0 or t == n_rounds:
            avg_loss = total / t
            if not math.isfinite(avg_loss):
                raise TreevizError(f"Training diverged by round {t} (the loss played is not a finite number); "
                                   f"lower the learning rate (now {learning_rate:g}).")
            numbers: dict[str, Any] = {"round": t, "queries": int(oracle.queries),
                                       estimator.window_key: estimator.window(window / (t - last)),
                                       "avg_loss": avg_loss}
            if comparator_sum is not None:
                numbers["regret"] = avg_loss - comparator_sum[t] / t
            if evaluate is not None:
                numbers.update(evaluate())
            numbers["elapsed_s"] = time.perf_counter() - begin
            window = 0.0
            last = t
            if not record(**numbers):
                stopped = True
                break
    rounds.close()
    return {"rounds": t, "steps": steps, "stopped": stopped}


def regret_curve(history: Sequence[dict[str, Any]], comparator_losses: Sequence[float] | np.ndarray) -> list[float]:
    """Regret at each record of ``history``: its ``avg_loss`` minus the mean of
    ``comparator_losses`` (one per round, in the stream's order, e.g. ``row_losses[stream_]``)
    over the same rounds."""
    cumulative = np.concatenate([[0.0], np.cumsum(np.asarray(comparator_losses, dtype=np.float64))])
    return [float(r["avg_loss"] - cumulative[int(r["round"])] / int(r["round"])) for r in history]


def stream_order(n_rows: int, n_rounds: int, rng: np.random.Generator) -> np.ndarray:
    """The row shown at each round: passes over the rows, each freshly shuffled, cut at n_rounds."""
    passes = math.ceil(n_rounds / n_rows)
    return np.concatenate([rng.permutation(n_rows) for _ in range(passes)])[:n_rounds]
