"""The pruning layer of latent trees: path rewards, the pruning QP, and the read-out of ``z``.

Latent trees (Zantedeschi, Kusner & Niculae, ICML 2021, "Learning Binary Decision Trees by
Argmin Differentiation") route a batch through a complete binary tree (heap order, see
:mod:`models.latent.heap`) and let the batch decide, through a small quadratic program, which
nodes stay active. ``docs/latent_trees.md`` writes out the formulas and the reasons for each
choice below; [ICML], [PRE] and [CODE] are the two papers and the authors' reference code, and
equation, proposition and algorithm numbers are [ICML]'s. One mini-batch goes::

    S (n, 2**D - 1) split scores
      -> Q = path_rewards(S)            (n, |T|)  path minimum of the signed split scores, q_root = 1
      -> a = prune(Q, lam)              (|T|,)    a_t in [0, 1] shared by the batch (0 = pruned)
      -> Z = readout(Q, a, mode)        (n, |T|)  per-sample traversal values, capped by a

**Sign convention.** The paper's: a sample goes LEFT iff its split score ``s < 0``. The reference
code [CODE] uses the opposite sign; it is the same model family with ``s -> -s``. Only
:func:`path_rewards` encodes the rule.

**The QP** (eq. 3 of [ICML], with the parameters ``eta`` and ``shift`` that also cover [PRE])::

    (Z, a) = argmin  (lam/2) ||a - eta||^2 + 1/2 sum_i ||z_i - q_i - shift||^2
             s.t.    a_t <= a_parent(t),  z_it <= a_t,  z_it in [0, 1],  a_t in [0, 1]

* [ICML] (the default): ``eta = 0``, ``shift = 1/2``, ``lam > 0`` is the pruning strength.
  ``lam`` is absolute, not per sample: tiling a batch k times with ``lam`` equals the
  original batch with ``lam / k`` (so the same ``lam`` prunes more with smaller batches).
* [PRE] (the 2020 preprint): ``lam = 1`` inside the QP, ``shift = 0``, and a learned per-node
  preference ``eta`` (penalised outside the QP by ``lam_PRE * ||eta||_inf``). Pass ``eta`` (a
  tensor that may require grad), ``lam=1.0`` and ``shift=0.0``; ``prune`` then uses the
  general solver and returns gradients with respect to ``eta`` too.

Eliminating ``Z`` (Prop. 1) leaves a tree-structured isotonic problem in ``a`` alone, solved by
pool-adjacent-violators (Algorithm 1, :func:`solve_pav`); each pooled group's value is the 1-D
closed form of Prop. 2. When ``Q`` is tree-consistent (``q_child <= q_parent`` for every sample,
which :func:`path_rewards` always produces) no group ever merges and the problem separates per
node: each ``a_t`` solves ``lam a = sum_i (c_it - a)_+`` with ``c = q + shift``, whose right side
grows with ``c``, so ``c_child <= c_parent`` already gives ``a_child <= a_parent``.
:func:`prune_fast` computes that with a handful of vectorised tensor operations on any device,
differentiable by plain autograd. :func:`prune` picks the right one.

Gradients. The general solver is a :class:`torch.autograd.Function` (:class:`PruneQP`) whose
backward is the sparse vector-Jacobian product of the group solution (``1 / (lam |G| + k*)`` on
the group's support) with exact float denominators ``lam |G| + k*`` (the reference code stores
them as integers, truncating them, which we do not copy); a group whose *unclipped* value is
``<= 0`` or ``>= 1`` gets exactly zero gradient. The fast path gets the same Jacobian from
autograd and applies the same strict mask.

Choices where the paper and the reference code differ:

* split sign: the paper's (left iff ``s < 0``);
* root: ``q_root = 1`` for every sample, as in the code; ``a_root`` is NOT pinned to 1, so
  ``a_root = 1.5 n / (lam + n) < 1`` when ``n < 2 lam`` and then caps every ``z`` (this is what
  produced the published numbers; [ICML]'s "z_1 = 1" is not literally true there);
* read-out: ``"code"`` by default (hard, exactly sparse paths; reproduces the numbers), ``"paper"``
  (exact argmin of eq. 3) on request; ``a`` is the same in both;
* Jacobian denominators: exact floats, not the code's integer truncation;
* ``lam = 0``: an error here (the code silently skips pruning; a caller wanting that skips this
  layer and uses ``z = clip(q, 0, 1)``);
* clipping: once, after PAV; the gradient mask uses the unclipped value, strictly inside (0, 1).

The modules: :mod:`.rewards` (``path_rewards``, ``is_tree_consistent``), :mod:`.fast` (``prune_fast``),
:mod:`.pav` (``solve_pav``, ``PruneQP``), :mod:`.qp` (``prune``), :mod:`.traversal` (``readout``);
:mod:`.backend` says where the NumPy kernels run instead of torch's (performance notes there).
"""

from models.latent.pruning.fast import prune_fast
from models.latent.pruning.pav import PAVSolution, PruneQP, solve_pav
from models.latent.pruning.qp import SOLVERS, prune
from models.latent.pruning.rewards import is_tree_consistent, path_rewards
from models.latent.pruning.traversal import readout

__all__ = [
    "SOLVERS",
    "PAVSolution",
    "PruneQP",
    "is_tree_consistent",
    "path_rewards",
    "prune",
    "prune_fast",
    "readout",
    "solve_pav",
]
