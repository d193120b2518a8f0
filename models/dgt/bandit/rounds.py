"""The learner's rounds: the surrogate of a batch of rounds back-propagated through autograd
(any module, any device), or the same arithmetic written out for a one-layer tree or a linear
layer on the CPU (:class:`TreeRounds`, :class:`LinearRounds`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from models.dgt.bandit.kernels import rmsprop, tree_backward, tree_forward
from models.dgt.network import DGTNetwork

RMSPROP_EPS = 1e-5
RMSPROP_ALPHA = 0.99


def row_forward(net: DGTNetwork, x: Tensor) -> Tensor:
    """The network's hard prediction with its straight-through gradients, as
    :meth:`DGTNetwork.head`, except that the scaled sign's factor (mean |z|) is taken per row, so a
    batch of B rounds gives exactly the gradients of B batches of one."""
    return net.head(net.split_values(x), per_row=True)[0]


class AutogradRounds:
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
            rmsprop(param, grad, square, self.lr, self.alpha, self.beta, self.eps)

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
        tree_forward(data, index, self.W, self.b, self.leaves, self.height, z, leaf, theta)
        grad, incurred = estimator.gradient(theta, start, [a.numpy() for a in draws], oracle)
        d = np.ascontiguousarray(grad / self.accumulate, dtype=self.W.dtype)
        tree_backward(data, index, z, leaf, d, self.leaves, self.path_node, self.path_sign, self.scaled,
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
