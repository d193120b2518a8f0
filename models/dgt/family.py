"""DGT as treeviz families: the supervised tree, its bagged forest, and the tree learned from
bandit feedback (no heavy imports; the estimators import torch when first used)."""

from dataclasses import replace

from models import cost
from models.dgt.stream import AUTO_LABEL, ROUNDS_HELP, default_rounds
from models.schema import Comparison, Curves, Family, Panel, Param, device_param, n_jobs_param, seed_param

PAPER = ("Learning Accurate Decision Trees with Bandit Feedback via Quantized Gradient Descent "
         "(Karthikeyan, Jain, Natarajan & Jain, TMLR 2022)")

_DEPTH = Param("depth", "int", 6, "Height h of the complete tree: 2^h − 1 oblique splits and 2^h leaves (the paper's "
               "best heights are 6 to 10).", low=1, high=10, label="height h")
_LAYERS = Param("n_layers", "int", 1,
                "L linear layers in the split stack, with no nonlinearity between them (the paper's "
                "over-parameterisation, L = 3 in its tables; 1 = a plain tree, the default because it trains in "
                "seconds on a CPU). They collapse into one hyperplane per node after training.",
                low=1, high=5, label="layers L")
_WIDTH = Param("width_multiplier", "float", None,
               "Hidden width of each extra layer as a multiple of 2^h − 1. Auto: the paper's Table 12 (80, 40, 16, 6, "
               "2 for h = 2, 4, 6, 8, 10).", low=0.01, high=1000.0, log=True, optional_label="Table 12",
               advanced=True)
_QUANT = Param("quantizer", "choice", "scaled",
               "Scaled: the authors' sign scaled by the batch's mean |z| (softmax temperature 1/mean|z| and gradient "
               "2·1[|z| ≤ 1] in backward; used for the paper's numbers). Plain: the paper's Algorithm 2 (scale 1, "
               "gradient 1[|z| ≤ 1]).", choices=("scaled", "plain"), advanced=True)

_SUPERVISED = (
    _DEPTH, _LAYERS, _WIDTH, _QUANT,
    Param("l1_penalty", "float", 0.0, "ℓ1 strength on the split layers' weights and biases (never the leaves; the "
          "paper's grid: 0, 1e-6, 5e-6, 1e-5, 5e-5, and 0 for L = 1).", low=0.0, high=1.0, log=True, label="ℓ1 λ"),
    Param("l2_penalty", "float", 0.0, "ℓ2 strength λ2 (as λ2/2·Σw²) on the split layers; not together with ℓ1.",
          low=0.0, high=10.0, log=True, label="ℓ2 λ", advanced=True),
    Param("learning_rate", "float", 1e-2, "RMSprop step size at the top of each cosine cycle (down to 1e-4).",
          low=1e-6, high=10.0, log=True),
    Param("momentum", "float", 0.0, "RMSprop momentum (the paper tries 0 and 0.3, and 0.8 for classification).",
          low=0.0, high=0.99),
    Param("batch_size", "int", 128, "Rows per optimiser step.", low=1, high=1_000_000),
    Param("max_epochs", "int", 200, "Passes over the training data (the best validation epoch is kept).", low=1,
          high=100_000),
    Param("min_steps", "int", 1000, "At least this many optimiser steps: small data sets get more epochs "
          "(200 epochs of iris are only 200 steps; 0 = the paper's fixed number of epochs).", low=0,
          high=10_000_000, advanced=True),
    Param("grad_clip", "float", 0.01, "Clip the gradient's global norm to this (0 = no clipping).", low=0.0,
          high=1e6, advanced=True),
    Param("validation_fraction", "float", 0.2, "Fraction of the training rows held out to keep the best epoch when "
          "fit is given no validation set (0 = keep the last epoch).", low=0.0, high=0.5, advanced=True),
)

def _with_defaults(params: tuple[Param, ...], **defaults) -> tuple[Param, ...]:
    """The same parameters with some defaults changed."""
    return tuple(replace(p, default=defaults[p.name]) if p.name in defaults else p for p in params)


_CURVES = Curves(x="epoch", panels=(
    Panel("Loss", ("loss", "val_loss")),
    Panel("Validation accuracy / R²", ("val_score",)),
    Panel("Split values with a gradient (|z| ≤ 1)", ("ste_open",)),
    Panel("Learning rate", ("lr",)),
))

#: Seconds per optimiser step of a DGT of depth 6 with 1, 2, 3 layers (200 epochs, 1 600 steps: 0.24 s;
#: 80 steps with 2 layers 0.12 s, with 3 layers 3.7 s); each further layer is taken as 30 times dearer.
_STEP_S = (1.5e-4, 1.5e-3, 4.6e-2)
_ROUND_S = 5e-5  # seconds per bandit round (20 000 rounds: 0.86 s)


def _tree_seconds(p, n):
    n_fit = n * (1.0 - cost.value(p, "validation_fraction", 0.2))
    steps = max(cost.steps(n_fit, cost.value(p, "batch_size", 128), cost.value(p, "max_epochs", 200)),
                cost.value(p, "min_steps", 0))
    # a step's cost grows with the tree's nodes (2^depth), beyond a fixed overhead, and steeply with layers
    layers = max(1, int(cost.value(p, "n_layers", 1)))
    per_step = _STEP_S[min(layers, len(_STEP_S)) - 1] * 30.0 ** max(0, layers - len(_STEP_S))
    return per_step * steps * (0.5 + 2.0 ** cost.value(p, "depth", 6) / 128.0)


def _dgt_cost(p, n, d):
    return cost.TimeEstimate(_tree_seconds(p, n), ("max_epochs", "min_steps"))


def _forest_cost(p, n, d):
    one = _tree_seconds(p, n * cost.value(p, "subsample", 1.0))
    return cost.TimeEstimate(cost.forest_seconds(p, one), ("n_trees", "max_epochs"))


def _bandit_cost(p, n, d):
    rounds = p.get("n_rounds") or default_rounds(int(n))
    return cost.TimeEstimate(_ROUND_S * float(rounds), ("n_rounds",))


DGT = Family(
    key="dgt",
    cost=_dgt_cost,
    label="DGT (quantised gradient descent)",
    description=(
        "Karthikeyan et al. (TMLR 2022): a complete hard oblique tree trained end to end by gradient descent. "
        "The forward pass is the hard tree (sign at every node, a fixed AND matrix, argmax over the leaves); the "
        "backward pass uses straight-through gradients, and the splits are over-parameterised by linear layers "
        "that collapse into one hyperplane per node."
    ),
    paper=PAPER,
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={"classification": "models.onnx.families:dgt_classifier", "regression": "models.onnx.families:dgt_regressor"},
    estimators={
        "classification": "models.dgt.estimators:DGTClassifier",
        "regression": "models.dgt.estimators:DGTRegressor",
    },
    params=(*_SUPERVISED, device_param(), seed_param()),
    presets={
        "quick": {"depth": 4, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 50, "min_steps": 500},
        "paper (h = 6, L = 3)": {"depth": 6, "n_layers": 3, "l1_penalty": 1e-5, "max_epochs": 200, "min_steps": 0},
        "paper, plain tree (h = 6, L = 1)": {"depth": 6, "n_layers": 1, "l1_penalty": 0.0, "min_steps": 0},
    },
    metrics={"classification": ("accuracy",), "regression": ("r2", "rmse")},  # one headline per task
    curves=_CURVES,
    test_params={"depth": 2, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 15, "min_steps": 0, "batch_size": 64,
                 "learning_rate": 0.05},
    order=40,
)

DGT_FOREST = Family(
    key="dgt_forest",
    cost=_forest_cost,
    label="DGT forest",
    description=("Bagged DGT trees (the paper's DGT-Forest): each tree trained as DGT on its own bootstrap sample; "
                 "the mean of the trees (regression) or their majority vote (classification). The defaults are "
                 "10 plain trees (L = 1) so that a forest trains in a minute; the paper used 30 trees of height 8 "
                 "with L = 3."),
    paper=PAPER,
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={
        "classification": "models.onnx.families:dgt_forest_classifier",
        "regression": "models.onnx.families:dgt_forest_regressor",
    },
    estimators={
        "classification": "models.dgt.forest:DGTForestClassifier",
        "regression": "models.dgt.forest:DGTForestRegressor",
    },
    params=(
        Param("n_trees", "int", 10, "Number of trees (the paper: 30).", low=1, high=1000),
        Param("subsample", "float", 1.0, "Bootstrap sample size as a fraction of the training rows, drawn with "
              "replacement (the paper picks from 0.7, 0.85, 0.9, 1).", low=0.05, high=1.0),
        *_with_defaults(_SUPERVISED, l1_penalty=1e-5, min_steps=500), n_jobs_param(), device_param(), seed_param(),
    ),
    presets={"quick": {"n_trees": 5, "depth": 4, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 50,
                       "min_steps": 200}},
    metrics={"classification": ("accuracy",), "regression": ("r2", "rmse")},  # one headline per task
    curves=Curves(x="tree", panels=(Panel("Validation loss of each tree", ("val_loss",)),
                                    Panel("Validation accuracy / R² of each tree", ("val_score",)))),
    # n_jobs=1: the contract test fits every estimator many times on tiny data, where starting worker
    # processes would cost more than the trees
    test_params={"n_trees": 2, "depth": 2, "n_layers": 1, "l1_penalty": 0.0, "max_epochs": 10, "min_steps": 0,
                 "batch_size": 64, "learning_rate": 0.05, "n_jobs": 1},
    order=41,
)

_REGRESSION = ("regression",)

DGT_BANDIT = Family(
    key="dgt_bandit",
    cost=_bandit_cost,
    label="DGT-Bandit (bandit feedback)",
    description=(
        "Karthikeyan et al. (TMLR 2022), Algorithm 1: the DGT tree learned online without labels. Each round the "
        "tree sees one point and plays a prediction; it is told only the loss of what it played (whether the "
        "played label was right, or the loss of a perturbed value), and updates every split from an estimate of "
        "the loss's derivative through the same straight-through gradients as supervised DGT. Training simulates "
        "this on the training set: the labels stay with an oracle that counts the loss queries."
    ),
    paper=PAPER,
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={"classification": "models.onnx.families:dgt_classifier", "regression": "models.onnx.families:dgt_regressor"},
    estimators={
        "classification": "models.dgt.bandit.trees:DGTBanditClassifier",
        "regression": "models.dgt.bandit.trees:DGTBanditRegressor",
    },
    params=(
        # Classification defaults to "auto" (⌈log2 K⌉ + 3 for K classes, 6 to 8; 6 is the paper's bandit
        # height): a fixed h = 3 has 8 leaves, fewer than digits' or optdigits' 10 classes (12.6 % on
        # optdigits, 18.5 % on digits); on the 200 000-row scale table h = 6 beat h = 5 (0.904 against 0.891).
        Param("depth", "int", None, "Height h of the complete tree: 2^h − 1 oblique splits and 2^h leaves. Auto: "
              "⌈log2 K⌉ + 3 for K classes, between 6 (the paper's) and 8.", low=1, high=10, label="height h",
              optional_label="auto", tasks=("classification",)),
        Param("depth", "int", 3, "Height h of the complete tree: 2^h − 1 oblique splits and 2^h leaves.", low=1,
              high=10, label="height h", tasks=_REGRESSION),
        Param("n_layers", "int", 1, "L linear layers in the split stack (the paper's bandit runs use 1: a plain "
              "tree); they collapse into one hyperplane per node.", low=1, high=5, label="layers L"),
        _QUANT,
        Param("exploration", "float", 0.3, "δ of ε-greedy play: each round the tree plays a uniformly drawn label "
              "with probability δ, else its own (the paper: 0.3).", low=0.0, high=1.0, label="exploration δ",
              tasks=("classification",)),
        Param("estimator", "choice", "two_point", "How the loss's derivative is estimated: two loss queries a round "
              "at prediction ± δ (exact for the squared loss), or one query at prediction + δ·(±1), which is "
              "unbiased but noisy.", choices=("two_point", "one_point"), tasks=_REGRESSION),
        Param("delta", "float", 0.5, "δ, the perturbation of the played value, on the target scaled to [0, 1] (the "
              "paper: 0.5, tuned over 0.001 to 1).", low=1e-6, high=10.0, log=True, label="perturbation δ",
              tasks=_REGRESSION),
        Param("loss", "choice", "squared", "The loss the oracle answers: squared, or Huber with ξ = 0.2 on the "
              "scaled target.", choices=("squared", "huber"), tasks=_REGRESSION),
        Param("learning_rate", "float", 1e-3, "RMSprop step size (no momentum, clipping or schedule).", low=1e-6,
              high=10.0, log=True),
        Param("accumulate", "int", 4, "Rounds per optimiser step: batch 1 with the gradients of this many rounds "
              "accumulated (the paper: 4).", low=1, high=10_000, advanced=True),
        Param("n_rounds", "int", None, ROUNDS_HELP, low=1, high=100_000_000, optional_label=AUTO_LABEL),
        Param("eval_every", "int", None, "Rounds between two records of the curves.", low=1, high=100_000_000,
              optional_label="about 50 records", advanced=True),
        device_param(), seed_param(),
    ),
    presets={
        "quick (5 000 rounds, lr 1e-2)": {"n_rounds": 5000, "learning_rate": 1e-2},
        "paper (h = 6)": {"depth": 6},
    },
    metrics={"classification": ("accuracy",), "regression": ("r2", "rmse")},  # one headline per task
    curves=Curves(x="round", panels=(
        Panel("Loss incurred (running mean) and held-out loss", ("avg_loss", "val_loss")),
        Panel("Regret against the comparator", ("regret",)),
        Panel("Held-out accuracy / R²", ("val_score",)),
        Panel("Held-out RMSE", ("val_rmse",)),
        Panel("Reward / loss played since the previous record", ("reward", "played_loss")),
    )),
    test_params={"depth": 2, "n_rounds": 200, "learning_rate": 1e-2},
    views=("bandit",),
    # The bandit view: supervised DGT with the same height, layers and quantiser (every label seen) is
    # the reference line and the regret's comparator; the online linear model is the baseline.
    comparisons=(Comparison(
        view="bandit", reference="dgt", reference_label="DGT, full supervision",
        shared={"depth": "depth", "n_layers": "n_layers", "quantizer": "quantizer"},
        reference_values="models.dgt.views:supervised_values",
        baselines={"linear (bandit feedback)": "models.dgt.views:linear_baseline"},
        plan="models.dgt.stream:stream_plan",  # the rounds and loss queries a run plays, shown on the page
    ),),
    order=42,
)

FAMILIES = (DGT, DGT_FOREST, DGT_BANDIT)
