"""The Train page tells the truth before and after training: per-class counts per split and the
split's warnings before the Train button; metric cards after it; and a long history does not make
the finished page redraw every record."""

import numpy as np

from tests.app.conftest import assert_clean, new_app, open_page, texts
from treeviz.services.data import Dataset
from treeviz.ui import state


def twelve_classes() -> Dataset:
    """12 rows, 12 classes: the table that trained silently with val/test accuracy 0."""
    X = np.random.default_rng(0).normal(size=(12, 2))
    return Dataset(name="twelve", X=X, y=np.arange(12), feature_names=("a", "b"), task="classification",
                   class_names=tuple(f"k{i}" for i in range(12)))


def test_train_page_warns_of_a_split_that_cannot_score(home):
    at = new_app()
    at.session_state[state.DATASET] = twelve_classes()
    at.run()
    open_page(at, "train")
    assert_clean(at)
    warnings = " ".join(texts(at.warning))
    assert "single row" in warnings
    assert "absent from the validation split" in warnings
    assert "absent from the test split" in warnings
    table = at.dataframe[0].value
    assert list(table.columns) == ["class", "train", "validation", "test", "total"]
    assert len(table) == 12
    assert at.button(key="train.start")  # training stays allowed


def test_iris_shows_counts_and_no_split_warning(home):
    at = new_app()
    at.run()
    open_page(at, "train")
    assert_clean(at)
    assert not at.warning
    assert at.dataframe[0].value["total"].sum() == 150


def test_data_page_shows_the_split_warnings(home):
    at = new_app()
    at.session_state[state.DATASET] = twelve_classes()
    at.run()
    assert_clean(at)
    assert any("absent from the test split" in w for w in texts(at.warning))
