"""LapTAO's alternation: the μ schedule, label steps and tree steps, the multipliers, the final leaf solve.

With auxiliary coordinates z (one row per training point, z = t at the solution, t the tree's
outputs) and multipliers ν, each μ minimises the augmented Lagrangian

    L_A(z, tree) = Σ_c (z_c − y_c)ᵀ J (z_c − y_c) + γ Σ_c z_cᵀ Lap z_c − Σ ν∘(z − t) + μ ‖z − t‖² + μ p φ(tree)

by alternation (:func:`alternate`):

- **label step**: z minimises L_A exactly for the current tree (a linear system,
  :func:`models.laptao.label_step.label_step`);
- **tree step**: TAO regression of the tree on all points with targets ``z − ν/(2μ)``, warm-started
  from the current tree, with ℓ1 penalty p. Completing the square, ``−νᵀ(z − t) + μ‖z − t‖² =
  μ ‖z − ν/(2μ) − t‖² + const``, so the step minimises ``μ (‖targets − t‖² + p φ)``, the part of
  L_A that depends on the tree. With ``penalty_mode="over_mu"`` p = α/μ and μ p φ = α φ, the
  literal augmented Lagrangian; with ``"fixed"`` (the default) p = α, and the penalty grows with μ.

Each step cannot increase L_A (the label step is exact; TAO never increases its own objective),
which the tests check. After ``n_inner`` alternations (or earlier, once ‖z − t‖ / ‖z‖ < ``tol``)
the multipliers move, ``ν ← ν − s μ (z − t)``, and μ grows by ``factor``. The canonical objective
E(t) + α φ is not monotone across μ steps, and need not be.

The start: z₀ from label propagation (``(J + γ Lap) z₀ = J y``), then a tree fitted to z₀ (the
tree step's fit from the initial tree, ν = 0). At the end, with constant leaves, the leaf values
are replaced by the exact minimisers of E for the final routing
(:func:`models.laptao.label_step.exact_leaf_values`), which cannot increase E.

What the path does with few labels (measured; depth 5, α = 0.01, 8 μ steps × 5 TAO iterations).
The tree first fitted to z₀ keeps z₀'s accuracy on the unlabelled points (within 1 point on digits
at 1 % labels). The path then moves it toward E's minimiser over trees, and E rewards giving a
labelled point a leaf of its own: that gains up to its squared error (≈ 0.5–0.8) for a graph cost of
only γ × its degree (≈ 0.1), and an oblique split separates one point cheaply when a node holds
fewer points than features. The multipliers drive it: at a fixed gap, ``z − ν/(2μ)`` tends to
``2z − t``, so the target of a labelled point the tree misses keeps growing. On MNIST 5000
(perplexity 5) with 1 % of the labels, 13 and 24 of 40 labelled points ended in leaves of at most
5 points (none with ν held at 0), and the exact leaf solve, in which a leaf is then decided by the few labels inside it,
fell from 61 / 77 % test accuracy right after the first tree to 42 / 54 %. A sharper graph (the
perplexity chosen by :func:`models.laptao.graph.select_perplexity`) removes most of it on digits,
not on MNIST at 1 %; neither do a larger α (0.1: +4 points on digits at 1 % with perplexity 15,
−7 on one MNIST draw), the literal α/μ penalty without pruning between steps (+3.5 on digits at
best) or the full 20 × 15 schedule (+1).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from models.ground.errors import TreevizError
from models.laptao.label_step import (
    CachedSolver,
    CGSolver,
    augmented_lagrangian,
    exact_leaf_values,
    label_propagation,
    label_step,
    label_step_gradient,
    label_step_rhs,
    laptao_objective,
    tree_targets,
    update_multipliers,
)


class TreeStep(Protocol):
    """What the alternation needs from the tree (any regressor with a warm start will do)."""

    def fit(self, targets: np.ndarray, penalty: float) -> None:
        """Fit all N training points to ``targets`` (N × C) with ℓ1 penalty ``penalty``, warm-started."""

    def outputs(self) -> np.ndarray:
        """The current outputs t on the N training points (N × C)."""

    def penalty_norm(self) -> float:
        """φ(tree): the ℓ1 norm of the penalised weights."""


def mu_schedule(mu0: float, factor: float, count: int) -> np.ndarray:
    """``μ_k = μ₀ · factor^k`` for k = 0 … count − 1 (the thesis: 10⁻³, × 1.5, 20 steps, ending near 2.2)."""
    if not (mu0 > 0 and factor >= 1 and count >= 1):
        raise TreevizError(f"The μ schedule needs μ₀ > 0, a factor ≥ 1 and at least one step; got {mu0}, "
                           f"{factor}, {count}.")
    return float(mu0) * float(factor) ** np.arange(int(count))


@dataclass
class Problem:
    """The data of one LapTAO fit: targets Y (N × C; rows of unlabelled points ignored), the labelled
    mask, the Laplacian, γ and a label-step solver built on them."""

    Y: np.ndarray
    labelled: np.ndarray
    laplacian: object
    gamma: float
    solver: CachedSolver | CGSolver

    def objective(self, t: np.ndarray) -> float:
        """E(t) without the tree's penalty (matrix form of the graph term)."""
        return laptao_objective(t, self.Y, self.labelled, self.laplacian, self.gamma)

    def lagrangian(self, z: np.ndarray, t: np.ndarray, nu: np.ndarray, mu: float) -> float:
        """L_A without the tree's penalty."""
        return augmented_lagrangian(z, t, self.Y, self.labelled, self.laplacian, self.gamma, nu, mu)

    def residual(self, z: np.ndarray, t: np.ndarray, nu: np.ndarray, mu: float) -> float:
        """How exactly z solves the label step: ‖gradient in z‖ / ‖right-hand side‖."""
        grad = label_step_gradient(z, t, self.Y, self.labelled, self.laplacian, self.gamma, nu, mu)
        rhs = label_step_rhs(self.Y, self.labelled, t, nu, mu)
        return float(np.linalg.norm(grad) / max(np.linalg.norm(rhs), 1e-300))


@dataclass
class Settings:
    """The loop's settings (see the module docstring)."""

    l1_penalty: float = 0.01
    mu0: float = 1e-3
    mu_factor: float = 1.5
    n_mu: int = 20
    n_inner: int = 1
    tol: float = 1e-4
    multiplier_step: int = 1
    penalty_mode: str = "fixed"

    def tree_penalty(self, mu: float) -> float:
        """The ℓ1 penalty the tree step uses at μ: α, or α/μ."""
        return self.l1_penalty if self.penalty_mode == "fixed" else self.l1_penalty / mu


@dataclass
class Result:
    """Where the alternation ended: z, ν, the label-propagation start z₀, and whether a callback stopped it."""

    z: np.ndarray
    nu: np.ndarray
    z0: np.ndarray
    stopped: bool = False
    trace: list[tuple[int, int, str, float]] = field(default_factory=list)


def alternate(problem: Problem, tree: TreeStep, settings: Settings, *,
              on_step: Callable[[dict], bool] | None = None, trace: bool = False,
              stop: Callable[[], bool] = lambda: False) -> Result:
    """Run LapTAO from the label-propagation start; ``tree`` is updated in place.

    Parameters
    ----------
    problem : Problem
    tree : TreeStep
        Fitted to z₀ here first (its first ``fit`` starts from its initial tree).
    settings : Settings
    on_step : callable, optional
        Called after each μ step with its record (mu, objective, lagrangian, lagrangian_start,
        lagrangian_label, residual, constraint_gap, relative_gap, n_alternations, time_s); returning
        False stops the loop.
    trace : bool
        Keep every stage's L_A (with the tree's penalty term) in ``Result.trace`` as
        ``(μ step, alternation, "start" | "label" | "tree", value)``.
    stop : callable, optional
        Asked before every μ step and alternation; when it returns True (a cancel) the loop ends
        (``Result.stopped``); an unfinished μ step is not recorded. (The tree's own fit is
        stopped by the tree step itself.)
    """
    z0 = label_propagation(problem.solver, problem.Y, problem.labelled)
    z = np.array(z0, dtype=np.float64)
    tree.fit(z, settings.l1_penalty)
    nu = np.zeros_like(z)
    result = Result(z=z, nu=nu, z0=z0)
    for k, mu in enumerate(mu_schedule(settings.mu0, settings.mu_factor, settings.n_mu)):
        if stop():
            result.stopped = True
            break
        start = time.perf_counter()
        mu = float(mu)
        pen = settings.tree_penalty(mu)

        def full(z_, t_, mu=mu, pen=pen, nu=nu):  # L_A with the tree's penalty term μ p φ
            return problem.lagrangian(z_, t_, nu, mu) + mu * pen * tree.penalty_norm()

        t = tree.outputs()
        la_start = full(z, t)
        if trace:
            result.trace.append((k, 0, "start", la_start))
        la_label = la_start
        n_alt = 0
        for inner in range(settings.n_inner):
            z = label_step(problem.solver, problem.Y, problem.labelled, t, nu, mu, x0=z)
            residual = problem.residual(z, t, nu, mu)
            la = full(z, t)
            if inner == 0:
                la_label = la
            if trace:
                result.trace.append((k, inner, "label", la))
            tree.fit(tree_targets(z, nu, mu), pen)
            t = tree.outputs()
            n_alt = inner + 1
            if trace:
                result.trace.append((k, inner, "tree", full(z, t)))
            if np.linalg.norm(z - t) <= settings.tol * max(np.linalg.norm(z), 1e-300):
                break
        la_end = full(z, t)
        gap = float(np.linalg.norm(z - t))
        nu = update_multipliers(nu, z, t, mu, step=settings.multiplier_step)
        result.z, result.nu = z, nu
        record = {"mu_step": k + 1, "mu": mu,
                  "objective": problem.objective(t) + settings.l1_penalty * tree.penalty_norm(),
                  "lagrangian": la_end, "lagrangian_start": la_start, "lagrangian_label": la_label,
                  "residual": residual, "constraint_gap": gap,
                  "relative_gap": gap / max(float(np.linalg.norm(z)), 1e-300), "n_alternations": n_alt,
                  "time_s": time.perf_counter() - start}
        if on_step is not None and on_step(record) is False:
            result.stopped = True
            break
    return result


def solve_leaves(problem: Problem, leaf: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The constant leaf values (indexed by node id, as ``values``) that minimise E for the routing ``leaf``.

    Leaves no training point reaches keep their values; so do groups of leaves that E does not
    determine (see :func:`models.laptao.label_step.exact_leaf_values`).
    """
    leaves, solved = exact_leaf_values(leaf, problem.Y, problem.labelled, problem.laplacian, problem.gamma,
                                       previous=values)
    out = np.array(values, dtype=np.float64)
    out[leaves] = solved
    return out
