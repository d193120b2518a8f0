"""The latent-tree network: split scores → path rewards → pruning QP → z → predictor on [x; z].

Architecture of the authors' reference code [CODE] (it reproduces the parameter counts of [ICML]
Table 4 exactly; see ``tests/models/latent/test_layers.py``). The tags name the sources listed in
``docs/latent_trees.md``:

* splits: ``s(x) = act(BatchNorm1d(Linear_{d → 2^D−1}(x)) + β)`` with act ∈ {identity, ELU};
  β is the extra bias set by the data-dependent initialisation ([ICML] A.4);
* sign convention: the PAPER's — a sample goes LEFT iff s < 0, right otherwise (the reference
  code flips it); the same convention is used by :func:`~models.latent.pruning.path_rewards`,
  the bias initialisation and the rules shown to users;
* predictor f_φ on the concatenation [x; z] over all |T| nodes: one Linear layer, or an MLP of L
  Linear layers with widths 64, 128, 256, … , ELU and dropout between them.
"""

from __future__ import annotations

import torch
from torch import nn

from models.latent import heap
from models.latent.params import READOUT_MODES
from models.latent.pruning import path_rewards, prune, readout
from models.latent.pruning_layer import latent_layer

SPLITS = ("linear", "elu")
READOUTS = READOUT_MODES
FORMULATIONS = ("icml", "preprint")


class SplitLayer(nn.Module):
    """All split scores at once: ``act(BN(x W^T + b) + β)``, shape (n, 2^D − 1)."""

    def __init__(self, n_features: int, depth: int, activation: str = "linear"):
        super().__init__()
        if activation not in SPLITS:
            raise ValueError(f"split activation must be one of {SPLITS}, got {activation!r}")
        n_splits = heap.n_splits(depth)
        self.depth = depth
        self.activation = activation
        self.linear = nn.Linear(n_features, n_splits)
        self.bn = nn.BatchNorm1d(n_splits)
        self.beta = nn.Parameter(torch.zeros(n_splits))

    def pre_activation(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.linear(x)) + self.beta

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pre_activation(x)
        return nn.functional.elu(h) if self.activation == "elu" else h

    @torch.no_grad()
    def init_bias(self, x: torch.Tensor) -> None:
        """Data-dependent bias ([ICML] A.4): top-down, centre each split on the mean score of the
        points that reach it, so points spread over the leaves at initialisation.

        BatchNorm uses the statistics of ``x`` (as in the first training batch of the reference
        code); its running statistics are not touched. A node no point reaches gets minus the
        batch mean. Call this *before* building the optimiser so β stays trainable (the
        reference code re-creates β afterwards, which freezes it; the paper intends it trained).
        """
        h = nn.functional.batch_norm(self.linear(x), None, None, self.bn.weight, self.bn.bias,
                                     training=True, eps=self.bn.eps)
        n = x.shape[0]
        beta = torch.zeros_like(self.beta)
        node = torch.zeros(n, dtype=torch.long, device=x.device)  # split node each sample sits at
        for level in range(self.depth):
            first, last = 2**level - 1, 2 ** (level + 1) - 1
            for t in range(first, last):
                reach = node == t
                beta[t] = -(h[reach, t].mean() if reach.any() else h[:, t].mean())
            cur = node
            s = h[torch.arange(n, device=x.device), cur] + beta[cur]
            node = torch.where(s < 0, 2 * cur + 1, 2 * cur + 2)  # paper: left iff s < 0
        self.beta.copy_(beta)

    @torch.no_grad()
    def folded(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The affine rule of each split with BatchNorm folded in (running statistics).

        Returns (W̃, b̃) with ``s`` having the sign of ``W̃ x + b̃`` (ELU keeps the sign), so a
        sample goes left iff ``W̃ x + b̃ < 0`` in evaluation mode: with BatchNorm's running mean μ,
        variance σ², scale γ and shift β_BN, ``W̃ = γ W / sqrt(σ² + ε)`` and
        ``b̃ = γ (b − μ) / sqrt(σ² + ε) + β_BN + β``.
        """
        bn = self.bn
        inv = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        weight = self.linear.weight * inv[:, None]
        bias = (self.linear.bias - bn.running_mean) * inv + bn.bias + self.beta
        return weight, bias


def make_head(in_features: int, out_features: int, kind: str = "linear", n_layers: int = 2,
              dropout: float = 0.0) -> nn.Module:
    """The predictor f_φ: one Linear layer, or an MLP of ``n_layers`` Linear layers with widths
    64, 128, 256, … (doubling), ELU and dropout after each hidden layer (reference-code widths)."""
    if kind == "linear" or n_layers <= 1:
        return nn.Linear(in_features, out_features)
    if kind != "mlp":
        raise ValueError(f"head must be 'linear' or 'mlp', got {kind!r}")
    layers: list[nn.Module] = []
    width_in, width = in_features, 64
    for _ in range(n_layers - 1):
        layers += [nn.Linear(width_in, width), nn.ELU(), nn.Dropout(dropout)]
        width_in, width = width, width * 2
    layers.append(nn.Linear(width_in, out_features))
    return nn.Sequential(*layers)


class LatentTreeNet(nn.Module):
    """Splits + pruning QP + predictor. ``forward`` returns the prediction and the tree's state.

    Parameters
    ----------
    n_features, n_outputs, depth : sizes
    prune_strength : λ. [ICML]: the pruning strength inside the QP (λ > 0; λ = 0 disables
        pruning, as in the reference code). [PRE]: λ = 1 inside the QP and ``prune_strength``
        weighs the penalty ‖η‖_∞ on the learned per-node preferences η (see :meth:`penalty`).
    readout : "code" (default, hard sparse paths, reproduces the published numbers) or "paper"
        (the exact argmin of eq. 3); see :func:`models.latent.pruning.readout`.
    head_input : "xz" (the papers: [x; z]) or "z".
    """

    def __init__(self, n_features: int, n_outputs: int, depth: int, *, prune_strength: float = 1.0,
                 split: str = "linear", head: str = "linear", head_layers: int = 2, dropout: float = 0.0,
                 readout: str = "code", formulation: str = "icml", head_input: str = "xz"):
        super().__init__()
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}")
        if formulation not in FORMULATIONS:
            raise ValueError(f"formulation must be one of {FORMULATIONS}")
        self.depth = depth
        self.prune_strength = float(prune_strength)
        self.readout_mode = readout
        self.formulation = formulation
        self.head_input = head_input
        self.splits = SplitLayer(n_features, depth, split)
        n_nodes = heap.n_nodes(depth)
        if formulation == "preprint":
            # learned per-node pruning preferences η, initialised U(−1, 1) as in the preprint's code
            self.eta = nn.Parameter(torch.empty(n_nodes).uniform_(-1.0, 1.0))
        else:
            self.register_parameter("eta", None)
        in_head = n_nodes + (n_features if head_input == "xz" else 0)
        self.head = make_head(in_head, n_outputs, head, head_layers, dropout)
        # A frozen pruning vector for inference (None: recompute a from the batch)
        self.register_buffer("frozen_a", None, persistent=False)

    def tree_state(self, x: torch.Tensor, *, a: torch.Tensor | None = None,
                   strength_scale: float = 1.0) -> dict[str, torch.Tensor]:
        """Split scores, rewards, pruning vector and z for a batch.

        ``a`` given: use it (frozen pruning). Otherwise solve the QP on this batch with λ scaled by
        ``strength_scale``. λ competes with a sum over the batch, so scaling it by n / batch_size
        gives a large reference set the a of an "average" training batch: close in the sizes of
        its nonzero entries, but not in which nodes are exactly 0 (a node is pruned only when no
        row of the whole set comes within margin ½ of it, whatever λ; see
        :func:`models.latent.train_loop.frozen_pruning`).
        """
        s = self.splits(x)
        lam = self.prune_strength * strength_scale
        if a is None and self.formulation == "icml" and lam > 0:
            q, a, z = latent_layer(s, lam, shift=0.5, mode=self.readout_mode)  # fused on CPU
            return {"s": s, "q": q, "a": a, "z": z}
        q = path_rewards(s)
        if a is None:
            a = self.pruning_vector(q, strength_scale)
        shift = 0.0 if self.formulation == "preprint" else 0.5  # the preprint's QP has no ½ shift
        z = readout(q, a, mode=self.readout_mode, shift=shift)
        return {"s": s, "q": q, "a": a, "z": z}

    def pruning_vector(self, q: torch.Tensor, strength_scale: float = 1.0) -> torch.Tensor:
        if self.formulation == "preprint":
            return prune(q, strength_scale, eta=self.eta, shift=0.0)
        lam = self.prune_strength * strength_scale
        if lam <= 0:  # the reference code: λ = 0 switches pruning off (the QP is undefined)
            return torch.ones(q.shape[1], dtype=q.dtype, device=q.device)
        return prune(q, lam, shift=0.5)

    def forward(self, x: torch.Tensor, *, a: torch.Tensor | None = None,
                strength_scale: float = 1.0) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        state = self.tree_state(x, a=a, strength_scale=strength_scale)
        features = torch.cat([x, state["z"]], dim=1) if self.head_input == "xz" else state["z"]
        return self.head(features), state

    def penalty(self) -> torch.Tensor:
        """[PRE] outer penalty λ‖η‖_∞ (zero for the ICML formulation)."""
        if self.eta is None:
            return torch.zeros((), device=self.splits.beta.device)
        return self.prune_strength * self.eta.abs().max()


def count_parameters(module: nn.Module) -> int:
    """Trainable parameters (what [ICML] Table 4 counts)."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
