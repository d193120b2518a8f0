"""Error against the labelled fraction (the Semi-supervised page's comparison) on two moons."""

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.views.label_curve import PROPAGATION, label_curve, supervised_label

#: The reference LapTAO declares for its semi-supervised view (supervised TAO on the labelled points).
SUPERVISED = supervised_label("laptao")

QUICK = {"depth": 3, "n_mu": 3, "tao_iter": 3}


@pytest.fixture(scope="module")
def moons():
    return prepare(load_dataset("moons"), PrepConfig(seed=0))


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_every_method_is_scored_on_the_same_labelled_subsets(moons):
    rows = label_curve("laptao", "classification", QUICK, moons, fractions=(0.2, 0.05), seeds=(0, 1))
    methods = ["LapTAO", "LapTAO (its unlabelled training points)", SUPERVISED, PROPAGATION]
    assert [r["method"] for r in rows[:4]] == methods and len(rows) == 16
    assert [r["fraction"] for r in rows[::4]] == [0.05, 0.05, 0.2, 0.2]  # sorted, then by seed
    n_train = moons.X_train.shape[0]
    for group in (rows[i : i + 4] for i in range(0, 16, 4)):
        assert len({(r["fraction"], r["seed"], r["n_labelled"]) for r in group}) == 1  # one subset per group
        assert group[0]["n_labelled"] == pytest.approx(group[0]["fraction"] * n_train, abs=2)
        assert all(0.0 <= r["error"] <= 1.0 for r in group)
    # two seeds draw two different subsets at the same fraction, and more labels help the tree on labels only
    sup = {(r["fraction"], r["seed"]): r["error"] for r in rows if r["method"] == SUPERVISED}
    assert np.mean([sup[0.2, s] for s in (0, 1)]) <= np.mean([sup[0.05, s] for s in (0, 1)]) + 0.05


def test_regression_has_no_label_propagation_and_reports_rmse():
    prepared = prepare(load_dataset("diabetes"), PrepConfig(seed=0))
    rows = label_curve("laptao", "regression", QUICK, prepared, fractions=(0.2,), seeds=(0,))
    assert [r["method"] for r in rows] == ["LapTAO", "LapTAO (its unlabelled training points)", SUPERVISED]
    assert all(r["error"] > 1.0 for r in rows)  # RMSE in the target's units (tens)


def test_bad_requests_get_sentences(moons):
    with pytest.raises(TreevizError, match="does not learn from unlabelled points"):
        label_curve("tao", "classification", {}, moons)
    with pytest.raises(TreevizError, match="between 0 and 1"):
        label_curve("laptao", "classification", QUICK, moons, fractions=(0.0,))
