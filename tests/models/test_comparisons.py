"""What views with comparisons read from the families (the Comparison declarations): every
reference is a registered family taking the shared parameters, every builder resolves, and a
declaration naming something unknown is refused when the family is declared."""

import pytest

from models.ground.errors import TreevizError
from models.registry import families, get_family
from models.schema import Comparison, Family, Param, resolve_ref

DECLARED = [(family, comparison) for family in families().values() for comparison in family.comparisons]


def test_every_view_with_comparisons_is_declared():
    # the services behind these views read everything they compare from the declaration
    for view in ("semi_supervised", "bandit", "embedding"):
        for family in families().values():
            if family.offers(view):
                assert family.comparison(view).view == view


@pytest.mark.parametrize(("family", "comparison"), DECLARED, ids=lambda x: getattr(x, "key", getattr(x, "view", "")))
def test_declarations_resolve(family, comparison):
    if comparison.reference:
        reference = get_family(comparison.reference)
        assert set(family.tasks) <= set(reference.tasks)
        for task in family.tasks:
            known = {p.name for p in reference.params_for(task)}
            assert set(comparison.shared) <= known, f"{reference.key} lacks a shared parameter"
    for label in comparison.baselines:
        assert callable(comparison.baseline(label))
    if comparison.reference_values:
        assert callable(resolve_ref(comparison.reference_values))
    assert set(comparison.params.values()) <= {p.name for p in family.params}


def test_the_declared_values_drive_the_reference():
    dgt = get_family("dgt_bandit").comparison("bandit")
    # an automatic bandit height becomes the height the bandit tree will have for these classes
    shared = dgt.reference_params({"depth": None, "n_layers": 2, "quantizer": "sign", "learning_rate": 0.1},
                                  ["a", "b", "c"])
    assert shared["n_layers"] == 2 and shared["quantizer"] == "sign" and isinstance(shared["depth"], int)
    assert "learning_rate" not in shared
    lap = get_family("laptao").comparison("semi_supervised")
    assert lap.reference_params({"depth": 3, "tao_iter": 7, "l1_penalty": 0.5, "leaf": "constant"}) == \
        {"depth": 3, "max_iter": 7, "l1_penalty": 0.5, "leaf": "constant"}
    assert lap.param("labelled_fraction") == "labelled_fraction"


def test_unknown_names_are_refused_with_sentences():
    with pytest.raises(ValueError, match="view"):
        Comparison(view="no such view")
    with pytest.raises(ValueError, match="reference_label"):
        Comparison(view="bandit", reference="dgt")
    with pytest.raises(ValueError, match="module:function"):
        Comparison(view="bandit", baselines={"x": "no_colon"})
    params = (Param("depth", "int", 3, "depth"),)
    with pytest.raises(ValueError, match="does not offer"):
        Family(key="x", label="X", description="", estimators={"regression": "m:C"}, params=params,
               comparisons=(Comparison(view="bandit"),))
    with pytest.raises(ValueError, match="unknown parameters"):
        Family(key="x", label="X", description="", estimators={"regression": "m:C"}, params=params,
               views=("bandit",), comparisons=(Comparison(view="bandit", params={"role": "nope"}),))
    with pytest.raises(TreevizError, match="declares nothing"):
        get_family("cart").comparison("bandit")
    with pytest.raises(TreevizError, match="no baseline"):
        get_family("dgt_bandit").comparison("bandit").baseline("nope")
