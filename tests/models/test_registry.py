"""The registry: families discovered from their own packages, each described once."""

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris

import models
from models import registry
from models.ground.errors import TreevizError
from models.persist import load_model, save_model
from models.registry import families, families_for_task, family_of_class, get_family
from models.tao.estimators import TAOClassifier
from models.tao.forest import TAOForestClassifier
from treeviz.ui.labels import METRIC_LABELS


def test_families_are_discovered_from_their_packages():
    # every models/<package>/family.py, and the test-only stump that tests/conftest.py registers
    # through TREEVIZ_FAMILIES; listed in their declared order
    packages = sorted(p.parent.name for p in Path(models.__file__).parent.glob("*/family.py"))
    found = families()
    assert sorted({f.estimator_class(t).__module__.split(".")[1] for f in found.values() for t in f.tasks
                   if f.key != "stump"}) == packages
    assert {"cart", "latent", "tao", "tao_forest", "stump"} <= set(found)
    assert [f.order for f in found.values()] == sorted(f.order for f in found.values())
    assert family_of_class(TAOForestClassifier).key == "tao_forest"
    assert TAOForestClassifier().family_key == "tao_forest"


def test_a_family_module_named_in_the_environment_is_added(monkeypatch):
    monkeypatch.setenv(registry.PLUGINS_ENV, "")
    try:
        assert "stump" not in registry.reload()
        monkeypatch.setenv(registry.PLUGINS_ENV, "tests.families.stump.family")
        assert "stump" in registry.reload()
    finally:
        monkeypatch.undo()
        registry.reload()
    assert "stump" in families()


def test_a_broken_family_module_is_a_sentence(monkeypatch):
    monkeypatch.setenv(registry.PLUGINS_ENV, "tests.no_such_family_module")
    try:
        with pytest.raises(TreevizError, match="cannot be imported"):
            registry.reload()
    finally:
        monkeypatch.undo()
        registry.reload()


def test_every_param_default_validates_and_presets_are_known_params():
    for family in families().values():
        for p in family.params:
            assert p.validate(p.default) == p.default
            assert p.validate(p.default, strict=True) == p.default
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
    assert next(f.key for f in families_for_task("classification")) == "cart"
    assert np.isfinite(est.score(X, y))


class MyTAO(TAOClassifier):
    """A user's subclass that changes nothing but its name and adds a helper."""

    def leaf_count(self) -> int:
        return int(self.to_tree().leaves.size)


def test_a_subclass_of_a_treeviz_estimator_fits_predicts_saves_and_reloads(tmp_path):
    X, y = load_iris(return_X_y=True)
    model = MyTAO(depth=2, max_iter=3, random_state=0)
    assert model.family_key == "tao" and registry.registered_class(MyTAO)[1] is TAOClassifier
    assert get_family("tao").task_of_class(MyTAO) == "classification"
    model.fit(X, y)
    assert model.leaf_count() >= 2 and (model.predict(X) == y).mean() > 0.9
    # a bad value is refused by the parent's schema, with a sentence
    with pytest.raises(TreevizError, match="depth"):
        MyTAO(depth=-1).fit(X, y)
    # the model file names the registered class (loading never imports the user's code)
    path = save_model(model, tmp_path / "my.zip")
    again = load_model(path)
    assert type(again) is TAOClassifier and np.array_equal(again.predict(X), model.predict(X))


class MyFittingTAO(TAOClassifier):
    """A user's subclass with its own ``fit`` (which checks nothing itself) calling the parent's."""

    def fit(self, X, y, **kwargs):
        self.fits_ = getattr(self, "fits_", 0) + 1
        return super().fit(X, y, **kwargs)


def test_a_subclass_with_its_own_fit_is_checked_once_before_it_runs(monkeypatch):
    X, y = load_iris(return_X_y=True)
    with pytest.raises(TreevizError, match="depth"):
        MyFittingTAO(depth=-1).fit(X, y)
    bad = MyFittingTAO(depth=2, max_iter=3, random_state=0)
    bad.set_params(init="nowhere")
    with pytest.raises(TreevizError, match="init"):
        bad.fit(X, y)
    assert not hasattr(bad, "fits_")  # refused before the subclass's own code ran
    checks = []
    real = TAOClassifier._validate_params
    monkeypatch.setattr(TAOClassifier, "_validate_params", lambda self: checks.append(self) or real(self))
    model = MyFittingTAO(depth=2, max_iter=3, random_state=0).fit(X, y)
    assert model.fits_ == 1 and checks == [model]  # the subclass's fit and the parent's: one check
    model.fit(X, y)
    assert checks == [model, model]  # and one per fit


def test_a_class_that_is_no_treeviz_estimator_is_refused_with_a_sentence():
    with pytest.raises(TreevizError, match="not a registered treeviz estimator"):
        family_of_class(dict)


@pytest.mark.parametrize(("task", "metric"), [("classification", "accuracy"), ("regression", "r2")])
def test_one_headline_metric_per_task_across_families(task, metric):
    """Runs of every family are listed by the same score of a task (accuracy, R²), so a list of
    runs compares like with like; AUC and RMSE stay second metrics, and the AUC's label says how it
    averages over more than two classes."""
    heads = {key: get_family(key).headline_metrics(task)[0]
             for key in registry.families() if task in get_family(key).tasks}
    assert len(heads) >= 3 and set(heads.values()) == {metric}, heads
    assert "one-vs-one" in METRIC_LABELS["auc"][1]
