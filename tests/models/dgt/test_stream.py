"""The DGT-Bandit stream's length has one source: the family's help (the command line's text), the
form's "auto" label, the Bandit page's plan and the loop all read models.dgt.stream."""

from __future__ import annotations

import pytest

from models.dgt.bandit import loop
from models.dgt.stream import (
    AUTO_LABEL,
    DEFAULT_PASSES,
    DEFAULT_ROUNDS,
    MAX_DEFAULT_ROUNDS,
    WHY_MINIMUM,
    default_rounds,
    stream_plan,
)
from models.registry import families_offering, get_family
from treeviz.cli.common import describe_family


def test_the_loop_and_the_declaration_read_the_same_numbers():
    assert loop.default_rounds is default_rounds
    assert (loop.DEFAULT_PASSES, loop.DEFAULT_ROUNDS, loop.MAX_DEFAULT_ROUNDS) == \
        (DEFAULT_PASSES, DEFAULT_ROUNDS, MAX_DEFAULT_ROUNDS)
    param = get_family("dgt_bandit").param("n_rounds")
    assert param.optional_label == AUTO_LABEL == "10 passes, at least 20 000 rounds"
    assert WHY_MINIMUM in param.help


def test_the_command_line_help_and_the_page_give_the_minimum_and_its_reason():
    family = get_family("dgt_bandit")
    help_text = " ".join(describe_family(family, "classification", width=10_000).split())
    assert f"none ({AUTO_LABEL})" in help_text and WHY_MINIMUM in help_text
    plan = family.comparison("bandit").run_plan("classification", family.defaults("classification"), 124)
    assert plan.startswith("Each run under the protocol (every learner, every seed) plays 20 000 rounds, "
                           "20 000 loss queries (one a round): about 161 passes over the 124 training rows.")
    assert "10 passes (1 240 rounds here), at least 20 000 and at most 1 000 000 rounds" in plan
    assert f"the minimum sets it here, because {WHY_MINIMUM}" in plan


@pytest.mark.parametrize(("task", "values", "rows", "expected"), [
    ("regression", {"estimator": "two_point"}, 300, "plays 20 000 rounds, 40 000 loss queries (two a round"),
    ("regression", {"estimator": "one_point"}, 300, "plays 20 000 rounds, 20 000 loss queries (one a round)"),
    ("classification", {"n_rounds": 5000}, 125, "plays 5 000 rounds, 5 000 loss queries (one a round): 40 passes"),
    ("classification", {}, 5000, "plays 50 000 rounds, 50 000 loss queries (one a round): 10 passes"),
    ("classification", {}, 500_000, "the maximum sets it here"),
])
def test_the_plan_counts_rounds_queries_and_passes(task, values, rows, expected):
    text = stream_plan(task, {"n_rounds": None, **values}, rows)
    assert expected in text, text
    if values.get("n_rounds") is not None or rows * DEFAULT_PASSES >= DEFAULT_ROUNDS:
        assert "minimum sets it" not in text


def test_every_declared_plan_resolves():
    for family in families_offering("bandit"):
        comparison = family.comparison("bandit")
        for task in family.tasks:
            if comparison.plan:
                assert comparison.run_plan(task, family.defaults(task), 200)
