"""The registry: one description per family, consistent with the estimators' own defaults."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from models.registry import FAMILIES, all_estimator_classes, families_for_task, get_family, signature_defaults
from treeviz.errors import TreevizError


def test_registry_defaults_equal_estimator_signature_defaults():
    for family, task, cls in all_estimator_classes():
        sig = signature_defaults(cls)
        for name, value in family.defaults(task).items():
            assert name in sig, f"{cls.__name__} lacks registry parameter {name}"
            assert sig[name] == value, f"{cls.__name__}.{name}: registry {value!r} != code {sig[name]!r}"


def test_every_param_default_validates_and_presets_are_known_params():
    for family in FAMILIES.values():
        for p in family.params:
            assert p.validate(p.default) == p.default
            assert p.help.endswith(".")
        for preset in family.presets.values():
            names = {p.name for p in family.params}
            assert set(preset) <= names


def test_validation_messages_are_sentences():
    cart = get_family("cart")
    with pytest.raises(TreevizError, match="must be at least 1"):
        cart.validate_params({"max_depth": 0})
    with pytest.raises(TreevizError, match="whole number"):
        cart.validate_params({"max_depth": 2.5})
    with pytest.raises(TreevizError, match="must be one of"):
        cart.validate_params({"criterion": "best"}, task="classification")
    with pytest.raises(TreevizError, match="no parameter"):
        cart.validate_params({"depth": 3})
    with pytest.raises(TreevizError, match="no model family"):
        get_family("nope")
    assert cart.validate_params({"max_depth": None}) == {"max_depth": None}
    assert cart.validate_params({"max_depth": 3.0}) == {"max_depth": 3}


def test_make_builds_a_working_estimator_per_task():
    cart = get_family("cart")
    est = cart.make("classification", {"max_depth": 2})
    X, y = load_iris(return_X_y=True)
    assert est.fit(X, y).to_tree().max_depth == 2
    assert cart.make("regression").criterion == "squared_error"
    assert cart.defaults("classification", preset="quick")["max_depth"] == 4
    with pytest.raises(TreevizError, match="does not do clustering"):
        cart.make("clustering")
    assert [f.key for f in families_for_task("classification")][0] == "cart"
    assert np.isfinite(est.score(X, y))
