"""λ paths: one stored run per value, in increasing order, warm-started, gathered back as rows."""

import numpy as np
import pytest

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import active_depth, run_sweep, sweep_table, sweeps, value_grid
from treeviz.services.store.runs import RunStore

PARAMS = {"depth": 2, "max_epochs": 3, "batch_size": 32}


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))


def test_value_grid():
    assert value_grid(0.1, 100, 4) == [0.1, 1.0, 10.0, 100.0]
    assert value_grid(0, 1, 3, log=False) == [0.0, 0.5, 1.0]
    with pytest.raises(TreevizError, match="positive start"):
        value_grid(0, 1, 3)
    with pytest.raises(TreevizError, match="not valid"):
        value_grid(5, 1, 3)


def test_sweep_stores_one_tagged_run_per_value_in_increasing_order(tmp_path, prepared):
    store = RunStore(tmp_path)
    results = run_sweep("latent", "classification", PARAMS, prepared, [10.0, 0.1, 1.0], store=store)
    assert [r.value for r in results] == [0.1, 1.0, 10.0]
    tags = [r.record.sweep for r in results]
    assert len({t["id"] for t in tags}) == 1
    assert [t["index"] for t in tags] == [0, 1, 2] and all(t["size"] == 3 for t in tags)
    assert [t["warm_start"] for t in tags] == [False, True, True]
    assert [r.record.params["prune_strength"] for r in results] == [0.1, 1.0, 10.0]
    (sweep_id, records), = sweeps(store).items()
    assert sweep_id == tags[0]["id"] and [r.run_id for r in records] == [r.record.run_id for r in results]
    rows = sweep_table(store, records)
    assert [row["value"] for row in rows] == [0.1, 1.0, 10.0]
    for row, result in zip(rows, results):
        assert row["n_active_nodes"] == result.n_active_nodes
        assert row["active_depth"] == result.active_depth
        assert "val_accuracy" in row and "test_accuracy" in row and row["n_nodes"] == 7


def test_warm_start_continues_the_previous_point(prepared):
    values = [0.5, 0.5000001]  # two nearly equal λ: a fresh fit repeats the first point
    warm = run_sweep("latent", "classification", PARAMS, prepared, values, store=None)
    cold = run_sweep("latent", "classification", PARAMS, prepared, values, store=None, warm_start=False)

    def weights(result):
        return result.estimator.net_.splits.linear.weight.detach().numpy()

    # cold: starts over (to float32 rounding: the two λ are different float32 numbers, and a CI run
    # under load once saw one weight differ by one unit in the last place, 4.7e-10)
    np.testing.assert_allclose(weights(cold[1]), weights(cold[0]), rtol=0, atol=1e-6)
    assert np.abs(weights(warm[1]) - weights(warm[0])).max() > 1e-4  # warm: trained further
    assert len(warm[1].estimator.history_) == PARAMS["max_epochs"]


def test_bad_sweeps_are_sentences(prepared):
    with pytest.raises(TreevizError, match="no parameter 'nope'"):
        run_sweep("latent", "classification", PARAMS, prepared, [1.0], param="nope")
    with pytest.raises(TreevizError, match="at least 0"):
        run_sweep("latent", "classification", PARAMS, prepared, [-1.0])


def test_active_depth_ignores_pruned_nodes():
    nan = np.nan
    t = Tree([1, 3, -1, -1, -1], [2, 4, -1, -1, -1], np.zeros((5, 1)), np.zeros(5),
             [[nan], [nan], [0.0], [1.0], [2.0]], active=[1, 1, 1, 0, 0])
    assert active_depth(t) == 1
    assert active_depth(Tree([1, -1, -1], [2, -1, -1], np.zeros((3, 1)), np.zeros(3), [[nan], [0], [1]],
                             active=[0, 0, 0])) == 0
