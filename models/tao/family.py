"""TAO sparse oblique trees and TAO forests as treeviz families: estimators, hyperparameter schemas,
presets and the λ path (no heavy imports; the estimators load scikit-learn and torch when used)."""

from models import cost
from models.schema import Curves, Family, LambdaPath, Panel, Param, device_param, n_jobs_param, seed_param

_DEPTH_HELP = "Depth Δ of the initial tree; pruning can only shrink it."

_TREE_PARAMS = (
    # Classification defaults to "auto" (⌈log2 K⌉ + 3 for K classes, 4 to 8): a fixed Δ = 4 (16
    # leaves) fell 5-41 points behind CART's defaults on pendigits and letter (10 and 26 classes),
    # a fixed Δ = 8 overfitted two-class moons. Regression keeps Δ = 4: constant leaves overfit
    # deeper trees (diabetes and cars lost 0.1-0.5 R² at Δ = 8).
    Param("depth", "int", None, _DEPTH_HELP + " Auto: ⌈log2 K⌉ + 3 for K classes, between 4 and 8.",
          low=0, high=16, optional_label="auto", tasks=("classification",)),
    Param("depth", "int", 4, _DEPTH_HELP, low=0, high=16, tasks=("regression",)),
    Param("l1_penalty", "float", 0.01,
          "λ of the ℓ1 penalty on node weights, in sum form (the loss is summed over samples, not "
          "averaged): larger λ gives sparser, smaller trees.", low=0.0, high=1e6, log=True,
          label="ℓ1 penalty λ (sum form)"),
    Param("leaf", "choice", "constant",
          "Leaf model: constant (majority class), linear (ℓ1 softmax over the leaf's classes) or softmax "
          "(softmax tree: only the k most populous classes of the leaf).",
          choices=("constant", "linear", "softmax"), tasks=("classification",)),
    Param("leaf", "choice", "constant", "Leaf model: constant (mean) or linear (Lasso).",
          choices=("constant", "linear"), tasks=("regression",)),
    Param("leaf_classes", "int", None, "k: classes a softmax leaf models (the leaf's most populous).",
          low=2, high=100_000, optional_label="all", tasks=("classification",)),
    Param("max_iter", "int", 20, "Most TAO iterations (passes over all nodes).", low=1, high=1000),
    Param("node_type", "choice", "oblique",
          "Decision nodes: sparse oblique hyperplanes (ℓ1 logistic surrogate) or exact axis-aligned splits.",
          choices=("oblique", "axis"), advanced=True),
    Param("guard", "choice", "objective",
          "Keep a node update only if its reduced objective does not increase, so the objective never "
          "increases ('off' = the thesis's unguarded TAO; 'node' guards every pass from the start instead of "
          "trying it unguarded first).", choices=("objective", "off", "node"), advanced=True),
    Param("order", "choice", "reverse_bfs", "Visiting order of the depth levels.",
          choices=("reverse_bfs", "bfs"), advanced=True),
    Param("solver", "choice", "auto",
          "Node solver: 'cd' solves every node of a depth level in one compiled coordinate-descent call "
          "(decision nodes and linear leaves), 'sklearn' calls liblinear / Lasso / SAGA once per node, "
          "'torch' runs batched proximal gradient per level for the decision nodes, on the CPU or a GPU ('auto': "
          "cd, the fastest even beside a GPU).", choices=("auto", "cd", "sklearn", "torch"), advanced=True),
    Param("loss", "choice", "zero_one",
          "Training loss: 0/1, or cross-entropy where a class absent from a leaf costs β.",
          choices=("zero_one", "cross_entropy"), tasks=("classification",), advanced=True),
    Param("beta", "float", 100.0, "β: loss of a sample whose class its leaf does not model.", low=1.0,
          high=1e7, log=True, tasks=("classification",), advanced=True),
    Param("tol", "float", 1e-4, "Stop when the objective changes by less than this fraction.", low=0.0,
          high=1.0, advanced=True),
)
_PAPER = "Zharmagambetov, Learning Tree-Based Models with Manifold Regularization (PhD thesis, 2022)"
_SIZE = ("n_nonzero", "n_decision_nodes", "n_leaves")
#: Sizes are recorded each iteration, before the final pruning of branches no point reaches, so the
#: stored tree (and its metrics) can be smaller: the panel's title says so.
SIZE_PANEL = "Size while training<br>(before the final pruning)"

def _tao_cost(p, n, d):
    return cost.TimeEstimate(cost.TAO_S * cost.tao_units(p, n, d, cost.value(p, "max_iter", 20)),
                             ("max_iter", "depth"))


def _forest_cost(p, n, d):
    one = cost.TAO_S * cost.tao_units(p, n * cost.value(p, "subsample", 1.0), d, cost.value(p, "max_iter", 20))
    return cost.TimeEstimate(cost.forest_seconds(p, one), ("n_trees", "max_iter", "depth"))


TAO = Family(
    key="tao",
    cost=_tao_cost,
    label="TAO sparse oblique tree",
    description=(
        "Tree Alternating Optimization (Carreira-Perpiñán & Tavallali 2018; Zharmagambetov 2022): a "
        "tree of sparse hyperplanes, optimised node by node on each node's reduced problem. Larger ℓ1 "
        "penalty λ zeroes weights and prunes whole branches."
    ),
    paper=_PAPER,
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={"classification": "models.onnx.families:tao_classifier", "regression": "models.onnx.families:tao_regressor"},
    estimators={
        "classification": "models.tao.estimators:TAOClassifier",
        "regression": "models.tao.estimators:TAORegressor",
    },
    params=(
        *_TREE_PARAMS,
        Param("init", "choice", "auto",
              "Initial tree: 'auto' = CART for depth ≤ 2, random otherwise; 'clustering' groups classes "
              "into leaves (softmax trees).", choices=("auto", "cart", "random", "clustering"),
              tasks=("classification",)),
        Param("init", "choice", "auto", "Initial tree: 'auto' = CART for depth ≤ 2, random otherwise.",
              choices=("auto", "cart", "random"), tasks=("regression",)),
        Param("warm_start", "bool", False, "Continue from the current tree when refitted.", advanced=True),
        device_param(),
        seed_param(),
    ),
    presets={
        "quick": {"depth": 3, "max_iter": 10},
        "TAO-c (thesis)": {"depth": 8, "l1_penalty": 0.01, "leaf": "constant", "max_iter": 20},
        "TAO-l (thesis)": {"depth": 5, "l1_penalty": 0.01, "leaf": "linear", "max_iter": 20},
        "softmax tree": {"depth": 3, "leaf": "softmax", "leaf_classes": 5, "init": "clustering"},
    },
    # Every λ starts from the same initial tree by default: warm-starting from a pruned tree can
    # never regrow the nodes a smaller λ would keep.
    lambda_path=LambdaPath(
        param="l1_penalty", low=0.001, high=100.0, count=6, warm_start=False, figure="sparsity",
        sizes=("n_decision_nodes", "n_nonzero_weights", "flops"), tree_view="structure",
        note=("The tree at this λ after TAO's pruning (zero-weight nodes, dead branches and pure subtrees "
              "removed). Open it in the Tree explorer for its node weights."),
    ),
    curves=Curves(x="iteration", panels=(
        Panel("Objective", ("objective",)),
        Panel("Score", ("train_score", "val_score")),
        Panel(SIZE_PANEL, _SIZE),
    )),
    test_params={"depth": 2, "max_iter": 3},
    order=20,
)

TAO_FOREST = Family(
    key="tao_forest",
    cost=_forest_cost,
    label="TAO forest",
    description=(
        "A forest of TAO trees, each trained on its own 90% subsample from its own random tree; constant "
        "leaves vote (TAO-c), linear leaves average probabilities (TAO-l)."
    ),
    paper=_PAPER,
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={
        "classification": "models.onnx.families:tao_forest_classifier",
        "regression": "models.onnx.families:tao_forest_regressor",
    },
    estimators={
        "classification": "models.tao.forest:TAOForestClassifier",
        "regression": "models.tao.forest:TAOForestRegressor",
    },
    params=(
        Param("n_trees", "int", 10, "Number of trees.", low=1, high=1000),
        Param("subsample", "float", 0.9, "Fraction of the training set each tree sees (without replacement).",
              low=0.05, high=1.0),
        Param("depth", "int", 6, _DEPTH_HELP, low=0, high=16),
        *tuple(p for p in _TREE_PARAMS if p.name != "depth"),
        Param("init", "choice", "random", "Initial tree of every member (the thesis: random).",
              choices=("random", "cart"), advanced=True),
        n_jobs_param(),
        device_param(),
        seed_param(),
    ),
    presets={"quick": {"n_trees": 5, "depth": 4, "max_iter": 10},
             "TAO-l forest (thesis)": {"n_trees": 30, "depth": 7, "leaf": "linear", "l1_penalty": 0.01}},
    curves=Curves(x="tree", panels=(
        Panel("Objective of each tree", ("objective",)),
        Panel("Training error of each tree", ("tree_train_error",)),
        Panel("Size of each tree", _SIZE),
    )),
    # one process: the contract test fits every estimator many times on tiny data, where starting
    # worker processes would cost more than the trees
    test_params={"n_trees": 2, "depth": 2, "max_iter": 3, "n_jobs": 1},
    order=21,
)

FAMILIES = (TAO, TAO_FOREST)
