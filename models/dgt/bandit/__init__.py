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

The package, one concept a module: :mod:`~models.dgt.bandit.oracles` (the oracles and their
losses), :mod:`~models.dgt.bandit.policy` (ε-greedy play), :mod:`~models.dgt.bandit.perturbation`
(the one- and two-point estimators), :mod:`~models.dgt.bandit.rounds` (a batch of rounds through
autograd or by hand) with its compiled loops in :mod:`~models.dgt.bandit.kernels`,
:mod:`~models.dgt.bandit.loop` (the stream and the learning loop),
:mod:`~models.dgt.bandit.simulation` (what every bandit estimator shares),
:mod:`~models.dgt.bandit.trees` (the DGT-Bandit estimators) and :mod:`~models.dgt.bandit.baselines`
(the online linear baselines).
"""

from models.dgt.bandit.baselines import LinearBanditClassifier, LinearBanditRegressor
from models.dgt.bandit.loop import (
    DEFAULT_PASSES,
    DEFAULT_ROUNDS,
    MAX_DEFAULT_ROUNDS,
    default_rounds,
    learn,
    regret_curve,
    stream_order,
)
from models.dgt.bandit.oracles import (
    HUBER_XI,
    LOSSES,
    BanditProtocolError,
    ClassificationOracle,
    RegressionOracle,
    bandit_loss,
)
from models.dgt.bandit.perturbation import ESTIMATORS, OnePoint, TwoPoint
from models.dgt.bandit.policy import EpsilonGreedy, normalised_sigmoids, sigmoid_surrogate
from models.dgt.bandit.rounds import (
    RMSPROP_ALPHA,
    RMSPROP_EPS,
    AutogradRounds,
    LinearRounds,
    TreeRounds,
    hand_rounds,
    hand_written,
    row_forward,
)
from models.dgt.bandit.simulation import DEFAULT_RECORDS, BanditFit, bandit_device
from models.dgt.bandit.trees import DGTBanditClassifier, DGTBanditRegressor, auto_depth, reward_prior

__all__ = [
    "DEFAULT_PASSES", "DEFAULT_RECORDS", "DEFAULT_ROUNDS", "ESTIMATORS", "HUBER_XI", "LOSSES", "MAX_DEFAULT_ROUNDS",
    "RMSPROP_ALPHA", "RMSPROP_EPS", "AutogradRounds", "BanditFit", "BanditProtocolError", "ClassificationOracle",
    "DGTBanditClassifier", "DGTBanditRegressor", "EpsilonGreedy", "LinearBanditClassifier", "LinearBanditRegressor",
    "LinearRounds", "OnePoint", "RegressionOracle", "TreeRounds", "TwoPoint", "auto_depth", "bandit_device",
    "bandit_loss", "default_rounds", "hand_rounds", "hand_written", "learn", "normalised_sigmoids", "regret_curve",
    "reward_prior", "row_forward", "sigmoid_surrogate", "stream_order",
]
