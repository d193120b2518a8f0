"""The Train page tells the truth before and after training: per-class counts per split and the
split's warnings before the Train button; metric cards after it; and a long history does not make
the finished page redraw every record."""

import numpy as np
import pytest

from tests.app.conftest import assert_clean, chart_specs, new_app, open_page, texts, wait_for_job
from treeviz.services.data import Dataset
from treeviz.services.store.runs import RunStore
from treeviz.ui import state
from treeviz.ui.records import MAX_PLOTTED_RECORDS


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


def chart_points(at) -> int:
    """The most points any trace of the page's charts has."""
    return max((len(t.get("x") or []) for spec in chart_specs(at) for t in spec["data"]), default=0)


@pytest.mark.slow  # a 2 000-round bandit stream: seconds
def test_finished_bandit_page_does_not_draw_every_record(home):
    """A stream that records every round: the finished Train page draws at most MAX_PLOTTED_RECORDS
    points per curve (the page once redrew every record at each rerun), and shows metric cards."""
    at = new_app()
    at.run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("dgt_bandit").run()
    prefix = "train.dgt_bandit.defaults"
    for name, value in (("n_rounds", 2000), ("eval_every", 1)):
        at.checkbox(key=f"{prefix}.{name}__none").uncheck().run()
        at.number_input(key=f"{prefix}.{name}").set_value(value).run()
    at.button(key="train.start").click().run()
    wait_for_job(at)
    assert_clean(at)
    assert "Finished" in at.success[0].value
    record = RunStore(home).list()[0]
    assert len(RunStore(home).history(record.run_id)) >= 2000  # the stored run keeps every record
    assert 0 < chart_points(at) <= MAX_PLOTTED_RECORDS
    assert any("records" in c.value and "drawn" in c.value for c in at.caption)
    labels = [m.label for m in at.metric]
    assert "Test accuracy" in labels and "Leaves" in labels
    assert not at.json  # no collapsed {...}
