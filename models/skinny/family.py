"""Skinny Trees as a treeviz family: estimators, hyperparameter schema, presets, λ path, curves and
the feature-budget search (no heavy imports; the estimators import torch when first used)."""

import math

from models import cost
from models.schema import (
    Curves,
    Family,
    FeatureSelection,
    LambdaPath,
    Panel,
    Param,
    SearchRange,
    device_param,
    seed_param,
)

_STEP_S = 1e-3  # seconds per SGD step of a 20-tree ensemble (5 epochs, 375 steps on 1 200 × 19: 0.36 s)
#: Trials of an "auto" λ0 (len(models.skinny.auto.RATIOS); kept here so the schema imports no torch).
AUTO_TRIALS = 5


def _cost(p, n, d):
    batch = cost.value(p, "batch_size", 16)
    per_epoch = math.ceil(max(n, 1.0) / max(batch, 1.0))
    epochs = p.get("max_epochs") or min(300, max(10, math.ceil(10_000 / per_epoch)))  # the "auto" epochs
    trees = cost.value(p, "n_trees", 20) / 20.0
    trials = AUTO_TRIALS if p.get("lambda0") is None else 1  # an "auto" λ0 trains its path together
    return cost.TimeEstimate(_STEP_S * float(epochs) * per_epoch * max(trees, 0.05) * trials,
                             ("max_epochs", "n_trees"))


SKINNY = Family(
    key="skinny",
    cost=_cost,
    label="Skinny Trees (feature selection)",
    description=(
        "Ibrahim, Behdin & Mazumder (AISTATS 2024): an ensemble of soft oblique trees trained by proximal "
        "SGD with a group-ℓ0 penalty, where a group is one feature's weights in every node of every tree. "
        "Whole features are removed during training; larger λ0 keeps fewer."
    ),
    paper="End-to-end Feature Selection Approach for Learning Skinny Trees (AISTATS 2024)",
    # the ONNX graph of each task's fitted models (models.onnx)
    onnx={"classification": "models.onnx.skinny:classifier", "regression": "models.onnx.skinny:regressor"},
    estimators={
        "classification": "models.skinny.estimators:SkinnyTreesClassifier",
        "regression": "models.skinny.estimators:SkinnyTreesRegressor",
    },
    params=(
        Param("n_trees", "int", 20, "Number of soft trees m (their outputs are summed).", low=1, high=1000),
        Param("depth", "int", 4, "Depth d of every tree (2^d − 1 oblique split nodes each).", low=1, high=10),
        # The authors' code uses λ0 = 100 (γ = 100/p): on digits that removed nothing, not even the
        # pixels that are zero in every row, and on xor it removed one of the two features the fit
        # needs (0.55 test accuracy). 300 (their "fast demo" multiplier) scored below CART on a
        # 20-feature table of 20 000 rows. The default, auto, trains a short λ0 path relative to the
        # kernel's initial row norm as one batched program and keeps the largest λ0 whose validation
        # score stays within a point of keeping every feature (models/skinny/auto.py).
        Param("lambda0", "float", None,
              "Group-ℓ0 strength λ0 before division by the number of features p. Larger keeps fewer "
              "features. Auto: 5 values trained together (no penalty, then thresholds at 0.8 to 1.2 times "
              "the initial weight-row norm); the largest whose validation score is within 0.01 of the best "
              "is kept. The authors' code uses 100.",
              low=0.0, high=1e7, log=True, label="λ0 (× 1/p)", optional_label="auto"),
        Param("schedule", "choice", "dense_to_sparse",
              "Dense-to-sparse: ramp λ0 from 0 as (λ0/p)(1 − e^(−s·t)) over the optimiser steps t; "
              "fixed: λ0/p from the first step.", choices=("dense_to_sparse", "fixed")),
        Param("temperature", "float", 0.01, "s: how fast the dense-to-sparse ramp rises, per optimiser step.",
              low=1e-7, high=10.0, log=True, label="ramp rate s"),
        Param("lambda2", "float", 0.1, "Ridge strength λ2 on the split weights (used as λ2 / (m(2^d − 1))).",
              low=0.0, high=1e4, log=True, label="ridge λ2"),
        Param("learning_rate", "float", 0.1, "Step size of plain SGD (no momentum, constant).", low=1e-6,
              high=100.0, log=True),
        Param("batch_size", "int", 16, "Rows per SGD step (and per prox step).", low=1, high=1_000_000),
        Param("max_epochs", "int", None,
              "Passes over the training data (no early stopping, as in the paper). Auto: about 10 000 "
              "optimiser steps (1 000 per class when that is more), between 10 and 300 epochs.", low=1,
              high=100_000, optional_label="auto"),
        Param("activation", "choice", "sigmoid",
              "Routing function: the logistic sigmoid (the authors' code) or the smooth-step, which is exactly "
              "0 or 1 beyond ±γ_ss/2.", choices=("sigmoid", "smoothstep"), advanced=True),
        Param("smoothstep_width", "float", 1.0, "γ_ss: width of the smooth-step's soft band (smoothstep only).",
              low=1e-6, high=1e6, log=True, label="smooth-step width γ_ss", advanced=True),
        Param("penalty", "choice", "l0",
              "Group ℓ0 with hard thresholding (Skinny Trees), or the group-lasso baseline (block soft "
              "thresholding with λ1; no ridge term).", choices=("l0", "group_lasso"), advanced=True),
        Param("lambda1", "float", 1.0, "Group-lasso strength λ1 (used as λ1 / √(m(2^d − 1))); group_lasso only.",
              low=0.0, high=1e6, log=True, label="group-lasso λ1", advanced=True),
        Param("min_features", "int", 1,
              "Never remove features below this count: the largest groups are kept when the prox would remove "
              "more (0 = the paper's operator, which may remove every feature).", low=0, high=1_000_000,
              advanced=True),
        Param("target_scaling", "choice", "standard",
              "Train on z-scored targets (predictions in the data's units), or on the raw targets as the "
              "paper's synthetic experiments do.", choices=("standard", "none"), tasks=("regression",),
              advanced=True),
        device_param(),
        seed_param(),
    ),
    presets={
        "quick": {"n_trees": 10, "depth": 3, "max_epochs": 50},
        "toy example (paper)": {"n_trees": 20, "depth": 4, "lambda0": 100.0, "lambda2": 0.1, "temperature": 0.01,
                                "learning_rate": 0.1, "batch_size": 16, "max_epochs": 1000},
        "single tree": {"n_trees": 1, "depth": 4, "schedule": "fixed", "lambda0": 30.0, "max_epochs": 200},
        "group lasso (baseline)": {"penalty": "group_lasso", "lambda1": 1.0},
    },
    metrics={"classification": ("accuracy", "auc"), "regression": ("r2", "rmse")},  # one headline per task
    lambda_path=LambdaPath(
        param="lambda0", low=30.0, high=3000.0, count=5, warm_start=False, figure="sparsity",
        sizes=("n_features", "n_nonzero_weights"), tree_view="structure",
        note="One tree of the ensemble at this λ0; the Features page shows which features every tree uses.",
    ),
    curves=Curves(x="epoch", panels=(
        Panel("Loss", ("loss", "val_loss")),
        Panel("Validation accuracy / R²", ("val_score",)),
        Panel("Features kept", ("n_features",)),
        Panel("λ0 / p", ("lambda0",)),
    )),
    feature_selection=FeatureSelection(
        count="n_features", schedule="lambda0", schedule_label="λ0 / p (dense-to-sparse ramp)",
        # The paper searches m, d, batch, epochs, λ2, s and the learning rate over ~2000 trials with
        # γ fixed at 100/p; with a few dozen trials, sampling λ0 too reaches a budget far more often.
        search={
            "n_trees": SearchRange(5, 50),
            "depth": SearchRange(2, 5),
            "lambda0": SearchRange(20.0, 1000.0, log=True),
            "lambda2": SearchRange(1e-3, 1.0, log=True),
            "temperature": SearchRange(1e-4, 0.1, log=True),
            "learning_rate": SearchRange(0.02, 1.0, log=True),
            "batch_size": SearchRange(choices=(16, 64, 256)),
        },
        trials=16,
    ),
    # λ0 = 10: scikit-learn's checks use two-feature data, where λ0 = 300 keeps a single feature
    test_params={"n_trees": 4, "depth": 2, "max_epochs": 30, "batch_size": 16, "learning_rate": 0.2, "lambda0": 10.0},
    order=30,
)

FAMILIES = (SKINNY,)
