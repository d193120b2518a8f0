"""The training-time estimate before training: minutes-long defaults are warned about, small fits are not."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from models.registry import families, get_family
from treeviz.services.data import Dataset, load_dataset, prepare
from treeviz.services.experiments.estimate import LONG_S, duration_text, long_training_warning, training_time


def table(n: int, d: int = 19, classes: int = 7) -> Dataset:
    """A classification table of ``n`` rows (the size of the table in the issue: 2 310 × 19, 7 classes)."""
    rng = np.random.default_rng(0)
    return Dataset(name=f"table{n}", X=rng.normal(size=(n, d)), y=np.arange(n) % classes,
                   feature_names=tuple(f"x{i}" for i in range(d)), task="classification", target_name="y",
                   class_names=tuple(f"c{i}" for i in range(classes)))


@pytest.fixture(scope="module")
def big():
    return prepare(table(2310))


@pytest.fixture(scope="module")
def iris():
    return prepare(load_dataset("iris"))


def test_the_tree_embedding_defaults_on_a_2310_row_table_are_warned_about(big):
    family = get_family("tree_embedding")
    found = training_time(family, family.defaults("embedding"), *big.X_train.shape)
    assert found is not None and found.seconds > LONG_S
    warning = long_training_warning(family, "embedding", family.defaults("embedding"), big)
    assert warning is not None
    assert warning.startswith("Tree embedding (t-SNE / EE) with these settings may take about ")
    assert "min" in warning and "estimate" in warning and f"{big.X_train.shape[0]:,} training rows" in warning
    assert "'μ steps'" in warning and "'quick' preset" in warning and "sample of the table's rows" in warning


def test_the_quick_preset_is_not_suggested_when_chosen(big):
    family = get_family("tree_embedding")
    values = {**family.defaults("embedding"), "n_mu": 200}
    warning = long_training_warning(family, "embedding", values, big, preset="quick")
    assert warning is not None and "preset" not in warning


def test_cart_on_a_tiny_table_is_not_warned_about(iris):
    family = get_family("cart")
    assert long_training_warning(family, "classification", family.defaults("classification"), iris) is None
    assert training_time(get_family("cart"), {}, 150, 4).seconds < 1.0


def test_the_quick_presets_of_the_built_in_families_stay_short_on_iris(iris):
    for family in families().values():
        for task in family.estimators:
            if task == "clustering":
                continue
            for preset in family.presets_for(task):
                if preset.startswith("quick"):
                    values = family.defaults(task, preset)
                    assert long_training_warning(family, task, values, iris) is None, (family.key, preset)


def test_the_estimate_grows_with_the_work():
    dgt, tree_embedding = get_family("dgt"), get_family("tree_embedding")
    params = dgt.defaults("classification")
    base = training_time(dgt, params, 1000, 10).seconds
    assert training_time(dgt, {**params, "max_epochs": 2000}, 1000, 10).seconds > 5 * base
    assert training_time(dgt, params, 10_000, 10).seconds > 5 * base
    emb = tree_embedding.defaults("embedding")
    small, large = (training_time(tree_embedding, emb, n, 19).seconds for n in (500, 2000))
    assert large > 10 * small  # the embedding's Z steps count pairs of rows


def test_every_built_in_family_declares_a_cost_model_and_others_get_none():
    built_in = [f for f in families().values() if all(v.startswith("models.") for v in f.estimators.values())]
    assert built_in and all(f.cost is not None for f in built_in)  # plug-ins (a test's 'stump') may have none
    assert training_time(replace(get_family("cart"), cost=None), {}, 100, 3) is None
    assert training_time(get_family("dgt"), {"max_epochs": "many"}, 100, 3) is None  # unvalidated: no estimate


def test_the_estimate_is_cheap():
    """The estimate reads the training split's shape and nothing else (no pass over the rows, no fit),
    so its cost does not grow with the table: here a table of ten million rows that holds no data."""
    family = get_family("tree_embedding")
    shape_only = SimpleNamespace(X_train=SimpleNamespace(shape=(10_000_000, 19)))
    warning = long_training_warning(family, "embedding", family.defaults("embedding"), shape_only)
    assert warning is not None and "on 10,000,000 training rows × 19 features" in warning


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "about 1 s"), (42.4, "about 42 s"), (185, "about 3 min"),
                                               (5400, "about 1.5 h")])
def test_duration_text(seconds, text):
    assert duration_text(seconds) == text
