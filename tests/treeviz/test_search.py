"""Feature-budget searches: budgets, sampled trials, the selection rule, refinement, cancel, the store."""

from __future__ import annotations

import pytest

from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import get_family
from models.schema import SearchRange
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.search import (
    Trial,
    budget_search,
    budget_size,
    run_trials,
    sample_params,
    searches,
    select_best,
    stored_best,
)
from treeviz.services.store.runs import RunStore

TINY = {"n_trees": 3, "depth": 2, "max_epochs": 6}


@pytest.fixture(scope="module")
def prepared():
    return prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))


def test_a_budget_is_a_count_or_a_fraction():
    assert budget_size(0.25, 30) == 7 and budget_size(0.01, 30) == 1 and budget_size(5, 30) == 5
    assert budget_size(5.0, 30) == 5 and budget_size(100, 30) == 30
    for bad in (0, -1, 1.5, float("nan"), True, "3"):
        with pytest.raises(TreevizError, match="budget"):
            budget_size(bad, 30)


def test_trials_draw_the_searched_parameters_and_keep_the_fixed_ones():
    family = get_family("skinny")
    a = sample_params(family, "classification", {"n_trees": 1, "max_epochs": 7}, 6, seed=3)
    assert a == sample_params(family, "classification", {"n_trees": 1, "max_epochs": 7}, 6, seed=3)
    assert a != sample_params(family, "classification", {"n_trees": 1, "max_epochs": 7}, 6, seed=4)
    assert all(t["n_trees"] == 1 and t["max_epochs"] == 7 for t in a)  # fixed by the caller: not searched
    assert len({t["random_state"] for t in a}) == 6  # every trial its own seed
    for t in a:
        assert 2 <= t["depth"] <= 5 and 20 <= t["lambda0"] <= 1000 and t["batch_size"] in (16, 64, 256)
        assert isinstance(t["depth"], int)
    with pytest.raises(TreevizError, match="does not select features"):
        sample_params(get_family("cart"), "classification", {}, 2, seed=0)


def test_a_caller_widens_or_replaces_the_familys_ranges():
    family = get_family("skinny")
    wider = {"max_epochs": SearchRange(choices=(None, 100)), "depth": SearchRange(choices=(3,))}
    drawn = sample_params(family, "classification", {}, 40, seed=1, search=wider)
    assert {t["max_epochs"] for t in drawn} == {None, 100}  # added: max_epochs is not in the family's ranges
    assert {t["depth"] for t in drawn} == {3}  # replaced
    assert all(20 <= t["lambda0"] <= 1000 for t in drawn)  # the family's other ranges still apply
    assert all("max_epochs" not in t for t in sample_params(family, "classification", {}, 40, seed=1))
    with pytest.raises(TreevizError, match="no parameter 'epochs'"):
        sample_params(family, "classification", {}, 2, seed=0, search={"epochs": SearchRange(1, 5)})


def trial(i, n, auc, error=None):
    return Trial(i, {}, {"n_features": n, "val_auc": auc, "val_accuracy": 0.5}, error=error)


def test_the_best_validation_score_within_the_budget_fewer_features_at_a_tie():
    trials = [trial(0, 10, 0.99), trial(1, 0, 0.98), trial(2, 5, 0.95), trial(3, 3, 0.95), trial(4, 4, 0.97, "x")]
    assert select_best(trials, 7, "classification").index == 3
    assert select_best(trials, 10, "classification").index == 0
    assert select_best(trials, 2, "classification") is None
    regression = [Trial(0, {}, {"n_features": 2, "val_r2": 0.5}), Trial(1, {}, {"n_features": 2, "val_r2": 0.7})]
    assert select_best(regression, 2, "regression").index == 1


def test_a_search_without_a_store_returns_models_and_refines_the_best(prepared):
    result = budget_search("skinny", "classification", prepared, budget=0.25, n_trials=4, params=TINY, seed=1,
                           n_jobs=1, refine=2)
    assert result.budget == 7 and result.n_inputs == 30 and len(result.trials) in (4, 6)
    assert [t.index for t in result.trials] == list(range(len(result.trials)))
    assert all(t.estimator is not None and t.run_id is None for t in result.trials if t.error is None)
    best = result.best
    if best is not None:
        assert 0 < best.n_features <= 7 and best.estimator.selected_features_.size == best.n_features
        random = select_best(result.trials[:4], 7, "classification")
        refined = result.trials[4:]
        assert len(refined) == 2
        assert [t.params["lambda0"] for t in refined] == pytest.approx(
            [random.params["lambda0"] * 0.9, random.params["lambda0"] * 0.5], rel=1e-3)


@pytest.mark.slow  # a heavy end-to-end run; the full tier runs it, the fast one (-m "not slow") leaves it out
def test_a_stored_search_is_one_tagged_group_and_its_best_is_recomputed(prepared, tmp_path):
    store = RunStore(tmp_path)
    result = budget_search("skinny", "classification", prepared, budget=10, n_trials=3, params=TINY, seed=2,
                           store=store, refine=0)
    (found,) = searches(store).values()
    assert [r.sweep["index"] for r in found] == [0, 1, 2]
    assert {r.sweep["kind"] for r in found} == {"budget_search"} and found[0].sweep["budget"] == 10
    assert [t.run_id for t in result.trials] == [r.run_id for r in found]
    best = stored_best(found)
    assert (best.run_id if best else None) == (result.best.run_id if result.best else None)


class Recorder:
    """A job's progress handle that keeps what it is told."""

    def __init__(self):
        self.records, self.total = [], None

    def stages(self, n):
        pass

    def begin(self, total):
        self.total = total

    def record(self, values):
        self.records.append(values)


class CancelAfterFirst(Recorder):
    def record(self, values):
        super().record(values)
        raise TrainingCancelled()


def test_a_cancel_stops_the_search(prepared):
    progress = CancelAfterFirst()
    with pytest.raises(TrainingCancelled):
        budget_search("skinny", "classification", prepared, budget=5, n_trials=3, params=TINY, n_jobs=1,
                      progress=progress, refine=0)
    assert len(progress.records) == 1 and progress.total == 3


def test_only_families_that_select_features_search(prepared):
    with pytest.raises(TreevizError, match="does not select features"):
        budget_search("cart", "classification", prepared, budget=5)


def _same_trials(a, b):
    assert [t.index for t in a.trials] == [t.index for t in b.trials]
    for x, y in zip(a.trials, b.trials, strict=True):
        assert x.params == y.params and x.error == y.error
        assert x.metrics.keys() == y.metrics.keys() and x.metrics["n_features"] == y.metrics["n_features"]
        for key, value in x.metrics.items():
            assert value == pytest.approx(y.metrics[key], rel=1e-4, abs=1e-5), key


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_trials_of_one_shape_train_together_as_they_would_alone(prepared, monkeypatch):
    """A batched search (trials of one shape fitted together through the estimator class's
    fit_together hook) gives the trials of the one-at-a-time search with the same seed: the same
    parameters, metrics and selected features, refinement trials included."""
    from models.skinny.estimators import SkinnyTreesClassifier

    batches = []
    hook = SkinnyTreesClassifier.fit_together
    monkeypatch.setattr(SkinnyTreesClassifier, "fit_together",
                        staticmethod(lambda estimators, *a, **kw: batches.append(len(estimators)) or hook(
                            estimators, *a, **kw)))
    kw = dict(budget=0.5, n_trials=6, params={**TINY, "n_trees": 4}, seed=5, n_jobs=1, refine=3)
    together = budget_search("skinny", "classification", prepared, **kw)
    alone = budget_search("skinny", "classification", prepared, together=False, **kw)
    assert len(together.trials) == 9 and batches == [3, 2, 3]  # batch sizes 256 and 16 drawn; the 3 refinements
    _same_trials(together, alone)
    for x, y in zip(together.trials, alone.trials, strict=True):
        if x.error is None:
            assert x.estimator.feature_names_ == y.estimator.feature_names_ == tuple(prepared.dataset.feature_names)
            assert x.estimator.selected_features_.tolist() == y.estimator.selected_features_.tolist()
    assert (together.best.index if together.best else None) == (alone.best.index if alone.best else None)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_stored_trials_trained_together_are_the_same_runs(prepared, tmp_path):
    kw = dict(budget=10, n_trials=4, params={**TINY, "batch_size": 32}, seed=2, refine=0)
    together = budget_search("skinny", "classification", prepared, store=RunStore(tmp_path / "a"), **kw)
    alone = budget_search("skinny", "classification", prepared, store=RunStore(tmp_path / "b"), together=False, **kw)
    _same_trials(together, alone)
    (a,), (b,) = searches(RunStore(tmp_path / "a")).values(), searches(RunStore(tmp_path / "b")).values()
    assert [r.name for r in a] == [r.name for r in b] and [r.params for r in a] == [r.params for r in b]
    assert [{**r.sweep, "id": None} for r in a] == [{**r.sweep, "id": None} for r in b]
    assert all(r.status == "finished" and r.duration_s > 0 for r in a)


def test_a_family_without_the_hook_trains_each_trial_alone(prepared, monkeypatch):
    """Without a fit_together hook on the estimator class, every trial is its own fit."""
    import treeviz.services.experiments.search as search
    from models.skinny.estimators import SkinnyTreesClassifier

    monkeypatch.setattr(SkinnyTreesClassifier, "fit_together", None)
    fits = []
    real = search.train_run
    monkeypatch.setattr(search, "train_run", lambda *a, **kw: fits.append(a[2]) or real(*a, **kw))
    result = budget_search("skinny", "classification", prepared, budget=5, n_trials=3,
                           params={**TINY, "batch_size": 32}, seed=1, n_jobs=1, refine=0)
    assert len(fits) == 3 and [t.params for t in result.trials] == fits


def test_a_cancel_stops_a_batched_search(prepared):
    progress = CancelAfterFirst()
    with pytest.raises(TrainingCancelled):
        budget_search("skinny", "classification", prepared, budget=5, n_trials=3, params={**TINY, "batch_size": 32},
                      n_jobs=1, progress=progress, refine=0)
    assert len(progress.records) == 1 and progress.total == 3


def test_run_trials_numbers_trials_from_start_as_one_search_continued(prepared):
    family = get_family("skinny")
    settings = sample_params(family, "classification", TINY, 5, seed=4)
    whole = budget_search("skinny", "classification", prepared, budget=0.5, n_trials=5, params=TINY, seed=4,
                          n_jobs=1, refine=0)
    part = run_trials("skinny", "classification", prepared, settings[3:], start=3, n_jobs=1)
    assert sorted(t.index for t in part) == [3, 4]
    by_index = {t.index: t for t in whole.trials}
    for t in part:  # the same draws, the same seeds: the same fits as the whole search's
        assert t.params == by_index[t.index].params
        assert t.metrics["val_auc"] == pytest.approx(by_index[t.index].metrics["val_auc"], abs=1e-6)


def test_progress_counts_trials_across_the_random_and_refinement_stages(prepared):
    progress = Recorder()
    result = budget_search("skinny", "classification", prepared, budget=0.5, n_trials=3, params=TINY, seed=1,
                           n_jobs=1, refine=2, progress=progress)
    assert progress.total == 5 and len(result.trials) == 5  # a trial within the budget: both stages ran
    assert [r["trial"] for r in progress.records] == list(range(1, len(result.trials) + 1))
