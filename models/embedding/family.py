"""Tree embeddings as a treeviz family: a t-SNE or elastic embedding whose mapping of new points
is a sparse oblique TAO tree (Zharmagambetov, PhD thesis 2022, chapter 4). No heavy imports; the
estimator loads torch when used."""

from models import cost
from models.embedding.defaults import AUTO_L1_PER_POINT, auto_depth
from models.schema import Comparison, Curves, Family, LambdaPath, Panel, Param, device_param, seed_param

# Timed at 1 600 and 2 310 rows × 19 features: 2 000 free iterations took 216 s at 2 310 rows; a μ
# step (100 Z iterations, 15 TAO iterations) 14 s at 1 600 rows and 16 s at 2 310, almost all of it
# the Z step (with no Z iterations two μ steps took no measurable time); the set-up (affinities, the
# spectral direction's factorisation) about 9 s at 1 600 rows.
_SETUP_S = 2.2e-9  # per row³
_FREE_S = 2.0e-8  # per free-embedding iteration × pair of rows
_Z_S = 4.0e-8  # per Z-step iteration × pair of rows
_TAO_S = 1e-7  # per tree-step TAO iteration × row × feature × level


def _cost(p, n, d):
    pairs = n * n
    free = _FREE_S * cost.value(p, "free_iter", 2000) * pairs
    tree = _TAO_S * cost.value(p, "tao_iter", 15) * n * d * max(1.0, cost.value(p, "depth", auto_depth(n)))
    step = _Z_S * cost.value(p, "z_iter", 100) * pairs + tree
    seconds = _SETUP_S * n**3 + free + cost.value(p, "n_mu", 20) * step
    return cost.TimeEstimate(seconds, ("n_mu", "free_iter", "z_iter"))


TREE_EMBEDDING = Family(
    key="tree_embedding",
    cost=_cost,
    label="Tree embedding (t-SNE / EE)",
    description=(
        "A 2-D t-SNE or elastic embedding whose mapping is a sparse oblique tree with linear leaves, "
        "learnt by alternating the embedding's free coordinates with a TAO tree under a growing penalty "
        "μ. New points are mapped through the tree. Runs on any data set; classes only colour the map."
    ),
    paper="Zharmagambetov, Learning Tree-Based Models with Manifold Regularization (PhD thesis, 2022), ch. 4",
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={"embedding": "models.onnx.families:embedding"},
    estimators={"embedding": "models.embedding.tree_embedding:TreeEmbedding"},
    params=(
        Param("method", "choice", "tsne", "Embedding objective: t-SNE's KL divergence or the elastic embedding (EE).",
              choices=("tsne", "ee")),
        Param("perplexity", "float", 15.0, "Perplexity of the entropic affinities (effective neighbours).",
              low=1.0, high=1000.0),
        Param("n_neighbors", "int", None,
              "Neighbours each point's affinities spread over (must exceed the perplexity).",
              low=2, high=100_000, optional_label="3 × perplexity", advanced=True),
        Param("lam_ee", "float", 100.0, "The elastic embedding's repulsion weight λ (t-SNE ignores it).",
              low=0.0, high=1e7, label="EE repulsion λ"),
        # Both chosen from the data by default (models/embedding/defaults.py): a fixed depth 3 and λ = 0.1
        # mapped digits' test points at 10-NN accuracy 0.72 where openTSNE's transform reached 0.94.
        Param("depth", "int", None,
              "Depth Δ of the random initial tree; pruning can only shrink it. Auto: about √N leaves for N "
              "training rows, or, when the data has K classes, two leaves per class (⌈log2 K⌉ + 1) if the rows "
              "allow; between 2 and 8.", low=0, high=12, optional_label="auto"),
        Param("l1_penalty", "float", None,
              "λ of the tree's ℓ1 penalty in sum form: the direct fit's; the tree step at μ uses λ·μ0/μ (see the "
              "penalty mode). Larger λ gives a sparser, smaller tree that maps new points more smoothly. Auto: "
              f"{AUTO_L1_PER_POINT:g} per training row.",
              low=0.0, high=1e6, log=True, optional_label=f"{AUTO_L1_PER_POINT:g} × rows",
              label="ℓ1 penalty λ (sum form)"),
        Param("leaf", "choice", "linear", "Leaf model: linear (Lasso, the thesis) or constant.",
              choices=("linear", "constant")),
        Param("mu0", "float", None, "μ₀, the first penalty weight.", low=1e-300, high=1e12, log=True,
              optional_label="0.3 · E(Z0) / ‖Z0 − F0(X)‖²", label="μ₀", advanced=True),
        Param("mu0_ratio", "float", 0.3, "The constant c of the scale-free μ₀ rule c · E(Z0) / ‖Z0 − F0(X)‖².",
              low=1e-12, high=1e6, log=True, advanced=True),
        Param("mu_factor", "float", 1.4, "μ is multiplied by this after every step.", low=1.0, high=100.0),
        Param("n_mu", "int", 20, "Number of μ steps (one Z-step and one tree step each).", low=0, high=1000,
              label="μ steps"),
        Param("z_iter", "int", 100, "Most spectral-direction iterations of each Z-step.", low=0, high=100_000,
              advanced=True),
        Param("z_tol", "float", 1e-4, "A Z-step stops when its iterates change by less than this fraction.",
              low=0.0, high=1.0, advanced=True),
        Param("free_iter", "int", 2000, "Most iterations of the free embedding Z0.", low=1, high=100_000),
        Param("tao_iter", "int", 15, "TAO iterations of the direct fit and of every tree step.", low=1, high=1000),
        Param("augmented_lagrangian", "bool", True,
              "Multipliers β (the thesis's augmented Lagrangian); off is the quadratic-penalty method.",
              advanced=True),
        Param("penalty_mode", "choice", "over_mu",
              "The tree step's ℓ1 penalty at μ: λ·μ0/μ, so the whole path minimises E(F(X)) + μ0·λ·‖w‖₁, or λ "
              "at every step as in the thesis (then the penalty traded against E grows with μ and E(F(X)) can "
              "rise late in the path).", choices=("over_mu", "fixed"), advanced=True),
        device_param(),
        seed_param(),
    ),
    presets={
        "quick": {"depth": 2, "n_mu": 6, "free_iter": 300, "z_iter": 40, "tao_iter": 5},
        "thesis, breast cancer (t-SNE)": {"method": "tsne", "perplexity": 15.0, "depth": 3, "l1_penalty": 0.1,
                                          "n_mu": 20, "mu_factor": 1.4},
        "elastic embedding (thesis)": {"method": "ee", "lam_ee": 100.0, "depth": 4, "n_mu": 15, "mu_factor": 1.4},
    },
    # The thesis's supplement animates the tree embedding as λ grows: the accuracy-interpretability trade-off.
    lambda_path=LambdaPath(
        param="l1_penalty", low=1.0, high=1000.0, count=5, warm_start=False, figure="sparsity",
        sizes=("n_decision_nodes", "n_nonzero_weights", "flops"), tree_view="structure",
        note="The tree embedding's tree at this λ. Open the run on the Embeddings page for its map.",
    ),
    curves=Curves(x="step", panels=(
        Panel("Embedding objective", ("E_tree", "E_Z")),
        Panel("‖Z − F(X)‖²", ("dist2",)),
        Panel("Tree penalty", ("tree_penalty", "l1_norm")),
        Panel("Size", ("n_leaves", "n_decision_nodes", "n_nonzero")),
    )),
    views=("embedding",),
    # The Embeddings page: the thesis compares the tree embedding with a CART tree fitted to the free embedding.
    comparisons=(Comparison(view="embedding",
                            baselines={"direct CART fit": "models.embedding.views:direct_cart_fit"}),),
    test_params={"depth": 2, "perplexity": 5.0, "n_mu": 2, "free_iter": 60, "z_iter": 10, "tao_iter": 3},
    order=40,
)

FAMILIES = (TREE_EMBEDDING,)
