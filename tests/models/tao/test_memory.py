"""A tree whose arrays would not fit is refused before it is built, with a sentence naming the
largest depth that fits (models/memory.py; TAO, DGT and DGT-Bandit check it)."""

from __future__ import annotations

import numpy as np
import pytest

from models import memory
from models.dgt.bandit import DGTBanditClassifier
from models.dgt.estimators import DGTClassifier
from models.ground.errors import TreevizError
from models.memory import check_tree_memory, tree_bytes
from models.tao.estimators import TAOClassifier

GB = 10**9


def test_the_estimate_grows_as_rows_times_nodes():
    # the probe's table: TAO at depth 16 on 10 000 rows × 40 features passed 6 GB
    assert tree_bytes(16, 10_000, 40, 2) > 10 * GB
    assert tree_bytes(15, 10_000, 40, 2) < 6 * GB
    assert tree_bytes(3, 10_000, 40, 2, leaf_weights=True) > tree_bytes(3, 10_000, 40, 2)


def test_the_refusal_names_the_largest_depth_that_fits():
    budget = 6 * GB
    check_tree_memory("A tree", 15, 10_000, 40, 2, budget=budget)  # fits: nothing raised
    with pytest.raises(TreevizError, match=r"depth 16 .* about 10\.6 GB.* at most 15\.$"):
        check_tree_memory("A tree", 16, 10_000, 40, 2, budget=budget)
    with pytest.raises(TreevizError, match="use fewer rows or features"):
        check_tree_memory("A tree", 2, 10_000, 40, 2, budget=1000)


@pytest.fixture
def six_gb(monkeypatch):
    """A machine whose models may use 6 GB, whatever this one has."""
    monkeypatch.setattr(memory, "memory_budget", lambda: 6 * GB)


def test_tao_at_depth_16_on_a_40_by_10000_table_is_refused_before_it_is_built(six_gb):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10_000, 40))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(TreevizError, match=r"A TAO tree of depth 16 .* at most 15"):
        TAOClassifier(depth=16).fit(X, y)
    assert TAOClassifier(depth=2, max_iter=1).fit(X, y).depth_ == 2  # a depth that fits trains


@pytest.mark.parametrize("cls", [DGTClassifier, DGTBanditClassifier])
def test_dgt_families_refuse_a_height_that_would_not_fit(monkeypatch, cls):
    # (DGT holds a fifth of the rows out for validation, so its largest height is one more)
    monkeypatch.setattr(memory, "memory_budget", lambda: 2 * 10**6)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 5))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(TreevizError, match=r"of depth 10 on \d+ rows × 5 features .* MB.* at most [67]\.$"):
        cls(depth=10).fit(X, y)
