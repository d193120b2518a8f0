"""The free embedding minimised by openTSNE's gradient descent (``free_embedding(engine="opentsne")``)
beside the thesis's spectral direction, on the same t-SNE objective."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

from models.embedding.objectives import free_embedding
from models.ground.errors import TreevizError


@pytest.fixture(scope="module")
def X():
    data = StandardScaler().fit_transform(load_breast_cancer().data)
    return data[np.random.default_rng(0).permutation(data.shape[0])[:300]]


def test_opentsne_reaches_the_spectral_directions_kl_on_the_same_affinities(X):
    spectral = free_embedding(X, "tsne", perplexity=15.0, max_iter=1000, engine="spectral")
    seen = []
    ours = free_embedding(X, "tsne", perplexity=15.0, max_iter=750, engine="opentsne",
                          callback=lambda i, Z, kl: seen.append((i, tuple(Z.shape), kl)))
    assert ours.Z.shape == (300, 2) and ours.result.n_iter == 750
    assert ours.value == pytest.approx(float(ours.objective.exact().value(ours.Z)))  # the exact KL at the end
    assert ours.value < ours.result.values[0]
    assert abs(ours.value - spectral.value) <= 0.03 * spectral.value  # the same objective, within 3 %
    assert [i for i, _, _ in seen] == list(range(10, 751, 10)) and seen[0][1] == (300, 2)
    assert ours.optimizer is not None  # the spectral direction stays for the Z-steps


def test_a_stop_ends_opentsne_at_its_next_callback(X):
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 2

    seen = []
    free = free_embedding(X, "tsne", max_iter=500, engine="opentsne", stop=stop,
                          callback=lambda i, Z, kl: seen.append(i))
    assert free.result.n_iter == seen[-1] < 500 and np.isfinite(free.Z).all()  # ended at the callback that stopped


def test_opentsne_takes_t_sne_only_and_unknown_engines_are_refused(X):
    with pytest.raises(TreevizError, match="openTSNE minimises t-SNE only"):
        free_embedding(X, "ee", max_iter=10, engine="opentsne")
    with pytest.raises(TreevizError, match="engine must be one of"):
        free_embedding(X, "tsne", max_iter=10, engine="barnes")
