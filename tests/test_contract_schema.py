"""The estimator contract, schema side, over every registered estimator (a new family gets these
checks for free):

* ``fit`` checks the parameters once, from the family's schema, before anything else: each value
  outside a :class:`~models.schema.Param` (below ``low``, above ``high``, not one of ``choices``,
  of the wrong type, missing) is refused with a sentence naming the parameter, before any training
  (no callback hook is reached); and a fit checks each estimator object once, however many fitting
  methods of it call one another (a forest's or an embedding's inner estimators are their own);
* a callback that cancels at the first record (epoch or iteration) stops every estimator there: the
  history holds that one record, ``stopped_early_`` is set and the model is usable. A cancel that
  lands between records, in phases that record nothing, is ``tests/test_contract_cancel.py``'s.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_regression

from models.base import TreeEstimator
from models.ground.errors import TrainingCancelled, TreevizError
from models.registry import all_estimator_classes
from models.schema import Param

CASES = list(all_estimator_classes())
IDS = [f"{family.key}-{task}" for family, task, _ in CASES]


@functools.cache
def data(task: str) -> tuple[np.ndarray, np.ndarray | None]:
    if task == "regression":
        return make_regression(n_samples=200, n_features=8, noise=1.0, random_state=0)
    X, y = make_classification(n_samples=200, n_features=8, n_informative=5, n_classes=3, random_state=0)
    return (X, y) if task == "classification" else (X[:150], None)


def out_of_schema(param: Param) -> list:
    """Values that ``param``'s schema refuses: out of range, not a choice, of the wrong type, missing."""
    bad: list = []
    if param.kind in ("int", "float"):
        if param.low is not None:
            bad.append(int(param.low) - 1 if param.kind == "int" else param.low - 1.0)
        if param.high is not None:
            bad.append(int(param.high) + 1 if param.kind == "int" else param.high + 1.0)
        bad += ["many", [1]]
        if param.kind == "int":
            bad.append(2.5)
    elif param.kind == "choice":
        bad += ["no-such-choice", 3]
    elif param.kind == "bool":
        bad.append("yes")
    elif param.kind == "text":
        bad.append(3)
    elif param.kind == "seed":
        bad += ["many", 2.5]
    if param.kind != "seed" and param.optional_label is None:
        bad.append(None)
    return bad


class NoTraining:
    """A callback that fails the test if training begins."""

    def on_train_begin(self, estimator, **kwargs):
        raise AssertionError("training began with a parameter outside the schema")

    on_step = on_epoch_end = on_train_end = on_train_begin


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_fit_refuses_every_out_of_schema_value_with_a_sentence_naming_it(family, task, cls):
    X, y = data(task)
    params = [p for p in family.params if p.applies_to(task)]
    assert params
    missed = []
    for param in params:
        for value in out_of_schema(param):
            estimator = family.make(task, family.test_params).set_params(**{param.name: value})
            try:
                estimator.fit(X, y, callbacks=[NoTraining()])
            except TreevizError as err:
                if param.name not in str(err):
                    missed.append(f"{param.name}={value!r}: the sentence does not name it: {err}")
            else:
                missed.append(f"{param.name}={value!r} was accepted")
            assert not hasattr(estimator, "history_"), f"{param.name}={value!r}: training began"
    assert not missed, "\n".join(missed)


class StopAtFirstRecord:
    """Cancels at the first record, and at every step after it."""

    def __init__(self):
        self.records = 0

    def on_epoch_end(self, estimator, **kwargs):
        self.records += 1
        raise TrainingCancelled

    def on_step(self, estimator, **kwargs):
        if self.records:
            raise TrainingCancelled


@pytest.fixture
def validations(monkeypatch):
    """Every estimator object whose parameters were checked, once per check; a check inside a fit
    of the same object (a second one for one fit) fails the test."""
    checked: list = []
    real = TreeEstimator._validate_params

    def counting(self):
        assert not vars(self).get("_fitting"), f"{type(self).__name__}'s parameters checked twice in one fit"
        checked.append(self)
        return real(self)

    monkeypatch.setattr(TreeEstimator, "_validate_params", counting)
    return checked


@pytest.mark.parametrize(("family", "task", "cls"), CASES, ids=IDS)
def test_a_cancel_at_the_first_record_stops_there_and_the_parameters_are_checked_once(
        validations, family, task, cls):
    X, y = data(task)
    estimator = family.make(task, family.test_params)
    validations.clear()  # make() checks the values as given; fit checks the estimator's own
    stop = StopAtFirstRecord()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert estimator.fit(X, y, callbacks=[stop]) is estimator
    assert stop.records == 1 and len(estimator.history_) == 1, estimator.history_
    assert estimator.stopped_early_
    out = estimator.predict(X[:20]) if hasattr(estimator, "predict") else estimator.transform(X[:20])
    assert np.asarray(out).shape[0] == 20
    # once for the estimator; its inner estimators (a forest's trees, a warm-started inner tree
    # refitted per step) are checked once per fit of theirs
    assert sum(obj is estimator for obj in validations) == 1
