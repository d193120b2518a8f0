"""LapTAO's hyperparameters as one schema (no heavy imports): the family's declaration
(:mod:`models.laptao.family`), which the estimators' checks at ``fit`` read.

Defaults follow the thesis where it gives a value: γ = 0.1, μ₀ = 10⁻³ multiplied by 1.5 twenty
times, one alternation per μ, 15 TAO iterations per tree step, sparse oblique trees with constant
leaves. Where it is silent: the perplexity is tuned per data set as the thesis says, here by
leave-one-out label propagation on the labelled points over 3, 5, 10, 15 and 30
(:func:`models.laptao.graph.select_perplexity`) with 3 × K neighbours, and the tree step's ℓ1
penalty is held fixed (not divided by μ, which at μ₀ = 10⁻³ would prune the tree to a stump).
"""

from models.schema import Param, device_param, seed_param

PENALTY_MODES = ("fixed", "over_mu")

PARAMS = (
    Param("labelled_fraction", "float", 0.1,
          "Fraction of the given labels that training uses; the others are treated as unlabelled (drawn at "
          "random, stratified by class, with at least one label per class). For studying learning from few "
          "labels on a fully labelled data set. Labels given as −1 (classes) or NaN (targets) are always "
          "unlabelled.", low=1e-6, high=1.0, label="labelled fraction"),
    Param("gamma", "float", 0.1,
          "γ: weight of the graph term γ Σ_c t_cᵀ Lap t_c that smooths the outputs over the neighbourhood graph.",
          low=1e-12, high=1e6, log=True, label="graph weight γ"),
    Param("perplexity", "float", None,
          "Perplexity K of the graph's entropic affinities (effective neighbours). Auto: the one of 3, 5, 10, 15 "
          "and 30 under which label propagation best predicts each labelled point from the others "
          "(leave-one-out), since how far labels spread matters most when they are few.",
          low=1.0, high=1000.0, optional_label="auto (leave-one-out)"),
    Param("n_neighbors", "int", None, "k: neighbours each point's affinities spread over (must exceed K).",
          low=2, high=100_000, optional_label="3 × perplexity"),
    Param("depth", "int", None,
          "Depth Δ of the initial tree; pruning can only shrink it. Auto: ⌈log2 K⌉ + 3 for K classes, between 4 and 8.",
          low=0, high=16, optional_label="auto", tasks=("classification",)),
    Param("depth", "int", 4, "Depth Δ of the initial tree; pruning can only shrink it.", low=0, high=16,
          tasks=("regression",)),
    Param("l1_penalty", "float", 0.01,
          "α: ℓ1 penalty on node weights in sum form, used by every tree step (see penalty_mode).",
          low=0.0, high=1e6, log=True, label="ℓ1 penalty α (sum form)"),
    Param("leaf", "choice", "constant",
          "Leaf model of the tree steps: constant (mean of the targets, solved exactly at the end) or linear (Lasso).",
          choices=("constant", "linear")),
    Param("mu0", "float", 1e-3, "μ₀: the first penalty parameter of the schedule.", low=1e-12, high=1e6, log=True,
          label="μ₀"),
    Param("mu_factor", "float", 1.5, "μ is multiplied by this after every step.", low=1.0, high=100.0),
    Param("n_mu", "int", 20, "Number of μ steps (μ₀, μ₀·factor, …).", low=1, high=1000, label="μ steps"),
    Param("n_inner", "int", 1, "Most label-step / tree-step alternations per μ (the thesis uses 1).", low=1,
          high=1000, advanced=True),
    Param("tol", "float", 1e-4, "Leave a μ's alternations early when ‖z − t‖ / ‖z‖ is below this.", low=0.0,
          high=1.0, advanced=True),
    Param("tao_iter", "int", 15, "TAO iterations of every tree step.", low=1, high=1000),
    Param("multiplier_step", "int", 1,
          "Multiplier update ν ← ν − s μ (z − t): s = 1 is the thesis's, s = 2 the textbook step.", low=1, high=2,
          advanced=True),
    Param("penalty_mode", "choice", "fixed",
          "The tree step's ℓ1 penalty: α fixed, or α/μ as the augmented Lagrangian literally gives.",
          choices=PENALTY_MODES, advanced=True),
    Param("leaf_solve", "bool", True,
          "After the loop, solve the constant leaf values exactly for the final routing.", advanced=True),
    Param("init", "choice", "auto", "Initial tree: 'auto' = CART for depth ≤ 2, random otherwise.",
          choices=("auto", "cart", "random"), advanced=True),
    Param("solver", "choice", "auto",
          "Label-step solver: cached eigendecomposition, sparse LU, or conjugate gradients ('auto': "
          "eigen up to 1000 points, CG above).", choices=("auto", "eigen", "lu", "cg"), advanced=True),
    device_param(),
    seed_param(),
)
