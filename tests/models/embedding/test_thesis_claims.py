"""The thesis's claims about tree embeddings, checked on the full breast-cancer set (569 points,
t-SNE, perplexity 15, Fig. 4.3): the tree embedding beats its direct fit, the free embedding bounds
both from below, and the learning curve starts at the direct fit and ends lower. Also the thesis's
own F-step penalty (λ fixed), offered as ``penalty_mode="fixed"``."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import MinMaxScaler

from models.embedding.tree_embedding import TreeEmbedding

# A shortened schedule (the thesis: 20 μ steps of 15 TAO iterations, free embedding to convergence).
SETTINGS = {"method": "tsne", "perplexity": 15.0, "depth": 3, "l1_penalty": 0.1, "n_mu": 8, "z_iter": 60,
            "free_iter": 500, "tao_iter": 8, "device": "cpu", "random_state": 0}


@pytest.fixture(scope="module")
def X():
    return MinMaxScaler().fit_transform(load_breast_cancer().data)  # features in [0, 1], as the thesis


@pytest.fixture(scope="module")
def fitted(X):
    return TreeEmbedding(**SETTINGS).fit(X)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_breast_cancer_tree_embedding_beats_its_direct_fit(fitted):
    free, direct, tree = fitted.free_objective_, fitted.direct_fit_objective_, fitted.objective_
    assert free <= tree < direct
    assert tree <= 0.98 * direct  # at least 2 % lower than the direct fit
    curve = [r["E_tree"] for r in fitted.history_]
    assert curve[0] == direct and curve[-1] == tree and curve[-1] < curve[0]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_the_thesis_fixed_penalty_keeps_lambda_at_every_step(X):
    model = TreeEmbedding(**{**SETTINGS, "n_mu": 3, "penalty_mode": "fixed"}).fit(X[::3])
    assert [r["tree_penalty"] for r in model.history_] == [SETTINGS["l1_penalty"]] * 4
    # its penalty objective charges μλφ(F) at each step, and neither step increases it
    for r in model.history_[1:]:
        tol = 1e-9 * max(1.0, abs(r["objective_start"]))
        assert r["objective_after_z"] <= r["objective_start"] + tol
        assert r["objective"] <= r["objective_after_z"] + tol
    last = model.history_[-1]
    R = model.Z_ - model.embedding_
    beta_before = model.multipliers_ + last["mu"] * R
    expected = (last["E_Z"] + last["mu"] * SETTINGS["l1_penalty"] * last["l1_norm"] + last["mu"] * np.sum(R * R)
                - 2.0 * np.sum(beta_before * R))
    assert last["objective"] == pytest.approx(expected, rel=1e-9)
