"""Any table the Data page accepts trains with every family, or the Data page refuses it.

The upload corpus is ``tests/bad_inputs.py`` (every case that loads, with its note) plus the bundled
sample CSVs. For each table and each scaling the Data page offers (all of them for the upload with
huge values, standard scaling for the others), ``prepare`` either refuses with a TreevizError
sentence (shown on the Data page) or every registered family that handles the task, and every
embedding family (which runs on any table), trains with its test parameters
(``Family.test_params``: small, fast settings) and scores finite numbers on every split.

Default parameters take minutes on the larger tables, so each family trains with its defaults once
per task it handles, on the smallest bundled sample of that task (an embedding family on the
smallest sample of all), and scores finite numbers there too.
"""

from __future__ import annotations

import functools
import math

import pytest

from models.ground.errors import TreevizError
from models.registry import families, families_for_task, get_family
from tests.bad_inputs import BAD_INPUT_ENV, NOTE_ONLY, load
from treeviz.services.data import Dataset, PrepConfig, load_dataset, prepare
from treeviz.services.data.preprocess import SCALINGS
from treeviz.services.experiments.training import train_run

SAMPLES = ("penguins", "cars", "seattle_weather")
#: The two largest tables (5 000 and 1 461 rows): even the test parameters take 30-45 s per family
#: there for the latent tree and Skinny Trees on a 2-core machine, so they run in the full tier only (marked slow).
SLOW_TABLES = ("many_levels", "seattle_weather")
CASES = [
    pytest.param(kind, name, id=name, marks=[pytest.mark.slow] if name in SLOW_TABLES else [])
    for kind, name in [*(("upload", n) for n in sorted(NOTE_ONLY)), *(("sample", key) for key in SAMPLES)]
]
#: The tasks of the corpus's tables (a clustering data set is never an upload or a sample CSV).
TABLE_TASKS = ("classification", "regression")
#: Families whose defaults take more than 10 s on their smallest sample on a 2-core machine (the
#: latent tree and the TAO forest about 40 s on penguins, Skinny Trees over a minute), or are
#: expected to (the DGT family's epochs and forests, the tree embedding): marked slow, full tier only.
SLOW_DEFAULTS = frozenset({"latent", "tao_forest", "skinny", "dgt", "dgt_forest", "dgt_bandit", "tree_embedding"})
DEFAULT_CASES = [
    pytest.param(family.key, task, id=f"{family.key}-{task}",
                 marks=[pytest.mark.slow] if family.key in SLOW_DEFAULTS else [])
    for family in families().values()
    for task in family.tasks
    if task in (*TABLE_TASKS, "embedding")
]


def dataset_for(kind: str, name: str, monkeypatch) -> Dataset:
    if kind == "sample":
        return load_dataset(name)
    for var, value in BAD_INPUT_ENV.get(name, {}).items():
        monkeypatch.setenv(var, value)
    return load(name)


@functools.cache
def smallest_sample(task: str) -> Dataset:
    """The bundled sample with the fewest rows among those of ``task`` ("embedding": of all)."""
    samples = [load_dataset(key) for key in SAMPLES]
    return min((d for d in samples if task in (d.task, "embedding")), key=lambda d: d.n_samples)


def assert_finite_scores(metrics: dict[str, float], *context) -> None:
    """The run scored something on its splits, and every score is a finite number."""
    scores = {k: v for k, v in metrics.items() if k.split("_", 1)[0] in ("train", "val", "test")}
    assert scores, context
    assert all(math.isfinite(v) for v in scores.values()), (*context, scores)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize(("kind", "name"), CASES)
def test_an_accepted_table_trains_with_every_familys_test_params(kind, name, monkeypatch):
    dataset = dataset_for(kind, name, monkeypatch)
    scalings = SCALINGS if name == "huge_values" else ("standard",)
    for scaling in scalings:
        try:
            prepared = prepare(dataset, PrepConfig(scaling=scaling))
        except TreevizError as err:  # refused on the Data page, with a sentence
            assert str(err).endswith("."), str(err)
            continue
        runs = [(family, dataset.task) for family in families_for_task(dataset.task)]
        runs += [(family, "embedding") for family in families_for_task("embedding")]
        for family, task in runs:
            _, metrics = train_run(family.key, task, dict(family.test_params), prepared)
            assert_finite_scores(metrics, family.key, scaling)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
@pytest.mark.parametrize(("family_key", "task"), DEFAULT_CASES)
def test_every_family_trains_with_its_defaults_on_the_smallest_sample(family_key, task):
    assert get_family(family_key) in families_for_task(task)
    prepared = prepare(smallest_sample(task), PrepConfig())
    _, metrics = train_run(family_key, task, {}, prepared)
    assert_finite_scores(metrics, family_key, task)


@pytest.mark.parametrize("bad", [math.nan, math.inf])
def test_a_score_that_is_not_finite_fails_the_check(bad):
    assert_finite_scores({"train_accuracy": 0.9, "fit_seconds": 1.0}, "ok")
    with pytest.raises(AssertionError):
        assert_finite_scores({"train_accuracy": 0.9, "test_accuracy": bad}, "bad")
    with pytest.raises(AssertionError):
        assert_finite_scores({"fit_seconds": 1.0}, "no scores")
