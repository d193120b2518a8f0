"""Proximal operators on the kernel's feature groups, and the dense-to-sparse λ0 schedule.

A group is one feature's row of the kernel: its weights in every node of every tree. After each
plain SGD step Z = W − η∇h, the group-ℓ0 prox solves

    W⁺ = argmin_W (1/2η)‖W − Z‖² + λ0 · #{k : W[k] ≠ 0}

row by row: keeping row k costs λ0, zeroing it costs ‖Z[k]‖²/(2η), so the row is kept iff its norm
clears √(2ηλ0), and a kept row is returned **unchanged** (hard thresholding; no shrinkage). At a
tie the paper keeps the row (≥) and the authors' code zeroes it (keeps only when >); this module
follows the code, and either choice attains the same minimum (both options then cost λ0).

``min_keep`` is this project's guard against removing every feature (the paper's code would then
predict a constant, and discards such trials): when fewer rows clear the threshold, the largest
nonzero rows are kept unchanged, so at least ``min_keep`` features survive. ``min_keep = 0`` is the
paper's operator.

The group-lasso baseline (the paper's Algorithm 2) uses block soft thresholding instead:
Z[k]·(1 − τ/‖Z[k]‖) when ‖Z[k]‖ > τ, else 0 (at ‖Z[k]‖ = τ both give 0), with τ = η·λ1/√(m·|I|).

Dense-to-sparse learning ramps λ0 with the optimiser-step counter t (never reset between
epochs): λ0(t) = γ(1 − e^(−s·t)), starting at 0 and approaching γ.
"""

from __future__ import annotations

import math

import torch


def kept_rows(norms: torch.Tensor, threshold: float, min_keep: int = 0) -> torch.Tensor:
    """The rows a prox keeps: norm above ``threshold``, or among the ``min_keep`` largest nonzero
    rows when too few are above it. Computed on the device, without host synchronisation."""
    keep = norms > threshold
    if min_keep > 0:
        rank = torch.argsort(torch.argsort(norms, descending=True))
        short = keep.sum() < min_keep
        keep = keep | (short & (rank < min_keep) & (norms > 0))
    return keep


def hard_threshold(kernel: torch.Tensor, threshold: float, min_keep: int = 0) -> torch.Tensor:
    """Group hard thresholding in place: rows whose norm is not above ``threshold`` become zero,
    kept rows are unchanged; returns the kept-row mask."""
    keep = kept_rows(torch.linalg.vector_norm(kernel, dim=1), threshold, min_keep)
    kernel.mul_(keep.to(kernel.dtype)[:, None])
    return keep


def group_soft_threshold(kernel: torch.Tensor, tau: float, min_keep: int = 0) -> torch.Tensor:
    """Block soft thresholding in place: every row's norm shrinks by ``tau`` and rows not above
    ``tau`` become zero; returns the kept-row mask. Rows the guard keeps (``min_keep``) that
    would have vanished are kept unchanged."""
    norms = torch.linalg.vector_norm(kernel, dim=1)
    above = norms > tau
    keep = kept_rows(norms, tau, min_keep)
    shrink = torch.where(above, 1.0 - tau / torch.where(above, norms, torch.ones_like(norms)), 1.0)
    kernel.mul_(torch.where(keep, shrink, 0.0).to(kernel.dtype)[:, None])
    return keep


def l0_threshold(learning_rate: float, lambda0: float) -> float:
    """√(2ηλ0): the norm a row must exceed to be kept."""
    return math.sqrt(2.0 * learning_rate * lambda0)


def dense_to_sparse(step: int, gamma: float, rate: float) -> float:
    """λ0 after ``step`` optimiser steps: γ(1 − e^(−s·t))."""
    return gamma * -math.expm1(-rate * step)
