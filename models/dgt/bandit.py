"""DGT-Bandit: a DGT tree learned online from bandit feedback (Karthikeyan et al., TMLR 2022, Alg. 1).

The tree's forward pass gives the gradient of its output f(x) with respect to every parameter
(:mod:`models.dgt.network`), so the gradient of the loss, ℓ'(f(x))·∇f(x), needs only ℓ'(f(x)):
one number per output, estimated from the loss of what was played.

**The protocol.** Rounds t = 1..T show the learner a point x_t of a stream (the training rows
shuffled, reshuffled at every pass; a row seen again is a new round whose queries count again).
The learner never sees a label: it plays a prediction and an *oracle*, which alone holds the
labels, answers the loss of that prediction. The oracle counts queries and raises
:class:`BanditProtocolError` when a round is asked more than its budget (one query, or two for the
two-point estimator).

* Classification (K arms): ε-greedy. k* = argmax θ with θ = f(x_t); the played label ŷ is drawn
  from p(k) = (1 − δ)·1[k = k*] + δ/K; the oracle answers the 0-1 loss ℓ, the reward is r = 1 − ℓ.
  The update is the gradient of (σ(θ_ŷ) − r)²/p(ŷ) with respect to θ_ŷ alone (a sigmoid per
  class, not a softmax), i.e. g = 2/p(ŷ)·(σ(θ_ŷ) − r)·σ(θ_ŷ)(1 − σ(θ_ŷ)) on θ_ŷ, the paper's eq. 8.
  The p of the weight is the p the label was drawn from, exploration mass included.
* Regression: targets min-max scaled to [0, 1] inside the oracle (δ is on that scale). One-point
  estimator: u = ±1 (Rademacher), play θ + δu, g = ℓ(θ + δu)·u/δ; the loss incurred is the loss
  of that played point. Two-point estimator: query θ + δ and θ − δ, g = (ℓ(θ + δ) − ℓ(θ − δ))/(2δ);
  both points are played, so the loss incurred is their mean. For the squared loss the two-point
  g is exactly 2(θ − y) whatever δ. Losses: squared (ŷ − y)², or Huber with ξ = 0.2 (½d² when
  |d| ≤ ξ, else ξ|d| − ½ξ²).
* The learner: the DGT network (L = 1 by default) without penalty, momentum, clipping or
  scheduler; RMSprop (lr 1e-3, α = 0.99, ε = 1e-5; the paper names no optimiser for the bandit, the
  authors' code uses its supervised one); batch 1 with the gradient accumulated over
  ``accumulate`` = 4 rounds, then one step. The surrogate g·f(x) (classification: the squared
  sigmoid loss above, through θ = f(x)) is back-propagated through the straight-through forward.
  Inputs are z-scored with the stream's own mean and standard deviation (features, not labels).
* The stream: ``n_rounds`` rounds, by default 10 passes over the rows, between 20 000 and
  1 000 000 rounds (:func:`default_rounds`; the paper fixes no length, and at lr 1e-3 one pass
  stops a mid-sized table's tree while it is still learning).

**Hand-written rounds.** A one-layer tree on the CPU (the default) runs its rounds by
:class:`TreeRounds`: the forward pass, the estimator's gradient in closed form, the backward pass
of the straight-through network and the RMSprop step written out and compiled, the same arithmetic
as autograd (equal to it to 1e-10 in float64) at about a tenth of the cost per round. The linear
baselines on the CPU run theirs by :class:`LinearRounds` (θ = x Wᵀ + b, ∂W = Σ d xᵀ, the same
step). Stacked layers (L > 1) and a GPU go through autograd.

**Four rounds as one batch.** The parameters change only at the optimiser step, every round's
draws are independent and fixed in advance, and the loss of a batch is the sum of per-round
terms, so the accumulated gradient of 4 single-round backward passes equals one backward pass
over the 4 rounds stacked. One detail keeps this exact: the authors' scaled sign multiplies by
the *batch's* mean |z| (the temperature of the backward softmax), which at batch 1 is the
round's own mean over the nodes. :func:`row_forward` therefore takes that mean per row. The
accumulated gradient is the mean over the rounds of a step (as a batch of 4 with mean reduction).
A record that falls inside a step splits the batch, which is exact for the same reason.

**Records**, every ``eval_every`` rounds: ``round``, ``queries`` (loss queries so far),
``reward`` (classification: mean reward since the previous record) or ``played_loss``
(regression: mean loss incurred since the previous record), ``avg_loss`` (mean loss incurred since
the start: the learner's half of the regret), ``regret`` (``avg_loss`` minus a comparator's mean
loss on the same rounds, when a comparator is given), held-out ``val_score`` (accuracy, or R²),
``val_rmse`` (regression, in the data's units) and ``val_loss`` (0-1 loss of the greedy label, or
the bandit loss on the scaled target) on ``eval_set``, and ``elapsed_s``. Held-out numbers come
from the float32 network at that round; the fitted model is the float64 tree extracted at the end.

**Leaves start at the reward of a guess.** A classification tree's leaf scores start at
logit(1/K) = −log(K − 1) plus the network's small random spread, so σ(θ) starts at the reward of a
uniform guess. Started at σ ≈ 1/2, the many wrong plays of a many-class problem (r = 0 nine
rounds in ten for ten classes) push every played score down, and their gradient through the
splits sends points to whichever leaf has the lowest scores: on digits one leaf ended up holding
976 of the 1 258 training rows and held-out accuracy fell from 0.42 to 0.23 while training went on.
With two classes the offset is 0.

Deviations from the paper: the leaves' start above; the per-row temperature above (needed only
because rounds are batched; it equals batch-1 training); the mean, not the sum, of the accumulated
gradients (RMSprop divides the scale out, up to ε); several regression outputs (the paper has
one) perturb every output with its own Rademacher sign, u ∈ {±1}^K, for both estimators (with one
output the two-point estimator is exactly eq. 10); the online linear baselines use the same
ε-greedy sigmoid learner and the same estimators and optimiser as the tree (the paper's
classification baseline was Vowpal Wabbit's ε-greedy contextual bandit).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from numba import njit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.metrics import r2_score
from sklearn.utils.validation import check_is_fitted, validate_data
from torch import Tensor, nn

from models.base import Callback, TreeEstimator, class_targets, seed_everything
from models.devices import resolve_device
from models.dgt.estimators import DGTClassifier, DGTRegressor, ScaledTargets, _DGTBase, standardiser
from models.dgt.network import DGTNetwork
from models.ground import threads
from models.ground.errors import TreevizError
from models.memory import check_tree_memory
from models.targets import MultiOutputRegression

#: The stream when ``n_rounds`` is None (:func:`default_rounds`): this many passes over the rows, at
#: least DEFAULT_ROUNDS and at most MAX_DEFAULT_ROUNDS rounds, and never less than one pass.
DEFAULT_PASSES = 10
DEFAULT_ROUNDS = 20_000
MAX_DEFAULT_ROUNDS = 1_000_000
#: Records in a run when ``eval_every`` is None (about).
DEFAULT_RECORDS = 50
#: Huber's ξ on the [0, 1]-scaled target (the authors' code's default).
HUBER_XI = 0.2
RMSPROP_EPS = 1e-5
RMSPROP_ALPHA = 0.99
LOSSES = ("squared", "huber")
ESTIMATORS = ("two_point", "one_point")


def auto_depth(n_classes: int) -> int:
    """The height ``depth=None`` gives a classification tree: ⌈log2 K⌉ + 3 for K classes, between 6
    and 8. The floor is the paper's bandit height (h = 6 in its bandit classification runs); above it,
    every class gets leaves of its own with room to split it (a fixed height 3 has 8 leaves, fewer than
    digits' 10 classes). Test accuracy against the linear bandit's, seeds 0-2: digits 0.912 / 0.899
    (h = 7), wine 1.0 / 1.0 (h = 6, as h = 4 and 5), breast_cancer 0.980 / 0.982 (h = 6 as h = 4; h = 5
    gave 0.974), iris 0.911 / 0.800 (h = 6 as h = 4). On the 200 000-row synthetic table (3 classes,
    1 000 000 rounds, seeds 0-1) h = 6 reached 0.908 and 0.900 test accuracy where the earlier floor's
    h = 5 reached 0.887 and 0.895 (CART: 0.881)."""
    return int(min(8, max(6, math.ceil(math.log2(max(2, int(n_classes)))) + 3)))


class BanditProtocolError(RuntimeError):
    """The learner asked the oracle more than a round allows (a bug in the learner, not bad data)."""


# ---------------------------------------------------------------------------------------- oracles
class _Oracle:
    """Holds the labels of a stream and answers loss queries, one round at a time or several
    consecutive rounds at once. ``order[t]`` is the row shown at round t. ``queries`` counts every
    answer; each round may be asked at most ``budget`` times."""

    def __init__(self, targets: Tensor, order: Tensor, budget: int) -> None:
        self.__targets = targets  # name-mangled: nothing outside the oracle reads the labels
        self._order = order
        self._asked = np.zeros(int(order.shape[0]), dtype=np.int32)
        self.budget = int(budget)
        self.queries = 0

    @property
    def n_rounds(self) -> int:
        return int(self._asked.shape[0])

    def _answer(self, start: int, count: int) -> Tensor:
        """Charge one query to each of rounds start..start + count − 1; their targets."""
        stop = start + count
        if start < 0 or stop > self.n_rounds:
            raise BanditProtocolError(f"rounds {start}..{stop - 1} are outside the stream of {self.n_rounds}")
        asked = self._asked[start:stop]
        if asked.size and asked.max() >= self.budget:
            t = start + int(np.argmax(asked >= self.budget))
            raise BanditProtocolError(f"round {t} was already asked {self.budget} time(s), its budget")
        asked += 1
        self.queries += count
        return self.__targets[self._order[start:stop]]

    def _row_targets(self) -> Tensor:
        return self.__targets


class ClassificationOracle(_Oracle):
    """Answers the 0-1 loss of one played label (class index) per round."""

    def __init__(self, labels: Tensor, order: Tensor) -> None:
        super().__init__(labels, order, budget=1)

    def loss(self, start: int, played: Tensor) -> Tensor:
        """0-1 losses (float, shape (B,)) of labels ``played`` at rounds start..start + B − 1."""
        return (played != self._answer(start, played.shape[0])).to(torch.float32)

    def comparator_losses(self, row_predictions: Tensor) -> np.ndarray:
        """Per-round 0-1 losses of a comparator's labels (one per row of the data, not per round;
        not charged as queries: the comparator is not the learner)."""
        wrong = row_predictions[self._order] != self._row_targets()[self._order]
        return wrong.double().cpu().numpy()


def bandit_loss(diff: Tensor, kind: str) -> Tensor:
    """The regression loss of prediction − target, averaged over outputs: squared d², or Huber
    (ξ = 0.2): ½d² when |d| ≤ ξ, else ξ|d| − ½ξ²."""
    if kind == "squared":
        per = diff * diff
    else:
        a = diff.abs()
        per = torch.where(a <= HUBER_XI, 0.5 * diff * diff, HUBER_XI * a - 0.5 * HUBER_XI ** 2)
    return per.mean(dim=-1)


class RegressionOracle(_Oracle):
    """Answers the loss of a played value on targets min-max scaled to [0, 1].

    ``targets`` (n, K) are in the data's units; the scale (``target_min``, ``target_range``; a
    constant target gets range 1) is computed here unless given. ``budget`` is 1 for the one-point
    estimator, 2 for the two-point one."""

    def __init__(self, targets: np.ndarray, order: Tensor, *, loss: str = "squared", budget: int = 2,
                 target_min: np.ndarray | None = None, target_range: np.ndarray | None = None) -> None:
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}")
        Y = np.asarray(targets, dtype=np.float64)
        Y = Y.reshape(Y.shape[0], -1)
        if target_min is None:
            target_min = Y.min(axis=0)
        if target_range is None:
            span = Y.max(axis=0) - target_min
            target_range = np.where(span > 0, span, 1.0)
        self.target_min = np.asarray(target_min, dtype=np.float64).reshape(-1)
        self.target_range = np.asarray(target_range, dtype=np.float64).reshape(-1)
        self.kind = loss
        scaled = torch.tensor((Y - self.target_min) / self.target_range, dtype=torch.float32, device=order.device)
        super().__init__(scaled, order, budget=budget)

    def loss(self, start: int, played: Tensor) -> Tensor:
        """Losses (shape (B,)) of values ``played`` (B, K), on the [0, 1] scale, at rounds
        start..start + B − 1."""
        return bandit_loss(played - self._answer(start, played.shape[0]), self.kind)

    def comparator_losses(self, row_predictions: Tensor) -> np.ndarray:
        """Per-round losses of a comparator's scaled predictions (one row per data row)."""
        diff = row_predictions[self._order] - self._row_targets()[self._order]
        return bandit_loss(diff, self.kind).double().cpu().numpy()


# ----------------------------------------------------------------------------- gradient estimates
class EpsilonGreedy:
    """ε-greedy play with the importance-weighted sigmoid surrogate (eq. 8). One query a round."""

    budget = 1
    window_key = "reward"

    def __init__(self, exploration: float, n_classes: int) -> None:
        self.exploration, self.n_classes = float(exploration), int(n_classes)

    def draws(self, n_rounds: int, generator: torch.Generator) -> tuple[Tensor, ...]:
        """Per round: a uniform number (explore iff < δ) and a uniformly drawn label."""
        return (torch.rand(n_rounds, generator=generator),
                torch.randint(self.n_classes, (n_rounds,), generator=generator))

    def play(self, theta: Tensor, draws: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
        """The played labels ŷ ~ p and p(ŷ), from the scores ``theta`` (B, K) (not differentiated)."""
        uniform, arm = draws
        best = theta.detach().argmax(dim=1)
        played = torch.where(uniform < self.exploration, arm, best)
        spread = self.exploration / self.n_classes
        greedy, other = (torch.tensor(v, dtype=theta.dtype, device=theta.device)
                         for v in (1.0 - self.exploration + spread, spread))
        return played, torch.where(played == best, greedy, other)

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: ClassificationOracle
                 ) -> tuple[Tensor, Tensor]:
        """(surrogate summed over the rounds, loss incurred per round)."""
        played, prob = self.play(theta, draws)
        lost = oracle.loss(start, played)
        return sigmoid_surrogate(theta, played, 1.0 - lost, prob), lost

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: ClassificationOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The same play as :meth:`__call__` in numpy: (the surrogate's gradient with respect to
        ``theta`` in closed form, loss incurred per round). Eq. 8: 2/p(ŷ)·(σ(θ_ŷ) − r)·σ(θ_ŷ)(1 − σ(θ_ŷ))
        on θ_ŷ, 0 elsewhere."""
        uniform, arm = draws
        rows = np.arange(theta.shape[0])
        best = theta.argmax(axis=1)
        played = np.where(uniform < self.exploration, arm, best)
        spread = self.exploration / self.n_classes
        prob = np.where(played == best, 1.0 - self.exploration + spread, spread).astype(theta.dtype)
        lost = oracle.loss(start, torch.from_numpy(played)).numpy()
        s = 1.0 / (1.0 + np.exp(-theta[rows, played]))
        grad = np.zeros_like(theta)
        grad[rows, played] = 2.0 * (s - (1.0 - lost.astype(theta.dtype))) * s * (1.0 - s) / prob
        return grad, lost

    def window(self, mean_loss: float) -> float:
        return 1.0 - mean_loss


def sigmoid_surrogate(theta: Tensor, played: Tensor, reward: Tensor, prob: Tensor) -> Tensor:
    """Σ_rounds (σ(θ_ŷ) − r)² / p(ŷ): its gradient touches θ_ŷ only and equals eq. 8 there."""
    s = torch.sigmoid(theta.gather(1, played[:, None])[:, 0])
    return ((s - reward).pow(2) / prob).sum()


class _Perturbation:
    window_key = "played_loss"

    def __init__(self, delta: float) -> None:
        self.delta = float(delta)

    def draws(self, n_rounds: int, generator: torch.Generator, n_outputs: int = 1) -> tuple[Tensor, ...]:
        """Per round: a Rademacher sign u ∈ {±1}^K."""
        return (torch.randint(2, (n_rounds, n_outputs), generator=generator).to(torch.float32) * 2 - 1,)

    def window(self, mean_loss: float) -> float:
        return mean_loss


class OnePoint(_Perturbation):
    """Play θ + δu, g = ℓ(θ + δu)·u/δ (eq. 9). One query a round; the loss incurred is ℓ(θ + δu)."""

    budget = 1

    def estimate(self, loss_played: Tensor, u: Tensor) -> Tensor:
        return loss_played[:, None] * u / self.delta

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: RegressionOracle
                 ) -> tuple[Tensor, Tensor]:
        (u,) = draws
        lost = oracle.loss(start, theta.detach() + self.delta * u)
        return (self.estimate(lost, u) * theta).sum(), lost

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: RegressionOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`__call__` in numpy: (the surrogate's gradient with respect to ``theta``, which is
        the estimate itself, loss incurred per round)."""
        (u,) = draws
        lost = oracle.loss(start, torch.from_numpy(theta + self.delta * u)).numpy()
        return (lost[:, None] * u / self.delta).astype(theta.dtype), lost


class TwoPoint(_Perturbation):
    """Query θ + δu and θ − δu, g = (ℓ(θ + δu) − ℓ(θ − δu))/(2δ)·u (eq. 10; with one output u² = 1,
    so g is eq. 10 whatever u). Two queries a round; the loss incurred is their mean."""

    budget = 2

    def estimate(self, loss_plus: Tensor, loss_minus: Tensor, u: Tensor) -> Tensor:
        return ((loss_plus - loss_minus) / (2 * self.delta))[:, None] * u

    def __call__(self, theta: Tensor, start: int, draws: Sequence[Tensor], oracle: RegressionOracle
                 ) -> tuple[Tensor, Tensor]:
        (u,) = draws
        centre = theta.detach()
        plus = oracle.loss(start, centre + self.delta * u)
        minus = oracle.loss(start, centre - self.delta * u)
        return (self.estimate(plus, minus, u) * theta).sum(), 0.5 * (plus + minus)

    def gradient(self, theta: np.ndarray, start: int, draws: Sequence[np.ndarray], oracle: RegressionOracle
                 ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`__call__` in numpy: (the surrogate's gradient with respect to ``theta``, which is
        the estimate itself, loss incurred per round)."""
        (u,) = draws
        plus = oracle.loss(start, torch.from_numpy(theta + self.delta * u)).numpy()
        minus = oracle.loss(start, torch.from_numpy(theta - self.delta * u)).numpy()
        return (((plus - minus) / (2 * self.delta))[:, None] * u).astype(theta.dtype), 0.5 * (plus + minus)


def bandit_device(device: str) -> str:
    """The device of the online learner: ``"auto"`` means the CPU here, because one round is a
    handful of tiny tensor operations whose kernel launches cost more on a GPU than the arithmetic
    (20 000 rounds took 3.5 times longer on an H100 than on one CPU thread); "cuda" is still
    honoured when asked for."""
    return "cpu" if device == "auto" else resolve_device(device)


# --------------------------------------------------------------------------------------- learners
def row_forward(net: DGTNetwork, x: Tensor) -> Tensor:
    """The network's hard prediction with its straight-through gradients, as
    :meth:`DGTNetwork.head`, except that the scaled sign's factor (mean |z|) is taken per row, so a
    batch of B rounds gives exactly the gradients of B batches of one."""
    return net.head(net.split_values(x), per_row=True)[0]


class _AutogradRounds:
    """Rounds through autograd: the surrogate of a batch of rounds is back-propagated through
    ``forward``, and torch's RMSprop steps. Any module, any device."""

    def __init__(self, forward: Callable[[Tensor], Tensor], parameters: Iterable[Tensor], *, learning_rate: float,
                 accumulate: int) -> None:
        self.forward, self.accumulate = forward, accumulate
        self.optimizer = torch.optim.RMSprop(list(parameters), lr=float(learning_rate), alpha=RMSPROP_ALPHA,
                                             eps=RMSPROP_EPS, momentum=0.0)
        self.optimizer.zero_grad(set_to_none=True)

    def play(self, X: Tensor, rows: Tensor, start: int, draws: Sequence[Tensor], oracle: Any, estimator: Any
             ) -> float:
        theta = self.forward(X[rows])
        surrogate, incurred = estimator(theta, start, draws, oracle)
        (surrogate / self.accumulate).backward()
        return float(incurred.detach().sum(dtype=torch.float64))

    def step(self) -> None:
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def close(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)


@njit(cache=True, nogil=True)
def _tree_forward(X, rows, W, b, leaves, height, z, leaf, theta):  # pragma: no cover - compiled
    """z = x W^T + b per round's row, the reached leaf (right iff z > 0) and θ = Θ[leaf]."""
    n_nodes, d = W.shape
    for i in range(rows.shape[0]):
        r = rows[i]
        for j in range(n_nodes):
            acc = b[j]
            for k in range(d):
                acc += W[j, k] * X[r, k]
            z[i, j] = acc
        node = 0
        for _ in range(height):
            node = 2 * node + 1 + (1 if z[i, node] > 0 else 0)
        leaf[i] = node - n_nodes
        for k in range(leaves.shape[1]):
            theta[i, k] = leaves[leaf[i], k]


@njit(cache=True, nogil=True)
def _tree_backward(X, rows, z, leaf, dout, leaves, path_node, path_sign, scaled, gscale, gW, gb, gleaves
                   ):  # pragma: no cover - compiled
    """Accumulate the gradients of Σ_i dout_i·o_i (o_i the network's straight-through output)
    into gW, gb and gleaves; the formulas are :class:`TreeRounds`'. The AND matrix is given by its
    nonzero entries: leaf m's row has ``path_sign[m, k]`` at node ``path_node[m, k]`` (k < h,
    nodes ascending), so q = A s and Aᵀ ∂q cost 2^h·h instead of 2^h·(2^h − 1)."""
    n_leaves, height = path_node.shape
    n_nodes, K = z.shape[1], leaves.shape[1]
    s = np.empty(n_nodes, dtype=z.dtype)
    p = np.empty(n_leaves, dtype=z.dtype)
    dq = np.empty(n_leaves, dtype=z.dtype)
    ds = np.empty(n_nodes, dtype=z.dtype)
    for i in range(rows.shape[0]):
        fac = 1.0
        if scaled:
            fac = 0.0
            for j in range(n_nodes):
                fac += abs(z[i, j])
            fac /= n_nodes
        for j in range(n_nodes):
            s[j] = fac if z[i, j] > 0 else -fac
        top = -np.inf
        for m in range(n_leaves):
            q = 0.0
            for k in range(height):
                q += path_sign[m, k] * s[path_node[m, k]]
            p[m] = q
            top = max(top, q)
        total = 0.0
        for m in range(n_leaves):
            p[m] = np.exp(p[m] - top)
            total += p[m]
        centre = 0.0
        for m in range(n_leaves):
            p[m] /= total
            dp = 0.0
            for k in range(K):
                dp += leaves[m, k] * dout[i, k]
            dq[m] = dp
            centre += p[m] * dp
        ds[:] = 0.0
        for m in range(n_leaves):
            g = p[m] * (dq[m] - centre)
            for k in range(height):
                ds[path_node[m, k]] += path_sign[m, k] * g
        r = rows[i]
        for j in range(n_nodes):
            if abs(z[i, j]) <= 1:
                dz = ds[j] * gscale
                gb[j] += dz
                for k in range(X.shape[1]):
                    gW[j, k] += dz * X[r, k]
        for k in range(K):
            gleaves[leaf[i], k] += dout[i, k]


@njit(cache=True, nogil=True)
def _rmsprop(param, grad, square, lr, alpha, beta, eps):  # pragma: no cover - compiled
    """torch's RMSprop step (no momentum, not centred; β = 1 − α) on flat arrays; the gradient is
    zeroed."""
    for j in range(param.shape[0]):
        g = grad[j]
        square[j] = square[j] * alpha + beta * g * g
        param[j] -= lr * (g / (np.sqrt(square[j]) + eps))
        grad[j] = 0.0


class _HandRounds:
    """What the hand-written rounds share: the parameters' flat views with their gradient and
    RMSprop buffers, torch's RMSprop constants in the parameters' dtype, and the stream's rows as a
    numpy array (taken once, at the first round)."""

    def __init__(self, params: Sequence[np.ndarray], *, learning_rate: float, accumulate: int) -> None:
        self.grads = [np.zeros_like(a) for a in params]
        self.flat = [(a.reshape(-1), g.reshape(-1), np.zeros(a.size, dtype=a.dtype))
                     for a, g in zip(params, self.grads)]
        dtype = params[0].dtype.type
        self.lr, self.alpha, self.eps = dtype(learning_rate), dtype(RMSPROP_ALPHA), dtype(RMSPROP_EPS)
        self.beta = dtype(1.0 - RMSPROP_ALPHA)
        self.accumulate = accumulate
        self._X: np.ndarray | None = None

    def rows(self, X: Tensor) -> np.ndarray:
        if self._X is None:
            self._X = np.ascontiguousarray(X.detach().cpu().numpy())
        return self._X

    def step(self) -> None:
        """RMSprop (no momentum, not centred) as torch computes it, in place."""
        for param, grad, square in self.flat:
            _rmsprop(param, grad, square, self.lr, self.alpha, self.beta, self.eps)

    def close(self) -> None:
        for grad in self.grads:
            grad.fill(0.0)


class TreeRounds(_HandRounds):
    """Rounds of a one-layer DGT tree on the CPU with the backward pass written out: the same
    arithmetic as autograd through :func:`row_forward` and the estimator's surrogate, and the same
    RMSprop step, as three compiled loops (a round of four cost about 1.4 ms through autograd,
    most of it per-operation overhead on a few thousand multiplications).

    With B rounds (rows x_i), z = x W^T + b, the reached leaf l*_i, θ_i = Θ[l*_i] and
    d_i = ∂surrogate/∂θ_i (the estimator's closed form, divided by the rounds per step):

    * Θ[l*_i] += d_i (the one-hot argmax: the softmax term has value 0, so no gradient to Θ);
    * ∂p_i = Θ d_i, ∂q_i = p_i ⊙ (∂p_i − p_i·∂p_i) (the softmax p_i of q_i = A s_i);
    * ∂s_i = Aᵀ ∂q_i, ∂z_i = gscale·1[|z_i| ≤ 1] ⊙ ∂s_i (the sign's straight-through window;
      gscale 2 for the scaled sign, 1 for the plain one; the scale mean|z_i| has no gradient);
    * ∂W = Σ_i ∂z_i x_iᵀ, ∂b = Σ_i ∂z_i.

    The parameters are updated in place through numpy views of the module's tensors, so the module
    (its held-out evaluation and the extracted tree) sees every step."""

    def __init__(self, net: DGTNetwork, *, learning_rate: float, accumulate: int) -> None:
        if not hand_written(net):
            raise ValueError("TreeRounds needs a one-layer DGT network on the CPU")
        layer = net.layers[0]
        self.W, self.b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
        self.leaves = net.leaves.detach().numpy()
        super().__init__((self.W, self.b, self.leaves), learning_rate=learning_rate, accumulate=accumulate)
        dtype = self.W.dtype.type
        A = net.A.detach().cpu().numpy()
        self.height, self.scaled = int(net.height), net.quantizer == "scaled"
        # the AND matrix's nonzeros: every leaf's row has h of them, one per node on its path
        self.path_node = np.ascontiguousarray(np.nonzero(A)[1].reshape(A.shape[0], self.height), dtype=np.int64)
        self.path_sign = np.take_along_axis(A, self.path_node, axis=1).astype(self.W.dtype)
        self.gscale = dtype(2.0 if self.scaled else 1.0)

    def play(self, X: Tensor, rows: Tensor, start: int, draws: Sequence[Tensor], oracle: Any, estimator: Any
             ) -> float:
        data = self.rows(X)
        index = rows.numpy()
        B, n_nodes = index.shape[0], self.b.shape[0]
        z = np.empty((B, n_nodes), dtype=self.W.dtype)
        leaf = np.empty(B, dtype=np.int64)
        theta = np.empty((B, self.leaves.shape[1]), dtype=self.W.dtype)
        _tree_forward(data, index, self.W, self.b, self.leaves, self.height, z, leaf, theta)
        grad, incurred = estimator.gradient(theta, start, [a.numpy() for a in draws], oracle)
        d = np.ascontiguousarray(grad / self.accumulate, dtype=self.W.dtype)
        _tree_backward(data, index, z, leaf, d, self.leaves, self.path_node, self.path_sign, self.scaled,
                       self.gscale, *self.grads)
        return float(incurred.sum(dtype=np.float64))



class LinearRounds(_HandRounds):
    """Rounds of the linear baseline θ = x Wᵀ + b on the CPU with its gradient written out, as
    :class:`TreeRounds` does for the tree: with d_i = ∂surrogate/∂θ_i (the estimator's closed form,
    divided by the rounds per step), ∂W = Σ_i d_i x_iᵀ and ∂b = Σ_i d_i, then the same RMSprop step.
    Through autograd a round of four cost about 0.9 ms, nearly all of it per-operation overhead on
    an 11 × 1 weight: Table 6's 208 800-round stream took 46 s, against about 10 s by hand. The
    parameters are updated in place through numpy views of the layer's tensors."""

    def __init__(self, layer: nn.Linear, *, learning_rate: float, accumulate: int) -> None:
        if not (isinstance(layer, nn.Linear) and layer.weight.device.type == "cpu"):
            raise ValueError("LinearRounds needs a linear layer on the CPU")
        self.W, self.b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
        super().__init__((self.W, self.b), learning_rate=learning_rate, accumulate=accumulate)
        self.gW, self.gb = self.grads

    def play(self, X: Tensor, rows: Tensor, start: int, draws: Sequence[Tensor], oracle: Any, estimator: Any
             ) -> float:
        x = self.rows(X)[rows.numpy()]
        theta = x @ self.W.T + self.b
        grad, incurred = estimator.gradient(theta, start, [a.numpy() for a in draws], oracle)
        d = (grad / self.accumulate).astype(self.W.dtype, copy=False)
        self.gW += d.T @ x
        self.gb += d.sum(axis=0)
        return float(incurred.sum(dtype=np.float64))


def hand_written(module: nn.Module) -> bool:
    """Whether ``module``'s rounds run by hand (:func:`hand_rounds`): a one-layer DGT network or a
    linear layer, on the CPU."""
    if isinstance(module, nn.Linear):
        return module.weight.device.type == "cpu"
    return isinstance(module, DGTNetwork) and len(module.layers) == 1 and module.leaves.device.type == "cpu"


def hand_rounds(module: nn.Module, *, learning_rate: float, accumulate: int) -> TreeRounds | LinearRounds:
    """The hand-written rounds of a module :func:`hand_written` accepts."""
    if not hand_written(module):
        raise ValueError("hand-written rounds need a one-layer DGT network or a linear layer on the CPU")
    kind = LinearRounds if isinstance(module, nn.Linear) else TreeRounds
    return kind(module, learning_rate=learning_rate, accumulate=accumulate)


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
        rounds = _AutogradRounds(forward, parameters, learning_rate=learning_rate, accumulate=accumulate)
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


def default_rounds(n_rows: int) -> int:
    """The stream's length when ``n_rounds`` is None: DEFAULT_PASSES passes over the ``n_rows``
    rows, kept between DEFAULT_ROUNDS and MAX_DEFAULT_ROUNDS rounds, and never less than one pass.

    At the paper's learning rate (1e-3, no schedule) the held-out accuracy is still climbing after
    one pass over a mid-sized table, so one pass (the earlier default) stopped it early: on a
    20 000-row synthetic table (14 000 training rows, 3 classes, h = 5) the validation accuracy was
    0.78 after one pass, 0.85 after 4, 0.88 after 10 and 0.90 after 30 (test 0.906); the table's CART
    scores 0.843. Small data keep their 20 000 rounds (digits: 16 passes)."""
    n = int(n_rows)
    return max(n, min(MAX_DEFAULT_ROUNDS, max(DEFAULT_ROUNDS, DEFAULT_PASSES * n)))


def stream_order(n_rows: int, n_rounds: int, rng: np.random.Generator) -> np.ndarray:
    """The row shown at each round: passes over the rows, each freshly shuffled, cut at n_rounds."""
    passes = math.ceil(n_rounds / n_rows)
    return np.concatenate([rng.permutation(n_rows) for _ in range(passes)])[:n_rounds]


# ------------------------------------------------------------------------------- shared simulation
class _BanditFit:
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


def reward_prior(n_classes: int) -> float:
    """logit(1/K) = −log(K − 1): the score whose sigmoid is the reward of a uniform guess among K
    classes (0 for two classes)."""
    return -math.log(max(1, int(n_classes) - 1))


def _tree_builder(depth: int, n_layers: int, quantizer: str, leaf_offset: float = 0.0):
    def build(n_features: int, n_outputs: int, generator: torch.Generator):
        net = DGTNetwork(n_features, depth, n_outputs, n_layers=n_layers, quantizer=quantizer, generator=generator)
        with torch.no_grad():
            net.leaves.add_(leaf_offset)
        return net, lambda x: row_forward(net, x), lambda x: net(x)[0]

    return build


def _linear_builder(n_features: int, n_outputs: int, generator: torch.Generator):
    """Logits Wx + b (or wx + b): PyTorch's default weight bound 1/√d, zero bias."""
    layer = nn.Linear(n_features, n_outputs)
    with torch.no_grad():
        bound = 1.0 / math.sqrt(n_features)
        layer.weight.uniform_(-bound, bound, generator=generator)
        layer.bias.zero_()
    return layer, layer, layer


# ------------------------------------------------------------------------------- the tree estimators
class _DGTBanditBase(_BanditFit, _DGTBase):
    """What the two DGT-Bandit estimators share: the hard tree and model files of ``_DGTBase``, the
    bandit simulation of ``_BanditFit``."""

    _expected_failed_checks: ClassVar[dict[str, str]] = {}

    def _fit_bandit(self, X: np.ndarray, targets: np.ndarray, n_outputs: int, eval_set: Any,
                    callbacks: Iterable[Callback] | None, feature_names: Sequence[str] | None,
                    comparator_rows: np.ndarray | None) -> None:
        self._set_feature_names(feature_names, self.n_features_in_)
        self.depth_ = auto_depth(n_outputs) if self.depth is None else int(self.depth)
        check_tree_memory("A DGT-Bandit tree", self.depth_, X.shape[0], X.shape[1], n_outputs)
        # classification leaves start at the reward of a uniform guess (see the module docstring)
        offset = reward_prior(n_outputs) if self._task == "classification" else 0.0
        build = _tree_builder(self.depth_, int(self.n_layers), self.quantizer, offset)
        net, _ = self._simulate(X, targets, n_outputs, build, eval_set, callbacks, comparator_rows)
        self.device_ = self._fit_device()  # "auto": the CPU, as bandit_device
        self._set_tree(net, X)

    def _build_tree(self, reached: np.ndarray | None) -> None:
        super()._build_tree(reached)
        meta = dict(self.tree_.meta)
        meta["feedback"] = "bandit"
        meta["notes"] = [*meta.get("notes", []),
                         f"Learned from bandit feedback: {self.n_rounds_} rounds, {self.n_queries_} loss queries; "
                         "no label was seen."]
        self.tree_ = dataclasses.replace(self.tree_, meta=meta)

    def _get_model_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self, "tree_")
        learned = {"n_rounds_": self.n_rounds_, "n_queries_": self.n_queries_, "n_steps_": self.n_steps_,
                   "depth_": self._height()}
        return learned, self._tree_arrays()

    def _set_model_state(self, learned: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        self.n_rounds_ = int(learned.get("n_rounds_", 0))
        self.n_queries_ = int(learned.get("n_queries_", 0))
        self.n_steps_ = int(learned.get("n_steps_", 0))
        self.depth_ = int(learned.get("depth_", self.depth if self.depth is not None else 0))
        self._restore_tree(arrays)


def _sigmoid_leaves(scores: np.ndarray) -> np.ndarray:
    """Leaf class scores as the normalised per-class sigmoids: σ(θ_k) is the leaf's estimate of the
    reward of playing k, so their normalisation is the leaf's class distribution (argmax = argmax θ)."""
    s = 1.0 / (1.0 + np.exp(-scores))
    return s / s.sum(axis=1, keepdims=True)


class DGTBanditClassifier(ClassifierMixin, _DGTBanditBase):
    """A hard oblique tree of height ``depth`` learned from bandit feedback: each round it plays one
    label (ε-greedy) and is told only whether that label was right.

    ``fit(X, y)`` simulates the bandit: ``y`` is given only to the oracle, which answers the 0-1
    loss of each played label. See the module docstring for the protocol.

    Parameters
    ----------
    depth, n_layers, quantizer : the DGT network (height h, L linear layers, sign quantiser).
        ``depth=None``: :func:`auto_depth` of the number of classes; the height used is ``depth_``.
    exploration : float
        δ: probability of playing a uniformly drawn label instead of the greedy one (0.3).
    learning_rate : float
        RMSprop step size (1e-3; ε = 1e-5, no momentum, clipping or schedule).
    accumulate : int
        Rounds per optimiser step (batch 1, gradients accumulated; 4).
    n_rounds : int or None
        Rounds in the stream (each round one loss query); None: :func:`default_rounds` (10 passes,
        between 20 000 and 1 000 000 rounds, at least one pass).
        Passes over the data reshuffle, and count as new queries.
    eval_every : int or None
        Rounds between records; None: about 50 records.
    device, random_state

    Attributes
    ----------
    tree_, split_weight_, split_bias_, leaves_ : the extracted hard tree (the model).
    history_ : list of dict
        ``round``, ``queries``, ``reward``, ``avg_loss``, ``regret`` (with a comparator),
        ``val_score`` (accuracy) and ``val_loss`` (with an ``eval_set``), ``elapsed_s``.
    n_rounds_, n_queries_, n_steps_ : rounds played, loss queries, optimiser steps.
    stream_ : ndarray
        The training row shown at each round.
    """

    _task = "classification"

    def __init__(self, *, depth=None, n_layers=1, quantizer="scaled", exploration=0.3, learning_rate=1e-3, accumulate=4,
                 n_rounds=None, eval_every=None, device="auto", random_state=0):
        self.depth = depth
        self.n_layers = n_layers
        self.quantizer = quantizer
        self.exploration = exploration
        self.learning_rate = learning_rate
        self.accumulate = accumulate
        self.n_rounds = n_rounds
        self.eval_every = eval_every
        self.device = device
        self.random_state = random_state

    def fit(self, X: Any, y: Any, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None, feature_names: Sequence[str] | None = None,
            comparator: Any = None) -> DGTBanditClassifier:
        """Learn from bandit feedback on the stream of X's rows. ``comparator``: a fitted model (or a
        function of X) whose loss on the same rounds gives the ``regret`` records."""
        X, Y, ev, rows = self._classification_inputs(X, y, eval_set, comparator)
        self._fit_bandit(X, Y, self.classes_.size, ev, callbacks, feature_names, rows)
        return self

    def _leaf_values(self) -> np.ndarray:
        return _sigmoid_leaves(self.leaves_)

    predict_proba = DGTClassifier.predict_proba
    predict = DGTClassifier.predict
    _output_names = DGTClassifier._output_names


class DGTBanditRegressor(MultiOutputRegression, RegressorMixin, ScaledTargets, _DGTBanditBase):
    """A hard oblique tree learned from bandit feedback for regression: each round it plays a
    perturbed value (one-point) or two (two-point) and is told only their loss.

    Parameters as :class:`DGTBanditClassifier`, with, instead of ``exploration``:

    estimator : {"two_point", "one_point"}
        Two loss queries a round (eq. 10) or one (eq. 9).
    delta : float
        δ, the perturbation on the [0, 1]-scaled target (0.5).
    loss : {"squared", "huber"}
        The loss the oracle answers: (ŷ − y)², or Huber with ξ = 0.2.

    ``history_`` records ``played_loss`` instead of ``reward``, and ``val_rmse`` (data units),
    ``val_score`` (R²) and ``val_loss`` (scaled) with an ``eval_set``. ``target_min_`` and
    ``target_range_`` are the oracle's scale: the only label statistics the learner gets, to
    state its predictions in the data's units.
    """

    _task = "regression"
    _expected_failed_checks: ClassVar[dict[str, str]] = {
        "check_regressors_train":
            "R² > 0.5 on scikit-learn's regression problem needs about 2 000 bandit rounds; the contract test's "
            "settings play 200 to stay fast (2 000 rounds and the defaults' 20 000 pass the check)",
    }

    def __init__(self, *, depth=3, n_layers=1, quantizer="scaled", estimator="two_point", delta=0.5, loss="squared",
                 learning_rate=1e-3, accumulate=4, n_rounds=None, eval_every=None, device="auto", random_state=0):
        self.depth = depth
        self.n_layers = n_layers
        self.quantizer = quantizer
        self.estimator = estimator
        self.delta = delta
        self.loss = loss
        self.learning_rate = learning_rate
        self.accumulate = accumulate
        self.n_rounds = n_rounds
        self.eval_every = eval_every
        self.device = device
        self.random_state = random_state

    def fit(self, X: Any, y: Any, *, callbacks: Iterable[Callback] | None = None,
            eval_set: tuple[Any, Any] | None = None, feature_names: Sequence[str] | None = None,
            comparator: Any = None) -> DGTBanditRegressor:
        """Learn from bandit feedback; ``comparator`` as :meth:`DGTBanditClassifier.fit`."""
        X, Y, ev, rows = self._regression_inputs(X, y, eval_set, comparator)
        self._fit_bandit(X, Y, Y.shape[1], ev, callbacks, feature_names, rows)
        return self

    predict = DGTRegressor.predict
    _output_names = DGTRegressor._output_names


# ------------------------------------------------------------------------------ the linear baselines
class _LinearBandit(_BanditFit, BaseEstimator):
    """An online linear model under the same protocol, estimators and optimiser as DGT-Bandit (not
    a family: a baseline for comparisons). Same ``fit`` arguments, records and attributes
    (``coef_`` (K, d) and ``intercept_`` (K,) in the data's units instead of a tree)."""

    _notify = TreeEstimator._notify
    _begin_training = TreeEstimator._begin_training
    _record = TreeEstimator._record
    _cancel_requested = TreeEstimator._cancel_requested
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
        return _sigmoid_leaves(self._scores(X))

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
