"""The straight-through head and the losses, differentiated by hand: as torch operations over T
stacked trees (:func:`head_forward`, :func:`loss_and_grad`, :func:`head_backward`), and the two
heads a training step uses, :class:`CompiledHead` (one compiled pass, the CPU) and
:class:`TorchHead` (those torch operations, any device), each keeping its epoch's loss and
straight-through window fraction per tree."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from models.dgt.fast import kernels


def head_backward(z: Tensor, leaves: Tensor, A: Tensor, dout: Tensor, leaf: Tensor, p: Tensor,
                  gscale: float, grad_leaves: Tensor) -> tuple[Tensor, Tensor]:
    """∂loss/∂z (T, B, n) through the straight-through head, and ∂loss/∂Θ into ``grad_leaves``.

    The head's value is Θ[l*] and its gradient that of Θ[l*] + (p − p̄)Θ with p = softmax(s Aᵀ),
    s = fac·sign(z), p̄ = p detached: ∂Θ = onehot(l*)ᵀ ∂out (the p and p̄ terms cancel),
    ∂p = ∂out Θᵀ, ∂q = p ⊙ (∂p − ⟨∂p, p⟩), ∂s = ∂q A, ∂z = gscale·1[|z| ≤ 1] ⊙ ∂s. Also returns
    the straight-through window 1[|z| ≤ 1]."""
    onehot = torch.zeros_like(p).scatter_(2, leaf[:, :, None], 1.0)
    torch.bmm(onehot.transpose(1, 2), dout, out=grad_leaves)
    dp = torch.bmm(dout, leaves.transpose(1, 2))
    dq = p * (dp - (dp * p).sum(dim=2, keepdim=True))
    window = (z.abs() <= 1).to(z.dtype)
    return torch.matmul(dq, A).mul_(window).mul_(gscale), window


def head_forward(z: Tensor, leaves: Tensor, At: Tensor, quantizer: str, *, soft: bool = True
                 ) -> tuple[Tensor, Tensor, Tensor | None]:
    """(Θ[l*] (T, B, K), l* (T, B), p (T, B, 2^h) or None) for split values z (T, B, n): the leaf
    from the unscaled signs (right iff z > 0; the reached leaf is the only one with q = h), the
    softmax at the scaled signs (fac = mean |z| per tree for ``"scaled"``, 1 for ``"plain"``)."""
    sgn = torch.where(z > 0, 1.0, -1.0).to(z.dtype)
    q = torch.matmul(sgn, At)
    leaf = q.argmax(dim=2)
    out = torch.gather(leaves, 1, leaf[:, :, None].expand(-1, -1, leaves.shape[2]))
    if not soft:
        return out, leaf, None
    if quantizer == "scaled":
        q = q * z.abs().mean(dim=(1, 2), keepdim=True)
    return out, leaf, torch.softmax(q, dim=2)


def loss_and_grad(kind: str, out: Tensor, y: Tensor, w: Tensor | None) -> tuple[Tensor, Tensor]:
    """Per-tree loss (T,) and ∂loss/∂out (T, B, K): ``"mse"`` the mean over outputs of the squared
    error, ``"ce"`` the cross-entropy of the scores; the mean over rows, or the w-weighted mean."""
    B, K = out.shape[1], out.shape[2]
    if kind == "mse":
        diff = out - y
        per_row = diff.pow(2).mean(dim=2)
        grad = diff * (2.0 / K)
    else:
        logp = torch.log_softmax(out, dim=2)
        per_row = -torch.gather(logp, 2, y[:, :, None])[:, :, 0]
        grad = logp.exp().scatter_add_(2, y[:, :, None], torch.full_like(per_row[:, :, None], -1.0))
    if w is None:
        return per_row.mean(dim=1), grad.mul_(1.0 / B)
    wn = w / w.sum(dim=1, keepdim=True)
    return (per_row * wn).sum(dim=1), grad.mul_(wn[:, :, None])


class CompiledHead:
    """A step's head by :func:`~models.dgt.fast.kernels.fused_head`, on numpy views of the leaf
    table ``leaves`` (T, 2^h, K) and of its gradient ``grad_leaves``: G = ∂loss/∂z, ∂loss/∂Θ, and
    each tree's loss and open-window fraction, summed over the epoch's steps (float64)."""

    def __init__(self, leaves: Tensor, grad_leaves: Tensor, loss: str, quantizer: str) -> None:
        self.leaves = leaves
        self.np_leaves, self.np_grad_leaves = leaves.numpy(), grad_leaves.numpy()
        self.ce, self.scaled = loss == "ce", quantizer == "scaled"
        self.gscale = 2.0 if self.scaled else 1.0
        T = leaves.shape[0]
        self.losses, self.windows, self.total, self.open = (np.zeros(T) for _ in range(4))
        self.dummy_y = np.zeros((1, 1, 1), dtype=self.np_leaves.dtype)
        self.dummy_w = np.zeros((1, 1), dtype=self.np_leaves.dtype)
        self.dummy_labels = np.zeros((1, 1), dtype=np.int64)

    def into(self, z: np.ndarray, y: Tensor, w: Tensor | None, G: np.ndarray) -> None:
        """G = ∂loss/∂z (T, B, n) for split values ``z``, targets ``y`` and row weights ``w``, and
        ∂loss/∂Θ into the leaves' gradient."""
        ce = self.ce
        kernels.fused_head(z, self.np_leaves, self.dummy_y if ce else y.numpy(), y.numpy() if ce else self.dummy_labels,
                           self.dummy_w if w is None else w.numpy(), w is not None, ce, self.scaled, self.gscale, G,
                           self.np_grad_leaves, self.losses, self.windows)
        self.total += self.losses
        self.open += self.windows

    def gradient(self, z: Tensor, y: Tensor, w: Tensor | None) -> Tensor:
        """:meth:`into` with a new G."""
        G = torch.empty_like(z)
        self.into(z.numpy(), y, w, G.numpy())
        return G

    def predict(self, z: Tensor) -> Tensor:
        """Θ[l*] (T, B, K) for split values z (T, B, n)."""
        leaf = torch.empty(z.shape[:2], dtype=torch.long)
        kernels.descend(z.numpy(), leaf.numpy())
        return torch.gather(self.leaves, 1, leaf[:, :, None].expand(-1, -1, self.leaves.shape[2]))

    def epoch_totals(self) -> tuple[Tensor, Tensor]:
        """The epoch's summed loss and open-window fraction per tree (T,), in the leaves' dtype;
        the sums start again at 0."""
        total = torch.zeros(self.leaves.shape[0], dtype=self.leaves.dtype, device=self.leaves.device)
        open_window = torch.zeros_like(total)
        total += torch.as_tensor(self.total, dtype=self.leaves.dtype)
        open_window += torch.as_tensor(self.open, dtype=self.leaves.dtype)
        self.total[:], self.open[:] = 0.0, 0.0
        return total, open_window


class TorchHead:
    """A step's head as torch operations (:func:`head_forward`, :func:`loss_and_grad`,
    :func:`head_backward`) on the leaf table ``leaves`` (T, 2^h, K), writing ∂loss/∂Θ into
    ``grad_leaves``; ``A`` is the network's AND matrix."""

    def __init__(self, leaves: Tensor, grad_leaves: Tensor, A: Tensor, loss: str, quantizer: str) -> None:
        self.leaves, self.grad_leaves = leaves, grad_leaves
        self.At = A.T.contiguous().to(leaves.dtype)
        self.A = A.to(leaves.dtype)
        self.loss, self.quantizer = loss, quantizer
        self.gscale = 2.0 if quantizer == "scaled" else 1.0
        self.total, self.open_window = self._zeros(), self._zeros()

    def gradient(self, z: Tensor, y: Tensor, w: Tensor | None) -> Tensor:
        """G = ∂loss/∂z (T, B, n) for split values ``z``, targets ``y`` and row weights ``w``."""
        out, leaf, p = head_forward(z, self.leaves, self.At, self.quantizer)
        value, dout = loss_and_grad(self.loss, out, y, w)
        self.total += value
        G, window = head_backward(z, self.leaves, self.A, dout, leaf, p, self.gscale, self.grad_leaves)
        self.open_window += window.mean(dim=(1, 2))
        return G

    def predict(self, z: Tensor) -> Tensor:
        """Θ[l*] (T, B, K) for split values z (T, B, n)."""
        return head_forward(z, self.leaves, self.At, self.quantizer, soft=False)[0]

    def epoch_totals(self) -> tuple[Tensor, Tensor]:
        """As :meth:`CompiledHead.epoch_totals`."""
        totals = self.total, self.open_window
        self.total, self.open_window = self._zeros(), self._zeros()
        return totals

    def _zeros(self) -> Tensor:
        return torch.zeros(self.leaves.shape[0], dtype=self.leaves.dtype, device=self.leaves.device)
