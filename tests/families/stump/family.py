"""The stump family's description: all the frame needs to offer it in the app and in model files."""

from models.schema import Curves, Family, LambdaPath, Panel, Param, seed_param

STUMP = Family(
    key="stump",
    label="Decision stump (test family)",
    description="One axis-aligned split chosen by impurity; a split that gains less than λ is not made.",
    estimators={
        "classification": "tests.families.stump.estimators:StumpClassifier",
        "regression": "tests.families.stump.estimators:StumpRegressor",
    },
    params=(
        Param("min_gain", "float", 0.0, "Smallest impurity decrease a split must bring (λ).", low=0.0,
              high=1e6, label="minimum gain λ"),
        Param("criterion", "choice", "gini", "Impurity of a node.", choices=("gini", "entropy"),
              tasks=("classification",)),
        seed_param(),
    ),
    presets={"strict": {"min_gain": 0.05}},
    test_params={},
    lambda_path=LambdaPath(param="min_gain", low=0.001, high=1.0, count=3, figure="sparsity",
                           sizes=("n_decision_nodes", "n_nonzero_weights"),
                           note="The stump at this λ: a leaf once no split gains λ."),
    curves=Curves(x="epoch", panels=(Panel("Score", ("train_score", "val_score")),
                                     Panel("Size", ("n_leaves",)))),
    order=90,
)

FAMILIES = (STUMP,)
