"""The fused training path: hand-written gradients against autograd, whole fits against the plain
autograd path (models.skinny.train.fit_ensemble), and trials trained together against trials
trained one at a time with the same seeds."""

import itertools

import numpy as np
import pytest
import torch

from models.skinny import fused
from models.skinny.ensemble import SoftTreeEnsemble
from models.skinny.train import Data, Schedule, fit_ensemble

CASES = list(itertools.product(("sigmoid", "smoothstep"), ("classification", "regression"), (False, True)))


def problem(task, weighted, n=50, p=6, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, p, generator=g, dtype=torch.float64)
    if task == "classification":
        y = torch.randint(0, c, (n,), generator=g)
        targets = torch.nn.functional.one_hot(y, c).double()
    else:
        y = torch.randn(n, c, generator=g, dtype=torch.float64)
        targets = y
    w = torch.rand(n, generator=g, dtype=torch.float64) + 0.1 if weighted else None
    return X, y, targets, w


def loss_fn(task):
    def loss(out, target, w):
        each = torch.nn.functional.cross_entropy(out, target, reduction="none") if task == "classification" \
            else (out - target).pow(2).mean(1)
        return each.mean() if w is None else (each * w).sum() / w.sum()
    return loss


def ensemble(p, c, m, d, activation, seed):
    g = torch.Generator().manual_seed(seed)
    return SoftTreeEnsemble(p, c, m, d, activation=activation, width=2.0, generator=g, dtype=torch.float64), g


@pytest.mark.parametrize("activation,task,weighted", CASES)
def test_one_fused_step_is_the_autograd_gradient_step(activation, task, weighted):
    """One step over the whole data (no prox): the change of every parameter is −η × autograd's
    gradient of the batch loss plus the ridge, in float64 to 1e-10."""
    X, y, targets, w = problem(task, weighted)
    model, g = ensemble(6, 3, 3, 3, activation, seed=1)
    ridge, lr = 0.05, 0.3
    objective = loss_fn(task)(model(X), y, w) + ridge * model.kernel.pow(2).sum()
    grads = torch.autograd.grad(objective, [model.kernel, model.bias, model.leaves])
    trials = fused.Trials.from_models([model], [Schedule("l0", 0.0, False, 0.0, ridge, 0.0, 0)], [lr], [g])
    records = []
    fused.train(trials, fused.TrialData(fused.augment(X), targets, w), task=task, batch_size=len(X), max_epochs=1,
                record=lambda t, r: records.append(r) or True)
    kernel, bias, leaves = fused.unpack(trials.K, trials.LV, 3, 3)[0]
    for before, after, grad in zip((model.kernel, model.bias, model.leaves), (kernel, bias, leaves), grads):
        torch.testing.assert_close((before.detach() - after) / lr, grad, rtol=1e-10, atol=1e-10)
    assert records[0]["loss"] == pytest.approx(float(objective.detach()), rel=1e-12)


def test_pack_and_unpack_are_inverse_and_the_layout_gives_the_ensembles_outputs():
    model, _ = ensemble(5, 2, 4, 3, "sigmoid", seed=2)
    with torch.no_grad():
        model.bias.normal_()
        K, LV = fused.pack([model.kernel], [model.bias], [model.leaves], 4, 3)
        kernel, bias, leaves = fused.unpack(K, LV, 4, 3)[0]
        assert torch.equal(kernel, model.kernel) and torch.equal(bias, model.bias) and torch.equal(leaves, model.leaves)
        X = torch.randn(20, 5, dtype=torch.float64)
        trials = fused.Trials(K, LV, 4, 3, "sigmoid", 1.0, [], [], [])
        torch.testing.assert_close(fused.outputs(trials, fused.augment(X), chunk=7)[0], model(X), rtol=1e-13,
                                   atol=1e-13)


@pytest.mark.parametrize("activation,task,weighted", CASES)
@pytest.mark.parametrize("penalty", ["l0", "group_lasso"])
def test_fused_training_follows_the_plain_path(activation, task, weighted, penalty):
    """Several epochs with features being removed: the same parameters, losses and feature counts
    as autograd step by step, in float64."""
    X, y, targets, w = problem(task, weighted, n=70, p=8)
    X[:, 6:] *= 0.05  # weak features, so that the prox removes some
    if penalty == "l0":
        schedule = Schedule("l0", 8.0, True, 0.05, 0.02, 0.0, 2)
    else:
        schedule = Schedule("group_lasso", 0.0, False, 0.0, 0.0, 0.6, 2)
    plain, g1 = ensemble(8, 3, 3, 2, activation, seed=3)
    same, g2 = ensemble(8, 3, 3, 2, activation, seed=3)
    r1, r2 = [], []
    fit_ensemble(plain, Data(X, y, w), loss_fn(task), schedule, learning_rate=0.3, batch_size=16, max_epochs=6,
                 generator=g1, record=lambda **r: r1.append(r) or True, validation=lambda o, t: {})
    trials = fused.Trials.from_models([same], [schedule], [0.3], [g2])
    fused.train(trials, fused.TrialData(fused.augment(X), targets, w), task=task, batch_size=16, max_epochs=6,
                record=lambda t, r: r2.append(r) or True)
    trials.write_back([same])
    for a, b in zip(plain.parameters(), same.parameters()):
        torch.testing.assert_close(a.detach(), b.detach(), rtol=1e-9, atol=1e-11)
    assert [r["n_features"] for r in r1] == [r["n_features"] for r in r2]
    assert min(r["n_features"] for r in r2) < 8  # the prox did remove features
    np.testing.assert_allclose([r["loss"] for r in r1], [r["loss"] for r in r2], rtol=1e-10)
    assert [r["step"] for r in r1] == [r["step"] for r in r2]


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_trials_trained_together_equal_trials_trained_one_at_a_time(task):
    """Three trials (their own seeds, λ0, λ2, ramp rates and learning rates) in one batched
    program give the models and records each gives alone."""
    X, y, targets, _ = problem(task, False, n=45, p=7, c=2)
    settings = [(Schedule("l0", 4.0, True, 0.05, 0.01, 0.0, 1), 0.2, 11),
                (Schedule("l0", 20.0, True, 0.2, 0.05, 0.0, 1), 0.5, 12),
                (Schedule("l0", 0.5, False, 0.0, 0.0, 0.0, 1), 0.1, 13)]
    data = fused.TrialData(fused.augment(X), targets, X_val=fused.augment(X[:9]), Y_val=y[:9])
    alone, alone_records = [], []
    for schedule, lr, seed in settings:
        model, g = ensemble(7, 2, 3, 3, "sigmoid", seed)
        records = []
        trials = fused.Trials.from_models([model], [schedule], [lr], [g])
        fused.train(trials, data, task=task, batch_size=8, max_epochs=5,
                    record=lambda t, r, records=records: records.append(r) or True,
                    validation=lambda out, target: {"val_first": float(out[0, 0])})
        alone.append(fused.unpack(trials.K, trials.LV, 3, 3)[0])
        alone_records.append(records)
    pairs = [ensemble(7, 2, 3, 3, "sigmoid", seed) for _, _, seed in settings]
    together = fused.Trials.from_models([mo for mo, _ in pairs], [s for s, _, _ in settings],
                                        [lr for _, lr, _ in settings], [g for _, g in pairs])
    records = [[], [], []]
    fused.train(together, data, task=task, batch_size=8, max_epochs=5,
                record=lambda t, r: records[t].append(r) or True,
                validation=lambda out, target: {"val_first": float(out[0, 0])})
    for t, params in enumerate(fused.unpack(together.K, together.LV, 3, 3)):
        for a, b in zip(alone[t], params):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-13)
        for r_alone, r_together in zip(alone_records[t], records[t]):
            assert r_alone["n_features"] == r_together["n_features"]
            assert r_alone["loss"] == pytest.approx(r_together["loss"], rel=1e-12)
            assert r_alone["val_first"] == pytest.approx(r_together["val_first"], rel=1e-12)
    assert len({r[-1]["n_features"] for r in records}) > 1  # the settings do differ in what they keep


def test_fit_together_gives_each_estimator_its_own_fit():
    """A budget search's trials (own seeds, λ0, λ2, ramp rates, learning rates; two shapes) trained
    by fit_together end as each estimator's own fit: the same selected features, histories and
    predictions (float32, to rounding)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from models.skinny.estimators import SkinnyTreesClassifier, fit_together

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[:240]
    y = y[:240]
    settings = [dict(lambda0=300.0, random_state=1), dict(lambda0=2000.0, learning_rate=0.2, random_state=2),
                dict(lambda0=800.0, lambda2=1.0, temperature=0.05, random_state=3),
                dict(lambda0=800.0, depth=3, random_state=4)]
    common = dict(n_trees=5, depth=2, batch_size=32, max_epochs=8, device="cpu")
    alone = [SkinnyTreesClassifier(**{**common, **kw}).fit(X[:200], y[:200], eval_set=(X[200:], y[200:]))
             for kw in settings]
    together = [SkinnyTreesClassifier(**{**common, **kw}) for kw in settings]
    assert fit_together(together, X[:200], y[:200], eval_set=(X[200:], y[200:])) == [None] * 4
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a.selected_features_, b.selected_features_)
        np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-4, atol=1e-5)
        assert [r["n_features"] for r in a.history_] == [r["n_features"] for r in b.history_]
        np.testing.assert_allclose([r["val_loss"] for r in a.history_], [r["val_loss"] for r in b.history_],
                                   rtol=1e-4)
        assert a.n_steps_ == b.n_steps_
    assert len({m.selected_features_.size for m in together}) > 1
