"""The first-training benchmark's quick path: a warm-up into an empty numba cache, then two
trainings as the app runs them (a primed job manager) in a fresh process, with and without the
warm-up."""

import pytest

from benchmarks.speed import first_training


@pytest.mark.slow  # compiles DGT-Bandit's kernels twice into empty caches and starts four processes
@pytest.mark.deep(covered_by="tests/treeviz/test_job_spare.py::"
                             "test_the_first_job_runs_in_the_process_warmed_before_it_and_the_next_finds_it_kept")
def test_quick_path_compiles_nothing_after_the_warmup():
    out = first_training.run(quick=True)
    rows = {row["scenario"]: row for row in out["rows"]}
    assert set(rows) == {"warmup", "no_warmup"}
    assert out["results"]["setup"]["warmup_kernels"] > 0  # the cache started empty
    for row in rows.values():  # the job process's own warm-up compiled what the jobs need
        assert not row["first_compiled"]
        assert row["first_fit_s"] > 0 and row["second_fit_s"] > 0 and row["ready_s"] > 0
        assert row["first_wall_s"] >= row["first_fit_s"]
