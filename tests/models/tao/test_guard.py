"""The guard: the exact 0/1 bias along a direction, and the pass-level fallback keeping E monotone."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from models.tao import loop
from models.tao.estimators import TAOClassifier
from models.tao.problems import NodeProblem, exact_bias, reduced_objective


@pytest.mark.parametrize("seed", range(8))
def test_exact_bias_beats_every_threshold(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    X = np.round(rng.normal(size=(n, 3)), 1)  # rounded: tied projections
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    v = rng.uniform(0.1, 2.0, n)
    p = NodeProblem(0, X, y, v, 0, 0)
    w = rng.normal(size=3)
    best = reduced_objective(p, w, exact_bias(p, w), 0.0)
    s = np.sort(X @ w)
    candidates = np.concatenate([[s[0] - 1.0, s[-1] + 1.0], s, (s[1:] + s[:-1]) / 2])
    brute = min(reduced_objective(p, w, -t, 0.0) for t in candidates)
    assert best == pytest.approx(brute)
    assert best <= reduced_objective(p, w, 0.0, 0.0) + 1e-12


def test_guarded_iterations_fall_back_when_the_plain_pass_raises_the_objective(monkeypatch):
    X, y = load_digits(return_X_y=True)
    X = X[:500] / 16.0
    y = y[:500]
    plain = TAOClassifier(depth=4, l1_penalty=10.0, max_iter=8, guard="off", tol=0.0).fit(X, y)
    e_plain = [r["objective"] for r in plain.history_]
    calls = {"guarded": 0}
    original = loop.one_pass

    def counting(tree, X_, Y_, sw, cfg, **kw):
        calls["guarded"] += cfg.guard == "objective"
        return original(tree, X_, Y_, sw, cfg, **kw)

    monkeypatch.setattr(loop, "one_pass", counting)
    guarded = TAOClassifier(depth=4, l1_penalty=10.0, max_iter=8, tol=0.0).fit(X, y)
    e_guarded = [r["objective"] for r in guarded.history_]
    assert np.all(np.diff(e_guarded) <= 1e-9)
    assert np.any(np.diff(e_plain) > 1e-9)  # at λ = 10 the unguarded run goes up in iteration 3 …
    assert calls["guarded"] >= 1  # … so the guarded run redid that pass with every node guarded
    # while the plain pass does not increase E, both runs are the same run
    k = next((i for i, d in enumerate(np.diff(e_plain)) if d > 1e-9), len(e_plain) - 1)
    np.testing.assert_allclose(e_guarded[: k + 1], e_plain[: k + 1])
