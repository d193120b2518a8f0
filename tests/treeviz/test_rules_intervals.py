"""Path rules merge each feature's thresholds into one interval, and still route every row to its leaf."""

import re

import numpy as np
import pytest

from models.cart.estimators import CARTClassifier
from tests.treeviz.test_tree import small_tree
from treeviz.readers.rules import node_rule, path_conditions, rule_text, rules
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.services.views.export import ALL_TERMS, rules_file, tree_exports
from treeviz.ui.report import run_report

NUM = r"-?\d+(?:\.\d*)?(?:e[+-]?\d+)?|-?inf"
INTERVAL = re.compile(rf"^({NUM}) (<|≤) (.+) (<|≤) ({NUM})$")
BOUND = re.compile(rf"^(.+) (>|≥|<|≤) ({NUM})$")
OPS = {"<": np.less, "≤": np.less_equal, ">": np.greater, "≥": np.greater_equal}


def parse(condition: str) -> tuple[str, list[tuple[str, float]]]:
    """A threshold or interval condition as (feature name, [(op, value), ...]) meaning ``x op value``."""
    m = INTERVAL.match(condition)
    if m:
        flip = {"<": ">", "≤": "≥"}
        return m.group(3), [(flip[m.group(2)], float(m.group(1))), (m.group(4), float(m.group(5)))]
    m = BOUND.match(condition)
    assert m, condition
    return m.group(1), [(m.group(2), float(m.group(3)))]


def holds(rule: str, x: np.ndarray, names: list[str]) -> bool:
    conditions = rule.removeprefix("IF ").split(" THEN ")[0].split(" AND ")
    for c in conditions:
        name, bounds = parse(c)
        v = x[names.index(name)]
        if not all(OPS[op](v, t) for op, t in bounds):
            return False
    return True


@pytest.fixture(scope="module")
def cart():
    """A CART tree that must cut x0 several times on one path: the class is a band of x0 values."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = ((X[:, 0] > -0.5) & (X[:, 0] < 0.7)) ^ (X[:, 1] > 1.2)
    tree = CARTClassifier(max_depth=6).fit(X, y.astype(int)).to_tree()
    return tree, rng.normal(size=(200, 3))


def test_one_interval_per_feature_on_a_small_tree():
    # a > 0.5 at the root, then a < 2 (right) or a ≥ 2 (left) below
    t = small_tree(weight=[[1.0, 0.0], [0, 0], [-1.0, 0.0], [0, 0], [0, 0]], bias=[-0.5, 0, 2.0, 0, 0])
    assert node_rule(t, 2) == "a < 2"
    assert path_conditions(t, 3) == ["a ≥ 2"]  # the tighter lower bound replaces a > 0.5
    assert path_conditions(t, 4) == ["0.5 < a < 2"]
    assert path_conditions(t, 1) == ["a ≤ 0.5"]
    assert rule_text(t, np.array([1.0, 0.0])).startswith("IF 0.5 < a < 2 THEN")
    assert rules(t)[0].startswith("IF a ≤ 0.5 THEN")


def test_cart_rules_one_interval_per_feature_and_route_identically(cart):
    tree, prepared = cart
    names = list(tree.feature_names)
    all_rules = rules(tree, precision=17)
    repeated = 0
    for leaf, rule in zip(tree.leaves, all_rules, strict=True):
        features = [parse(c)[0] for c in rule.removeprefix("IF ").split(" THEN ")[0].split(" AND ")]
        assert len(features) == len(set(features)), rule  # one interval per feature per rule
        path = tree.ancestors(int(leaf))[:-1]
        used = [int(np.flatnonzero(tree.weight[a])[0]) for a in path]
        repeated += len(used) - len(set(used))
    assert repeated > 0, "the tree repeats a feature along some path, so merging was tested"
    X = prepared
    leaves = tree.apply(X)
    index = {int(v): i for i, v in enumerate(tree.leaves)}
    for x, leaf in zip(X, leaves, strict=True):
        satisfied = [i for i, r in enumerate(all_rules) if holds(r, x, names)]
        assert satisfied == [index[int(leaf)]]
        assert holds(rule_text(tree, x, precision=17), x, names)


@pytest.mark.slow  # trains a small TAO tree (seconds)
def test_rules_file_holds_every_term():
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(scaling="standard"))
    model, _ = train_run("tao", "classification", {"depth": 2, "max_iter": 3}, prepared)
    [export] = tree_exports(model, prepared, indices=[0])
    text = rules_file([export])
    assert "more)" not in text
    n_terms = int(np.count_nonzero(export.tree.weight[0]))
    assert n_terms > 4
    assert rules(export.tree, max_terms=ALL_TERMS)[0].count("·") >= n_terms
    assert "more)" in rules(export.tree)[0]  # the screen's default folds them


@pytest.mark.slow  # trains a small TAO tree and writes its report (seconds)
def test_report_rules_hold_every_term(tmp_path):
    store = RunStore(tmp_path)
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(scaling="standard"))
    record = train_run("tao", "classification", {"depth": 2, "max_iter": 3}, prepared, store=store)
    html = run_report(store, record.run_id)
    section = html.split(">Rules</h", 1)[1]
    pre = section.split("<pre>", 1)[1].split("</pre>", 1)[0]
    assert "more)" not in pre
    tree = store.load_model(record.run_id).to_tree()
    assert pre.splitlines()[0].count("·") >= int(np.count_nonzero(tree.weight[0])) > 4
