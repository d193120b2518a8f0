"""Path rewards ``Q`` from split scores ``S`` (paper sign: a sample goes left iff ``s < 0``), with a
Danskin backward, and the tree-consistency check ``q_child <= q_parent``."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from models.latent import heap
from models.latent.params import check_rewards, depth_of_scores
from models.latent.pruning import backend


def _rewards_forward(S: Any, Qt: Any, signed: Any, depth: int, minimum: Any) -> None:
    """Fill node-major ``Qt`` (|T|, n) from ``S`` (n, m); NumPy arrays or tensors alike.

    ``signed[u, 0] = -s_u`` and ``signed[u, 1] = +s_u`` are the signed scores of the edges into
    ``u``'s left and right children, so in heap order ``signed`` lists the edge into every
    non-root node and a level is one broadcast minimum.
    """
    n = Qt.shape[1]
    signed[:, 1] = S.T
    signed[:, 0] = -signed[:, 1]
    Qt[0] = 1.0
    for d in range(depth):
        w = 2**d
        minimum(Qt[w - 1: 2 * w - 1, None], signed[w - 1: 2 * w - 1], out=Qt[2 * w - 1: 4 * w - 1].reshape(w, 2, n))


def _rewards_backward(tot: Any, not_own: Any, depth: int) -> Any:
    """Danskin backward of the path minimum; ``tot`` holds grad_Q node-major and is overwritten.

    The edge into node ``t`` attains ``t``'s path minimum iff ``q_t < q_parent(t)``; otherwise
    (``not_own[t-1] = 1``, i.e. ``q_t >= q_parent(t)``) ``t``'s gradient is carried up to its
    parent, bottom-up. Returns the gradient of the signed scores, ``(m, 2, n)``.
    """
    m, _, n = not_own.shape
    for d in range(depth - 1, 0, -1):
        w = 2**d
        carried = tot[2 * w - 1: 4 * w - 1].reshape(w, 2, n) * not_own[w - 1: 2 * w - 1]
        level = tot[w - 1: 2 * w - 1]
        level += carried[:, 0]
        level += carried[:, 1]
    g = tot[1:].reshape(m, 2, n)
    g -= g * not_own  # keep the gradient only where the edge attains the minimum
    return g


class _PathRewards(torch.autograd.Function):
    """``S -> Q`` with a Danskin backward; see :func:`path_rewards`.

    Works node-major: ``Qt`` is ``(|T|, n)`` contiguous and the output is its transpose, so each
    tree level is a contiguous block of rows. The backward needs only ``Qt``.
    """

    @staticmethod
    def forward(ctx: Any, S: Tensor) -> Tensor:
        n, m = S.shape
        depth = heap.depth_from_n_splits(m)
        S = S.detach()
        Qt = S.new_empty((2 * m + 1, n))
        signed = S.new_empty((m, 2, n))
        if backend.on_numpy(S):
            _rewards_forward(S.numpy(), Qt.numpy(), signed.numpy(), depth, np.minimum)
        else:
            _rewards_forward(S, Qt, signed, depth, torch.minimum)
        ctx.save_for_backward(Qt)
        ctx.depth = depth
        return Qt.t()

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_Q: Tensor) -> Tensor:
        (Qt,) = ctx.saved_tensors
        total, n = Qt.shape
        m = (total - 1) // 2
        if m == 0:
            return grad_Q.new_zeros((n, 0))
        tot = grad_Q.t().to(Qt.dtype).clone(memory_format=torch.contiguous_format)  # (|T|, n), overwritten
        not_own = torch.ge(Qt[1:].view(m, 2, n), Qt[:m].unsqueeze(1), out=Qt.new_empty((m, 2, n)))
        # +s feeds the right child and -s the left one; the result is row-major like S usually is
        if backend.on_numpy(Qt):
            g = _rewards_backward(tot.numpy(), not_own.numpy(), ctx.depth)
            grad_S = np.empty((n, m), dtype=g.dtype)
            np.subtract(g[:, 1], g[:, 0], out=grad_S.T)
            return torch.from_numpy(grad_S)
        g = _rewards_backward(tot, not_own, ctx.depth)
        return (g[:, 1] - g[:, 0]).t()


def path_rewards(S: Tensor) -> Tensor:
    """Path rewards ``Q`` from split scores ``S``: path minimum of the signed scores, paper sign.

    Parameters
    ----------
    S : Tensor, shape (n, 2**D - 1)
        Split score of every sample at every split node (heap order). A sample goes LEFT at
        node ``t`` iff ``S[i, t] < 0`` (the paper's rule; the reference code flips the sign).

    Returns
    -------
    Tensor, shape (n, 2**(D+1) - 1)
        ``q_root = 1``; ``q_{2t+1} = min(q_t, -s_t)`` (left child), ``q_{2t+2} = min(q_t, +s_t)``
        (right child). So ``q_t > 0`` iff the sample's hard path passes through ``t``, and
        ``q_child <= q_parent`` ("tree-consistent"). Same device and dtype as ``S``.

    Notes
    -----
    Computed level by level (a loop over the ``D`` levels only). The result is the transpose of a
    node-major ``(|T|, n)`` buffer, i.e. a non-contiguous ``(n, |T|)`` view; the pruning fast path
    sorts node-major rows and so needs no copy. Call ``.contiguous()`` if you need row-major.

    Gradients follow Danskin's theorem: each ``q_it`` sends its gradient to the one split (with
    sign ``-`` for a left edge, ``+`` for a right edge) attaining the path minimum; the root is a
    constant. This is what autograd through ``torch.minimum`` gives (see
    :func:`models.latent.reference.path_rewards_reference`), implemented as a custom backward
    because ``minimum``'s autograd formula is ~10x slower on CPU. At an exact tie between a node's own edge and its
    parent's path minimum (measure zero for real-valued scores) the whole gradient goes to the
    parent's path, where ``torch.minimum`` would split it in halves; both are valid subgradients.
    """
    depth_of_scores(S)
    return _PathRewards.apply(S)


def is_tree_consistent(Q: Tensor) -> bool:
    """Whether ``q_child <= q_parent`` holds for every sample and node (NaN counts as "no").

    One vectorised comparison, no index tensors: the children ``1 .. |T|-1`` of the split nodes
    ``0 .. m-1`` are the node-major rows ``Q.T[1:]`` viewed as ``(m, 2, n)``. (NumPy on CPU, torch
    elsewhere.)
    """
    check_rewards(Q)
    total = Q.shape[1]
    m = (total - 1) // 2
    Qt = Q.detach().t()  # node-major view: contiguous for Q from path_rewards
    if m == 0:
        return bool(torch.isfinite(Qt).all())
    if backend.on_numpy(Qt):
        q = Qt.numpy()
        return bool((q[1:].reshape(m, 2, -1) <= q[:m, None]).all())
    return bool((Qt[1:].unflatten(0, (m, 2)) <= Qt[:m].unsqueeze(1)).all())
