"""DGT training at its algebraic limit: the collapsed linear stack, hand-written gradients, a fused
optimiser step, and T trees trained as one batched program.

The L split layers are linear with no nonlinearity between them, so with x̃ = [x, 1] the split
values are z = P̃ x̃ for one (2^h − 1) × (d + 1) matrix P̃ = [W̃ | c̃]. Writing the first layer as
W̃₁ = [W₁ | b₁] and Q̃_k = W_k Q̃_{k−1} + b_k e_rᵀ (e_r the last unit vector, r = d + 1), P̃ = Q̃_L.
The loss depends on the parameters only through z, so with G = ∂loss/∂z (B × n) everything the
backward pass needs from the batch is M̃ = Gᵀ X̃ (n × r), the only batch-sized product:

* ``"r"`` order (r ≤ n): ∂Q̃_L = M̃ and, for k = L … 2, ∂W_k = ∂Q̃_k Q̃_{k−1}ᵀ, ∂b_k = ∂Q̃_k e_r,
  ∂Q̃_{k−1} = W_kᵀ ∂Q̃_k; then ∂W̃₁ = ∂Q̃₁. Every product has inner size r.
* ``"n"`` order (n < r): with A_k = W_L ⋯ W_{k+1} (A_L = I) and S_k = M̃ Q̃_{k−1}ᵀ
  (S₂ = M̃ W̃₁ᵀ, S_{k+1} = S_k W_kᵀ + g b_kᵀ, g = M̃ e_r): ∂W_k = A_kᵀ S_k, ∂b_k = A_kᵀ g,
  ∂W̃₁ = A₁ᵀ M̃. Every product has inner size n.

These are the exact gradients of the layer-by-layer network (tested against autograd through the
separate layers in float64); the cost per step is O(Σ H_k H_{k−1} · min(r, n)) instead of
O(B · Σ H_k H_{k−1}) forward and backward.

The head (scaled sign with the straight-through window, the AND matrix, the argmax with the
softmax gradient) and the losses (mean squared error on the leaf values, cross-entropy on the leaf
scores, optionally row-weighted) are differentiated by hand as in :mod:`models.dgt.network`; the
optimiser step is the authors' recipe exactly as :func:`models.dgt.train.fit_network` applies it:
ℓ1 (or ℓ2) on every split layer's weights and biases, the gradient's global norm clipped, then
RMSprop, with the cosine-warm-restart learning rate stepped every 10 steps. On the CPU the penalty,
the clip and the RMSprop update run as one compiled pass over each tree's parameters (two sweeps:
norm, then update; for the ℓ1-only recipe the norm reads sign(w) from an int8 copy); elsewhere as
torch operations. One tree on the CPU runs the products as two-dimensional products into buffers
allocated once (:class:`SingleTree`).

T trees of equal shapes (a DGT forest's trees) are stacked on a leading dimension and trained
together with batched matrix products: every tree keeps its own data, batches, permutation
generator, learning state, validation and best epoch, so each is the tree that training it alone
would give (to float rounding).

The package, one part a module: :mod:`~models.dgt.fast.collapsed` (the flat parameter buffers,
the collapsed products for T stacked trees and for one), :mod:`~models.dgt.fast.head` (the head
and the losses by hand), :mod:`~models.dgt.fast.optimiser` (the optimiser step),
:mod:`~models.dgt.fast.kernels` (the compiled loops) and :mod:`~models.dgt.fast.fit` (the jobs and
the training loop).
"""

from models.dgt.fast.collapsed import (
    CollapsedStack,
    FlatParameters,
    SingleTree,
    augment,
    cheapest_order,
    parameter_shapes,
    stack_parameters,
    unstack_parameters,
)
from models.dgt.fast.fit import LOSSES, TreeData, TreeJob, fit_stack, train_jobs
from models.dgt.fast.head import CompiledHead, TorchHead, head_backward, head_forward, loss_and_grad
from models.dgt.fast.kernels import HAVE_NUMBA
from models.dgt.fast.optimiser import StackOptimiser, torch_update

__all__ = [
    "HAVE_NUMBA", "LOSSES", "CollapsedStack", "CompiledHead", "FlatParameters", "SingleTree", "StackOptimiser",
    "TorchHead", "TreeData", "TreeJob", "augment", "cheapest_order", "fit_stack", "head_backward", "head_forward",
    "loss_and_grad", "parameter_shapes", "stack_parameters", "torch_update", "train_jobs", "unstack_parameters",
]
