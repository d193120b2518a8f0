"""Quasi-hyperbolic Adam (Ma & Yarats, ICLR 2019), the optimiser the latent-tree papers use.

Update for a parameter θ with gradient g at step t (bias-corrected moments as in Adam)::

    m ← β1 m + (1 − β1) g          v ← β2 v + (1 − β2) g²
    m̂ = m / (1 − β1^t)              v̂ = v / (1 − β2^t)
    θ ← θ − lr · [(1 − ν1) g + ν1 m̂] / (sqrt((1 − ν2) g² + ν2 v̂) + ε)

With ν1 = ν2 = 1 this is exactly Adam. The latent-tree reference code uses NODE's settings,
lr = 1e-3, nus = (0.7, 1.0), betas = (0.995, 0.998), which the papers call the defaults.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class QHAdam(torch.optim.Optimizer):
    """Quasi-hyperbolic Adam.

    Parameters
    ----------
    params : iterable of parameters or parameter groups
    lr : float
    betas : (β1, β2) moment decay rates
    nus : (ν1, ν2) immediate-discount factors (1, 1 gives Adam)
    eps : float
    weight_decay : float
        L2 penalty added to the gradient (0 in the papers).
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, betas: tuple[float, float] = (0.995, 0.998),
                 nus: tuple[float, float] = (0.7, 1.0), eps: float = 1e-8, weight_decay: float = 0.0):
        if lr <= 0:
            raise ValueError(f"QHAdam needs a positive learning rate, got {lr}.")
        for name, pair in (("betas", betas), ("nus", nus)):
            if not all(0.0 <= v <= 1.0 for v in pair):
                raise ValueError(f"QHAdam {name} must lie in [0, 1], got {pair}.")
        super().__init__(params, {"lr": lr, "betas": betas, "nus": nus, "eps": eps,
                                  "weight_decay": weight_decay})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            nu1, nu2 = group["nus"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if group["weight_decay"]:
                    grad = grad.add(p, alpha=group["weight_decay"])
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["m"] = torch.zeros_like(p)
                    state["v"] = torch.zeros_like(p)
                state["step"] += 1
                t = state["step"]
                m, v = state["m"], state["v"]
                m.mul_(beta1).add_(grad, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                m_hat = m / (1.0 - beta1**t)
                v_hat = v / (1.0 - beta2**t)
                numerator = m_hat.mul(nu1).add_(grad, alpha=1.0 - nu1)
                denominator = (grad * grad).mul_(1.0 - nu2).add_(v_hat, alpha=nu2).sqrt_().add_(group["eps"])
                p.addcdiv_(numerator, denominator, value=-group["lr"])
        return loss
