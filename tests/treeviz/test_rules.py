"""Rules as text (treeviz.readers.rules): split conditions, leaf summaries and IF ... THEN ... paths."""

import numpy as np
import pytest

from models.ground.tree import Tree
from tests.treeviz.test_tree import small_tree
from treeviz.readers.rules import leaf_summary, node_rule, rule_text, rules

NAN = np.nan


def test_rules_for_axis_aligned_and_oblique_nodes():
    t = small_tree()
    assert node_rule(t, 0) == "a > 0.5"
    assert node_rule(t, 0, goes_right=False) == "a ≤ 0.5"
    neg = small_tree(weight=[[-2.0, 0.0], [0, 0], [0.0, 1.0], [0, 0], [0, 0]], bias=[1.0, 0, -0.5, 0, 0])
    # -2a + 1 > 0  <=>  a < 0.5
    assert node_rule(neg, 0) == "a < 0.5"
    assert node_rule(neg, 0, goes_right=False) == "a ≥ 0.5"
    obl = small_tree(weight=[[0.5, -1.5], [0, 0], [0.0, 1.0], [0, 0], [0, 0]], bias=[0.25, 0, -0.5, 0, 0])
    assert node_rule(obl, 0) == "−1.5·b + 0.5·a + 0.25 > 0"
    assert node_rule(obl, 0, goes_right=False) == "−1.5·b + 0.5·a + 0.25 ≤ 0"
    x = np.array([0.9, 0.1])
    assert rule_text(t, x) == "IF a > 0.5 AND b ≤ 0.5 THEN class = yes (score 1, leaf 3)"
    assert len(rules(t)) == t.n_leaves
    assert rules(t)[0] == "IF a ≤ 0.5 THEN class = no (score 1, leaf 1)"
    assert rules(t)[2] == "IF a > 0.5 AND b > 0.5 THEN class = yes (score 0.75, leaf 4)"


def test_rule_text_says_which_feature_was_missing():
    t = small_tree(missing_right=[True, False, False, False, False])
    assert rule_text(t, np.array([NAN, 0.9])) == "IF a missing AND b > 0.5 THEN class = yes (score 0.75, leaf 4)"
    assert rule_text(t, np.array([[0.9, NAN]])) == "IF a > 0.5 AND b missing THEN class = yes (score 1, leaf 3)"
    obl = small_tree(weight=[[0.5, -1.5], [0, 0], [0.0, 1.0], [0, 0], [0, 0]], bias=[0.25, 0, -0.5, 0, 0])
    assert rule_text(obl, np.array([NAN, NAN])) == "IF a and b missing THEN class = no (score 1, leaf 1)"


def test_oblique_rule_truncates_long_hyperplanes():
    w = np.zeros((3, 10))
    w[0] = np.arange(1, 11)
    t = Tree([1, -1, -1], [2, -1, -1], w, [0.0, 0, 0], [[NAN], [0.0], [1.0]], task="regression")
    rule = node_rule(t, 0, max_terms=3)
    assert rule.startswith("10·x9 + 9·x8 + 8·x7 + … (7 more)")
    assert rules(t, max_terms=1)[0] == "IF 10·x9 + … (9 more) ≤ 0 THEN y0 = 0 (leaf 1)"


def test_constant_splits_leaves_and_precision():
    t = small_tree(weight=[[0.0, 0.0], [0, 0], [0.0, 1.0], [0, 0], [0, 0]], bias=[1.0, 0, -1 / 3, 0, 0])
    assert node_rule(t, 0) == "always" and node_rule(t, 0, goes_right=False) == "never"
    assert node_rule(t, 2) == "b > 0.3333"
    assert node_rule(t, 2, precision=2) == "b > 0.33"
    with pytest.raises(ValueError, match="leaf"):
        node_rule(t, 1)


def test_leaf_summaries_for_each_kind_of_leaf():
    t = small_tree()
    assert leaf_summary(t, 4) == "class = yes (score 0.75, leaf 4)"
    reg = small_tree(task="regression", leaf_value=[[NAN], [1.0], [NAN], [2.5], [3.0]], output_names=("v",))
    assert leaf_summary(reg, 3) == "v = 2.5 (leaf 3)"
    multi = small_tree(task="regression", output_names=("u", "v"))
    assert leaf_summary(multi, 4) == "leaf 4: u = 0.25, v = 0.75"
    lw = np.zeros((5, 2, 2))
    lw[3] = [[1.0, 0.0], [0.0, 2.0]]
    assert leaf_summary(small_tree(leaf_weight=lw), 3) == "leaf 3: linear model"


def test_rules_read_in_input_units():
    # z > 0.5 with z = (x - 10) / 2  <=>  x > 11
    shown = small_tree().in_input_units([10.0, 0.0], [2.0, 1.0])
    assert node_rule(shown, 0) == "a > 11"
