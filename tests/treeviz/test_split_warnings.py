"""Warnings before training: class counts per split and the sentences about splits that make
scores meaningless (a one-row class, a class absent from a split, a split under 10 rows)."""

import numpy as np

from treeviz.services.data import Dataset, PrepConfig, load_dataset, prepare
from treeviz.services.data.split_check import class_counts_by_split, split_warnings
from treeviz.ui.records import plot_records


def classes_table(counts: list[int]) -> Dataset:
    """A classification table with ``counts[k]`` rows of class k."""
    y = np.repeat(np.arange(len(counts)), counts)
    X = np.random.default_rng(0).normal(size=(y.size, 2))
    return Dataset(name="t", X=X, y=y, feature_names=("a", "b"), task="classification",
                   class_names=tuple(f"c{k}" for k in range(len(counts))))


def test_twelve_rows_twelve_classes_warns_of_everything():
    prepared = prepare(classes_table([1] * 12), PrepConfig(test_size=0.2, val_size=0.1))
    warnings = split_warnings(prepared)
    text = " ".join(warnings)
    assert "single row" in text
    assert "absent from the validation split" in text
    assert "absent from the test split" in text
    assert "The test split has only 2 rows" in text
    assert "no training row" in text


def test_counts_add_up_per_class():
    prepared = prepare(classes_table([30, 20, 10]))
    rows = class_counts_by_split(prepared)
    assert [r["class"] for r in rows] == ["c0", "c1", "c2"]
    assert [r["total"] for r in rows] == [30, 20, 10]
    for r in rows:
        assert r["train"] + r["validation"] + r["test"] == r["total"]
    assert sum(r["test"] for r in rows) == prepared.test_idx.size


def test_iris_has_no_warnings():
    assert split_warnings(prepare(load_dataset("iris"))) == []


def test_empty_split_by_choice_is_not_warned_about():
    prepared = prepare(load_dataset("iris"), PrepConfig(val_size=0.0))
    assert prepared.val_idx.size == 0
    assert split_warnings(prepared) == []


def test_regression_small_split_warns_without_class_rows():
    rng = np.random.default_rng(0)
    ds = Dataset(name="r", X=rng.normal(size=(30, 2)), y=rng.normal(size=30), feature_names=("a", "b"),
                 task="regression")
    prepared = prepare(ds)
    assert class_counts_by_split(prepared) == []
    warnings = split_warnings(prepared)
    assert any("validation split has only 3 rows" in w for w in warnings)
    assert any("test split has only 6 rows" in w for w in warnings)


def test_plot_records_keeps_first_last_and_at_most_the_limit():
    records = [{"round": i, "loss": float(i)} for i in range(20_000)]
    thinned = plot_records(records, limit=400)
    assert len(thinned) <= 400
    assert thinned[0] is records[0] and thinned[-1] is records[-1]
    assert [r["round"] for r in thinned] == sorted(r["round"] for r in thinned)
    assert plot_records(records[:10], limit=400) == records[:10]
