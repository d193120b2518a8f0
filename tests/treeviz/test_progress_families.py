"""Every family reports its work done against its work planned, as the job's progress bar reads it.

Each family trains with its small test parameters through :func:`train_run`, with the app's
:class:`ProgressCallback` on a real :class:`Job`; after every report the test notes the job's raw
fraction (units done over the planned total, over the stages) and its planned total. No timing is
asserted: the time left is a pace over these same units (tests/treeviz/test_jobs_progress.py).
"""

from __future__ import annotations

import pytest

from models.registry import families, get_family
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import ProgressCallback, train_run
from treeviz.services.jobs.manager import Job, Progress


class Watched(Progress):
    """The app's progress handle, noting (event, raw fraction, planned total) after each report."""

    def __init__(self, job: Job) -> None:
        super().__init__(job)
        self.seen: list[tuple[str, float, int | None]] = []

    def _note(self, event: str) -> None:
        self.seen.append((event, self._job._raw_progress(), self._job.total))

    def begin(self, total):
        super().begin(total)
        self._note("begin")

    def advance(self, done, total=None):
        super().advance(done, total)
        self._note("advance")

    def record(self, values):
        super().record(values)
        self._note("record")


@pytest.fixture(scope="module")
def tables():
    return {task: prepare(load_dataset(key), PrepConfig(seed=0))
            for task, key in (("classification", "iris"), ("regression", "diabetes"), ("embedding", "iris"))}


def watch(family_key: str, task: str, prepared, params: dict | None = None) -> Watched:
    family = get_family(family_key)
    job = Job("job-test", family_key, fn=lambda progress: None)
    progress = Watched(job)
    train_run(family_key, task, {**family.test_params, **(params or {})}, prepared,
              callbacks=[ProgressCallback(progress)])
    return progress


CASES = [(key, task) for key in families() for task in get_family(key).tasks if task != "clustering"]


@pytest.mark.parametrize(("family_key", "task"), CASES)
def test_each_family_reports_progress_that_ends_at_one(tables, family_key, task):
    seen = watch(family_key, task, tables[task]).seen
    assert seen[0][0] == "begin" and seen[0][1] == 0.0
    fractions = [f for _, f, _ in seen]
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert fractions[-1] == pytest.approx(1.0)  # the fit's end reaches its planned total
    # the bar as shown (never going back) rises through the fit, not only at its end
    shown = [max(fractions[: i + 1]) for i in range(len(fractions))]
    assert shown == sorted(shown)
    if len([e for e, _, _ in seen if e == "record"]) > 1:
        assert any(0.0 < f < 1.0 for f in fractions)


def test_tao_that_converges_early_plans_fewer_iterations_and_jumps_to_the_end(tables):
    seen = watch("tao", "regression", tables["regression"], {"max_iter": 50, "depth": 4}).seen
    records = [(f, total) for e, f, total in seen if e == "record"]
    assert len(records) < 50  # it converged
    assert seen[0][2] == 51  # 50 iterations and the finishing step were planned at first
    assert min(total for _, total in records) < 51  # the plan shrank as it converged
    assert seen[-1][1] == 1.0


def test_latent_trees_plan_their_early_stop(tables):
    seen = watch("latent", "classification", tables["classification"],
                 {"max_epochs": 200, "patience": 3, "lr_patience": 1}).seen
    records = [total for e, _, total in seen if e == "record"]
    assert len(records) < 200
    assert max(records) < 200  # the plan follows the early stop, not max_epochs
    assert seen[-1][1] == 1.0


def test_a_dgt_forest_reports_its_epochs_while_its_trees_train_together(tables):
    seen = watch("dgt_forest", "classification", tables["classification"]).seen
    first_tree = next(i for i, (e, _, _) in enumerate(seen) if e == "record")
    during = [f for e, f, _ in seen[:first_tree] if e == "advance"]
    assert len(during) >= 5 and 0.0 < during[0] < during[-1]  # the bar moved before any tree ended


def test_the_tree_embedding_weighs_its_free_embedding_over_its_mu_steps(tables):
    seen = watch("tree_embedding", "embedding", tables["embedding"], {"free_iter": 100}).seen
    first = next(i for i, (e, _, _) in enumerate(seen) if e == "record")
    assert any(e == "advance" and 0.0 < f < seen[first][1] for e, f, _ in seen[:first])  # moves during it
    # the μ path's share of the plan is timed (tests/models/embedding/test_tree_embedding.py), not one unit
    # of n_mu + 1: the free embedding is a sizeable part of the work, and not all of it
    assert 0.2 < seen[first][1] < 1.0
    assert seen[-1][1] == 1.0
