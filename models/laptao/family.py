"""LapTAO as a treeviz family: semi-supervised sparse oblique trees that smooth their outputs over a
neighbourhood graph of labelled and unlabelled points (Zharmagambetov, PhD thesis 2022, chapter 3).
No heavy imports; the estimators load scikit-learn and torch when used."""

from models import cost
from models.laptao.params import PARAMS
from models.schema import Comparison, Curves, Family, LambdaPath, Panel


def _cost(p, n, d):
    units = cost.value(p, "n_mu", 20) * cost.tao_units(p, n, d, cost.value(p, "tao_iter", 15))
    return cost.TimeEstimate(cost.TAO_S * units, ("n_mu", "tao_iter"))


LAPTAO = Family(
    key="laptao",
    cost=_cost,
    label="LapTAO (semi-supervised TAO tree)",
    description=(
        "A sparse oblique tree trained from few labels and many unlabelled points: labels are propagated "
        "over a neighbourhood graph of all the points and the tree is fitted to them, alternating label "
        "steps and TAO tree steps under a growing penalty μ. Set the labelled fraction to hide labels."
    ),
    paper="Zharmagambetov, Learning Tree-Based Models with Manifold Regularization (PhD thesis, 2022), ch. 3",
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={
        "classification": "models.onnx.families:laptao_classifier",
        "regression": "models.onnx.families:tao_regressor",
    },
    estimators={
        "classification": "models.laptao.estimators:LapTAOClassifier",
        "regression": "models.laptao.estimators:LapTAORegressor",
    },
    params=PARAMS,
    presets={
        "quick, 10 % labelled": {"labelled_fraction": 0.1, "depth": 3, "n_mu": 8, "tao_iter": 5},
        "5 % labelled": {"labelled_fraction": 0.05},
        "1 % labelled": {"labelled_fraction": 0.01},
    },
    lambda_path=LambdaPath(
        param="l1_penalty", low=0.001, high=100.0, count=6, warm_start=False, figure="sparsity",
        sizes=("n_decision_nodes", "n_nonzero_weights", "flops"), tree_view="structure",
        note="The LapTAO tree at this α after TAO's pruning. Open it in the Tree explorer for its node weights.",
    ),
    curves=Curves(x="mu_step", panels=(
        Panel("Objective", ("objective", "lagrangian")),
        Panel("Score", ("train_score", "val_score")),
        Panel("‖z − t‖ / ‖z‖", ("relative_gap",)),
        Panel("Size", ("n_leaves", "n_decision_nodes", "n_nonzero")),
    )),
    views=("semi_supervised",),
    # The semi-supervised view: the thesis's oblique-lbl baseline, supervised TAO fitted on the labelled
    # points alone with the same depth, penalty, leaves and iterations, at the labelled fractions it varies.
    comparisons=(Comparison(
        view="semi_supervised", reference="tao", reference_label="supervised TAO (labelled points only)",
        shared={"depth": "depth", "max_iter": "tao_iter", "l1_penalty": "l1_penalty", "leaf": "leaf"},
        params={"labelled_fraction": "labelled_fraction"},
    ),),
    # every label kept: scikit-learn's checks score a fit on the labels it was given, which the default
    # labelled fraction (0.1, a semi-supervised run) would mostly hide
    test_params={"labelled_fraction": 1.0, "depth": 2, "perplexity": 5.0, "n_mu": 3, "tao_iter": 3},
    order=25,
)

FAMILIES = (LAPTAO,)
