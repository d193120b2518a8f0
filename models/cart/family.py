"""CART as a treeviz family: its estimators, hyperparameter schema and presets (no heavy imports)."""

import math

from models import cost
from models.schema import Curves, Family, Panel, Param, seed_param

# Seconds per row × feature × log2(rows) (15 ms at 1 200 rows × 19 features).
_CART_S = 2e-8


def _cost(p, n, d):
    return cost.TimeEstimate(_CART_S * n * d * math.log2(n + 1))


CART = Family(
    key="cart",
    cost=_cost,
    label="CART (scikit-learn)",
    description=(
        "Greedy axis-aligned decision tree from scikit-learn: the baseline every optimisation-based "
        "tree is compared with. Each split tests one feature against a threshold."
    ),
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={
        "classification": "models.onnx.families:cart_classifier",
        "regression": "models.onnx.families:tree_regressor",
    },
    estimators={
        "classification": "models.cart.estimators:CARTClassifier",
        "regression": "models.cart.estimators:CARTRegressor",
    },
    params=(
        Param("max_depth", "int", None, "Deepest level the tree may grow to.", low=1, high=64,
              optional_label="unlimited"),
        Param("min_samples_split", "int", 2, "Fewest samples a node needs to be split.", low=2,
              high=100_000),
        Param("min_samples_leaf", "int", 1, "Fewest samples every leaf must keep.", low=1,
              high=100_000),
        Param("criterion", "choice", "gini", "Impurity measure a split minimises.",
              choices=("gini", "entropy", "log_loss"), tasks=("classification",)),
        Param("criterion", "choice", "squared_error", "Impurity measure a split minimises.",
              choices=("squared_error", "friedman_mse", "absolute_error", "poisson"),
              tasks=("regression",)),
        Param("ccp_alpha", "float", 0.0,
              "Cost-complexity pruning strength: larger values prune more (0 = no pruning).",
              low=0.0, high=1e6, label="pruning strength (ccp_alpha)"),
        Param("max_leaf_nodes", "int", None, "Largest number of leaves (best-first growth).",
              low=2, high=1_000_000, optional_label="unlimited", advanced=True),
        seed_param(),
    ),
    presets={"quick": {"max_depth": 4}, "deep": {"max_depth": 8, "min_samples_leaf": 2}},
    curves=Curves(x="epoch", panels=(Panel("Score", ("train_score", "val_score")),
                                     Panel("Size", ("n_leaves", "depth")))),
    order=0,
)

FAMILIES = (CART,)
