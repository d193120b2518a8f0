"""Latent trees as a treeviz family: estimators, hyperparameter schema, presets, λ path and views
(no heavy imports; the estimators import torch when first used)."""

from models import cost
from models.schema import Curves, Family, LambdaPath, Panel, Param, device_param, seed_param

_STEP_S = 3e-3  # seconds per optimiser step (10 epochs, 170 steps on 1 200 × 19: 0.5 s)

_SUPERVISED = ("classification", "regression")
#: A clustering task starts from the paper's clustering setting (ICML 2021, self-supervised
#: hierarchical clustering), not from the classifier's: on 4 Gaussian blobs (the catalogue's "blobs",
#: seeds 0-4) the classifier's settings gave a test dendrogram purity of 0.42-0.57, mean 0.51 (seed
#: 0 used 2 of 8 leaves), these 0.54-0.62, mean 0.56. The clustering estimator's own defaults are these.
_CLUSTERING = {"depth": 4, "batch_size": 8, "learning_rate": 1e-3, "prune_strength": 10.0}
_PRUNE_HELP = ("Pruning strength λ of the QP; it competes with a sum over each batch, so the same λ prunes more "
               "with smaller batches (0 = no pruning).")


def _cost(p, n, d):
    n_fit = n * (1.0 - cost.value(p, "validation_fraction", 0.1))
    steps = cost.steps(n_fit, cost.value(p, "batch_size", 64), cost.value(p, "max_epochs", 100))
    return cost.TimeEstimate(_STEP_S * steps, ("max_epochs", "batch_size"))


LATENT = Family(
    key="latent",
    cost=_cost,
    label="Latent trees (argmin differentiation)",
    description=(
        "Zantedeschi, Kusner & Niculae (ICML 2021): a complete oblique binary tree whose nodes are "
        "pruned by a quadratic program solved inside the network; predictions come from a learned "
        "predictor on [x; z]. Larger pruning strength λ switches off more nodes."
    ),
    paper="Learning Binary Decision Trees by Argmin Differentiation (ICML 2021)",
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={
        "classification": "models.onnx.latent:classifier",
        "regression": "models.onnx.latent:regressor",
        "clustering": "models.onnx.latent:clustering",
    },
    estimators={
        "classification": "models.latent.estimators:LatentTreeClassifier",
        "regression": "models.latent.estimators:LatentTreeRegressor",
        "clustering": "models.latent.estimators:LatentTreeClustering",
    },
    params=(
        Param("depth", "int", None,
              "Depth D of the complete tree (2^D − 1 oblique splits). Auto: 3, or for K classes enough "
              "leaves for every class (2^D ≥ K), at most 6.", low=1, high=10, optional_label="auto",
              tasks=_SUPERVISED),
        Param("depth", "int", _CLUSTERING["depth"],
              "Depth D of the complete tree (2^D − 1 oblique splits): at most 2^D clusters. Auto: 3.",
              low=1, high=10, optional_label="auto", tasks=("clustering",)),
        Param("prune_strength", "float", 1.0, _PRUNE_HELP, low=0.0, high=1e4, log=True,
              label="pruning strength λ", tasks=_SUPERVISED),
        Param("prune_strength", "float", _CLUSTERING["prune_strength"], _PRUNE_HELP, low=0.0, high=1e4,
              log=True, label="pruning strength λ", tasks=("clustering",)),
        Param("split", "choice", "linear", "Split function: linear, or linear followed by ELU.",
              choices=("linear", "elu")),
        Param("head", "choice", "linear", "Predictor on [x; z]: one linear layer or an MLP.",
              choices=("linear", "mlp")),
        Param("head_layers", "int", 2, "Linear layers of the MLP predictor (widths 64, 128, …).",
              low=1, high=8),
        Param("dropout", "float", 0.0, "Dropout between the MLP's layers.", low=0.0, high=0.9),
        Param("target_features", "text", "0",
              "Features to reconstruct from the others (indexes or names, comma-separated); "
              "the tree's leaves are the clusters.", tasks=("clustering",)),
        Param("learning_rate", "float", 1e-2, "Step size of the optimiser.", low=1e-6, high=1.0, log=True,
              tasks=_SUPERVISED),
        Param("learning_rate", "float", _CLUSTERING["learning_rate"], "Step size of the optimiser.", low=1e-6,
              high=1.0, log=True, tasks=("clustering",)),
        Param("batch_size", "int", 64, "Samples per training step (and per pruning QP).", low=2,
              high=1_000_000, tasks=_SUPERVISED),
        Param("batch_size", "int", _CLUSTERING["batch_size"], "Samples per training step (and per pruning QP).",
              low=2, high=1_000_000, tasks=("clustering",)),
        Param("max_epochs", "int", 100, "Most passes over the training data.", low=1, high=100_000),
        Param("patience", "int", 10,
              "Stop after this many epochs without a better validation loss (best weights kept; "
              "0 = never stop early).", low=0, high=100_000),
        Param("validation_fraction", "float", 0.1,
              "Fraction of the training rows held out for early stopping when fit is given no "
              "validation set, as scikit-learn's early_stopping does (0 = none).",
              low=0.0, high=0.5, advanced=True),
        Param("optimizer", "choice", "qhadam", "QHAdam (the papers) or Adam.", choices=("qhadam", "adam"),
              advanced=True),
        Param("lr_patience", "int", 2,
              "Epochs without validation improvement before the learning rate is divided by 10 "
              "(0 = never).", low=0, high=100_000, advanced=True),
        Param("readout", "choice", "code",
              "How z is read from the pruning vector: 'code' (hard paths, reproduces the published "
              "numbers) or 'paper' (the exact argmin of the relaxed problem).", choices=("code", "paper"),
              advanced=True),
        Param("formulation", "choice", "icml",
              "ICML 2021 (λ inside the QP) or the 2020 preprint (learned per-node η, penalty λ‖η‖∞).",
              choices=("icml", "preprint"), advanced=True),
        Param("inference", "choice", "frozen",
              "Prediction: 'frozen' solves the pruning once on the training data; 'batch' re-solves it "
              "on every evaluation batch, as the papers do.", choices=("frozen", "batch"), advanced=True),
        Param("eval_batch_size", "int", None, "Rows per evaluation batch with inference='batch'.",
              low=2, high=1_000_000, optional_label="2 × batch size", advanced=True),
        Param("warm_start", "bool", False, "Continue from the current weights when refitted.",
              advanced=True),
        device_param(),
        seed_param(),
    ),
    presets={
        "quick": {"depth": 3, "max_epochs": 30},
        "paper": {"depth": 4, "batch_size": 512, "learning_rate": 1e-3, "optimizer": "qhadam",
                  "max_epochs": 100, "patience": 10, "lr_patience": 2},
        "clustering (paper)": {**_CLUSTERING, "split": "linear", "head": "linear"},
    },
    lambda_path=LambdaPath(
        param="prune_strength", low=0.1, high=100.0, count=5, warm_start=True, figure="activity",
        sizes=("n_active_nodes", "active_depth"), tree_view="activity",
        note=("Node colour = activity a_t solved once on the training data with λ scaled to the batch "
              "size; predictions come from the predictor on [x; z], not from leaf values."),
    ),
    curves=Curves(x="epoch", panels=(
        Panel("Loss", ("loss", "val_loss")),
        Panel("Score", ("train_score", "val_score")),
        Panel("Active nodes (each epoch's weights)", ("n_active_nodes",)),
        Panel("Active fraction", ("active_fraction", "batch_active_fraction")),
    ), kept="val_loss"),  # early stopping restores the epoch of lowest validation loss
    views=("clustering",),
    test_params={"depth": 2, "max_epochs": 20, "learning_rate": 0.05, "batch_size": 32},
    order=10,
)

FAMILIES = (LATENT,)
