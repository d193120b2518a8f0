"""The latent-tree network: [ICML] Table 4 parameter counts, bias initialisation, read-out
sparsity, QHAdam, BatchNorm folding, and an end-to-end XOR smoke test."""

import numpy as np
import pytest
import torch

from models.latent.estimators import LatentTreeClassifier
from models.latent.layers import LatentTreeNet, SplitLayer, count_parameters, make_head
from models.latent.pruning import path_rewards, readout
from models.latent.qhadam import QHAdam


@pytest.mark.parametrize(
    "d,depth,layers,expected",
    [(90, 5, 5, 186211), (136, 3, 4, 52309), (699, 2, 3, 55806), (11, 3, 4, 43434), (28, 2, 6, 701665)],
)
def test_parameter_counts_reproduce_icml_table4(d, depth, layers, expected):
    # Year, Microsoft, Yahoo, Click, Higgs: one output (regression or binary classification)
    net = LatentTreeNet(d, 1, depth, head="mlp", head_layers=layers)
    assert count_parameters(net) == expected


def test_head_widths_double_and_linear_head_is_one_layer():
    mlp = make_head(10, 3, "mlp", n_layers=4, dropout=0.1)
    linears = [m for m in mlp if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == [64, 128, 256, 3]
    assert isinstance(make_head(10, 3, "linear"), torch.nn.Linear)


def test_bias_initialisation_centres_every_reached_split():
    torch.manual_seed(0)
    x = torch.randn(512, 5, dtype=torch.float64)
    layer = SplitLayer(5, 3).double()
    layer.init_bias(x)
    with torch.no_grad():
        h = torch.nn.functional.batch_norm(layer.linear(x), None, None, layer.bn.weight, layer.bn.bias,
                                           training=True) + layer.beta
    node = torch.zeros(512, dtype=torch.long)
    for _level in range(3):
        for t in node.unique():
            mean = h[node == t, t].mean()
            assert abs(float(mean)) < 1e-5
        s = h[torch.arange(512), node]
        node = torch.where(s < 0, 2 * node + 1, 2 * node + 2)
    occupancy = torch.bincount(node - 7, minlength=8).double() / 512
    assert occupancy.max() < 0.5 and (occupancy > 0).all()


def test_code_readout_is_nonzero_only_on_the_hard_path():
    torch.manual_seed(1)
    net = LatentTreeNet(4, 2, 3, prune_strength=0.5).double()
    x = torch.randn(64, 4, dtype=torch.float64)
    net.eval()
    with torch.no_grad():
        state = net.tree_state(x)
    s, z, a = state["s"], state["z"], state["a"]
    node = torch.zeros(64, dtype=torch.long)
    on_path = torch.zeros_like(z, dtype=torch.bool)
    on_path[:, 0] = True
    for _ in range(3):
        node = torch.where(s[torch.arange(64), node] < 0, 2 * node + 1, 2 * node + 2)
        on_path[torch.arange(64), node] = True
    assert ((z > 0) <= on_path).all()
    assert torch.equal(z > 0, on_path & (a > 0)[None, :])


def test_paper_readout_gives_half_the_cap_at_a_tied_split():
    s = torch.zeros(1, 1, dtype=torch.float64)  # a depth-1 tree, split value exactly 0
    q = path_rewards(s)
    assert q.tolist() == [[1.0, 0.0, 0.0]]
    a = torch.tensor([1.0, 0.8, 0.8], dtype=torch.float64)
    assert readout(q, a, mode="paper")[0, 1:].tolist() == [0.5, 0.5]
    assert readout(q, a, mode="code")[0, 1:].tolist() == [0.0, 0.0]


def test_qhadam_with_unit_nus_is_adam():
    torch.manual_seed(2)
    w1 = torch.nn.Parameter(torch.randn(5))
    w2 = torch.nn.Parameter(w1.detach().clone())
    opt1 = QHAdam([w1], lr=0.1, betas=(0.9, 0.999), nus=(1.0, 1.0))
    opt2 = torch.optim.Adam([w2], lr=0.1, betas=(0.9, 0.999))
    target = torch.randn(5)
    for _ in range(20):
        for w, opt in ((w1, opt1), (w2, opt2)):
            opt.zero_grad()
            ((w - target) ** 2).sum().backward()
            opt.step()
    torch.testing.assert_close(w1, w2, rtol=1e-6, atol=1e-7)


def test_qhadam_converges_with_the_paper_settings():
    torch.manual_seed(3)
    w = torch.nn.Parameter(torch.zeros(3))
    opt = QHAdam([w], lr=0.05)
    for _ in range(500):
        opt.zero_grad()
        ((w - torch.tensor([1.0, -2.0, 0.5])) ** 2).sum().backward()
        opt.step()
    torch.testing.assert_close(w.detach(), torch.tensor([1.0, -2.0, 0.5]), atol=1e-2, rtol=0)
    with pytest.raises(ValueError, match="positive learning rate"):
        QHAdam([w], lr=0.0)


@pytest.mark.parametrize("activation", ["linear", "elu"])
def test_folded_rule_has_the_sign_of_the_split_in_eval_mode(activation):
    torch.manual_seed(4)
    layer = SplitLayer(6, 3, activation).double()
    x = torch.randn(300, 6, dtype=torch.float64)
    layer.train()
    for _ in range(5):  # move the running statistics away from their initial values
        layer(x * 2 + 1)
    layer.eval()
    with torch.no_grad():
        s = layer(x)
        w, b = layer.folded()
        affine = x @ w.T + b
    assert torch.equal(torch.sign(s), torch.sign(affine))
    if activation == "linear":
        torch.testing.assert_close(s, affine)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_xor_smoke_end_to_end():
    """XOR, depth 3, linear splits, linear head on [x; z], full batch, Adam: fits and prunes."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(200, 2))
    y = (X[:, 0] * X[:, 1] >= 0).astype(int)
    model = LatentTreeClassifier(depth=3, prune_strength=1.0, optimizer="adam", learning_rate=1e-2,
                                 batch_size=200, max_epochs=1500, patience=0, lr_patience=0, random_state=0)
    model.fit(X, y)
    assert model.score(X, y) >= 0.9
    assert (model.pruning_ == 0).any(), "some node ends pruned"


def test_training_is_deterministic_on_cpu():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    runs = [LatentTreeClassifier(depth=2, max_epochs=5, random_state=7).fit(X, y) for _ in range(2)]
    assert runs[0].history_ == [{**r, "seconds": runs[0].history_[i]["seconds"]}
                                for i, r in enumerate(runs[1].history_)]
    np.testing.assert_array_equal(runs[0].pruning_, runs[1].pruning_)
    np.testing.assert_array_equal(runs[0].predict_proba(X), runs[1].predict_proba(X))
