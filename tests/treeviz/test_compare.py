"""Runs side by side: grouping by data set, the leaderboard's order, and the Pareto front."""

import numpy as np
import pytest

from treeviz.plots import pareto_figure
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.compare import groups, pareto_mask, score_of
from treeviz.ui.run_tables import leaderboard


def test_pareto_front_by_brute_force():
    rng = np.random.default_rng(0)
    size, score = rng.integers(1, 20, 60).astype(float), rng.random(60)
    size[3], score[7] = np.nan, np.nan
    mask = pareto_mask(size, score)
    for i in range(60):
        if not (np.isfinite(size[i]) and np.isfinite(score[i])):
            assert not mask[i]
            continue
        dominated = any(size[j] <= size[i] and score[j] >= score[i] and (size[j] < size[i] or score[j] > score[i])
                        for j in range(60) if np.isfinite(size[j]) and np.isfinite(score[j]))
        assert mask[i] == (not dominated)
    # lower-is-better scores (RMSE) flip the direction
    assert pareto_mask([1, 2, 3], [5.0, 4.0, 4.5], higher_is_better=False).tolist() == [True, True, False]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("compare"))
    iris = prepare(load_dataset("iris"), PrepConfig(seed=0))
    for family, params in (("cart", {"max_depth": 1}), ("cart", {"max_depth": 3}), ("tao", {"depth": 2, "max_iter": 3}),
                           ("latent", {"depth": 2, "max_epochs": 5})):
        train_run(family, "classification", params, iris, store=store)
    train_run("cart", "regression", {"max_depth": 2}, prepare(load_dataset("diabetes"), PrepConfig(seed=0)),
              store=store)
    return store


def test_runs_group_by_data_set_and_the_leaderboard_ranks_by_the_tasks_score(store):
    found = groups(store.list())
    assert [(g.dataset, g.task, len(g.runs)) for g in found] == [("iris", "classification", 4),
                                                                  ("diabetes", "regression", 1)]
    iris = found[0]
    score = score_of(iris.task, iris.runs)
    assert score.key == "test_accuracy"
    rows = leaderboard(iris.runs, score)
    values = [r["score"] for r in rows]
    assert values == sorted(values, reverse=True)
    assert len({r["family"] for r in rows}) == 3
    assert all(r["device"] == "cpu" for r in rows)  # recorded with the run
    assert all(r["nonzero weights"] is not None and r["FLOPs / sample"] is not None for r in rows)
    assert score_of("regression", found[1].runs).key == "test_r2"


def test_the_pareto_figure_marks_the_front(store):
    iris = groups(store.list())[0]
    score = score_of(iris.task, iris.runs)
    size = [r.metrics["n_nonzero_weights"] for r in iris.runs]
    value = [r.metrics[score.key] for r in iris.runs]
    front = pareto_mask(size, value)
    points = [{"size": s, "score": v, "family": r.family, "name": r.name, "front": bool(f)}
              for r, s, v, f in zip(iris.runs, size, value, front)]
    fig = pareto_figure(points, size_label="nonzero weights", score_label="test accuracy")
    assert fig.layout.meta["front"] == [p["name"] for p in sorted(points, key=lambda p: p["size"]) if p["front"]]
    assert fig.data[0].name == "Pareto front" and len(fig.data) == 1 + len({p["family"] for p in points})
