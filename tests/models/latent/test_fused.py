"""The fused CPU pruning layer equals the composition path_rewards → prune → readout,
in values and gradients (it is the CPU fast path of every latent-tree training step)."""

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from models.latent.fused import HAVE_NUMBA, fused_layer
from models.latent.pruning import path_rewards, prune, readout
from models.latent.pruning_layer import latent_layer

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed")


def composed(S, lam, mode):
    Q = path_rewards(S)
    a = prune(Q, lam, solver="general")
    return Q, a, readout(Q, a, mode)


@pytest.mark.parametrize("mode", ["code", "paper"])
@pytest.mark.parametrize("depth", [1, 2, 4, 6])
def test_values_and_gradients_equal_the_general_solver(mode, depth):
    gen = torch.Generator().manual_seed(depth)
    for n in (1, 2, 9, 64, 300):
        for lam in (1e-3, 0.3, 1.0, 30.0, 1e3):
            S = torch.randn(n, 2**depth - 1, generator=gen, dtype=torch.float64) * 0.8
            S1, S2 = S.clone().requires_grad_(), S.clone().requires_grad_()
            out1, out2 = composed(S1, lam, mode), fused_layer(S2, lam, 0.5, mode)
            weights = [torch.randn(o.shape, generator=gen, dtype=torch.float64) for o in out1]
            sum(((o * w).sum() for o, w in zip(out1, weights))).backward()
            sum(((o * w).sum() for o, w in zip(out2, weights))).backward()
            for x, y in zip(out1, out2):
                torch.testing.assert_close(y, x, rtol=0, atol=1e-12)
            torch.testing.assert_close(S2.grad, S1.grad, rtol=0, atol=1e-10)


def test_ties_and_coarse_scores():
    # scores on a coarse grid: many equal q and exact zeros (a sample on a split boundary)
    gen = torch.Generator().manual_seed(5)
    S = (torch.randint(-4, 5, (200, 15), generator=gen).double() / 4.0)
    _, a1, Z1 = composed(S, 2.0, "code")
    _, a2, Z2 = fused_layer(S, 2.0)
    torch.testing.assert_close(a2, a1, rtol=0, atol=1e-12)
    torch.testing.assert_close(Z2, Z1, rtol=0, atol=1e-12)


def test_float32_gradcheck_and_dispatch():
    gen = torch.Generator().manual_seed(6)
    S = torch.randn(40, 7, generator=gen)
    _, a, Z = latent_layer(S, 1.0)
    _, a2, _ = composed(S.double(), 1.0, "code")
    torch.testing.assert_close(a.double(), a2, rtol=0, atol=1e-5)
    assert Z.dtype == torch.float32 and Z.shape == (40, 15)
    S64 = torch.randn(12, 7, generator=gen, dtype=torch.float64).requires_grad_()
    for mode in ("code", "paper"):
        for out in (2, 1):  # Z, then a
            def layer(s, mode=mode, out=out):
                return fused_layer(s, 0.7, 0.5, mode)[out]

            assert torch.autograd.gradcheck(layer, (S64,), eps=1e-6, atol=1e-5)


def test_the_layer_is_sparse_where_the_qp_is():
    # nodes nobody reaches within margin 1/2 are pruned (a = 0) with zero gradient
    S = torch.full((5, 3), 10.0, dtype=torch.float64, requires_grad=True)  # everyone goes right
    _, a, Z = fused_layer(S, 1.0)
    assert a[1].item() == 0.0 and a[3].item() == 0.0 and a[4].item() == 0.0  # the left subtree
    Z.sum().backward()
    assert np.isfinite(S.grad.numpy()).all()


def test_the_kernel_and_the_composition_do_not_import_each_other():
    """The pruning package (torch composition) and fused.py (numba kernel) share only params.py;
    pruning_layer.py, above both, chooses between them."""
    root = Path(__file__).resolve().parents[3] / "models" / "latent"

    def imported(name):
        single = root / f"{name}.py"
        files = [single] if single.exists() else sorted((root / name).glob("*.py"))
        assert files, name
        found = set()
        for path in files:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    found.add(node.module)
                    found.update(f"{node.module}.{alias.name}" for alias in node.names)
                elif isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
        return found

    assert not any(m.startswith("models.latent.fused") for m in imported("pruning"))
    assert not any(m.startswith("models.latent.pruning") for m in imported("fused"))
    assert not any(m.startswith("models.latent.reference") for m in imported("pruning") | imported("fused"))
