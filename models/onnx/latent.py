"""Latent trees as ONNX nodes: the split layer, the path rewards, the frozen pruning's read-out of z,
and the head on [x; z] (classification, regression); the hard tree for clustering.

``predict`` of a latent-tree classifier or regressor runs its network in float64 with the frozen
pruning vector ``pruning_`` (``inference="frozen"``, :mod:`models.latent.estimator_base`):

* split scores ``s = act(BN(x W^T + b) + β)`` with BatchNorm's running statistics, act the
  identity or ELU;
* path rewards ``q_root = 1``, ``q_2t+1 = min(q_t, −s_t)``, ``q_2t+2 = min(q_t, s_t)``;
* ``z = relu(min(q + δ, clip(a, 0, upper)))`` with (δ, upper) of the read-out mode;
* the head (a Linear layer, or Linear–ELU–…–Linear; dropout is off in evaluation) on [x; z].

Every step is continuous in x (z is 0 at a split's boundary on both sides), so the graph, which
rounds a few products differently from torch (about 1e-16 relative), cannot jump: labels differ only
where two classes' logits tie to rounding. ``inference="batch"`` solves the pruning on each batch of
rows predicted together, so a row's prediction depends on the other rows: it has no exact graph and
is refused. Clustering assigns each row the leaf of its hard path (:mod:`models.onnx.trees`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.onnx import outputs
from models.onnx.graph import Graph
from models.onnx.outputs import Output
from models.onnx.trees import HardTree, reached_leaf


def readout_constants(mode: str, shift: float) -> tuple[float, float]:
    """``(delta, upper)`` of a read-out mode, as :func:`models.latent.params.readout_constants` gives
    them (written here so that the export does not import torch)."""
    if mode == "code":
        return 0.0, 1.0
    if mode == "paper":
        return float(shift), float("inf")
    raise TreevizError(f"The latent tree's read-out mode {mode!r} is unknown to the ONNX export.")


def _array(t: Any) -> np.ndarray:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64)


def _check_frozen(model: Any) -> None:
    if model.inference != "frozen":
        raise TreevizError(
            f"A latent tree with inference={model.inference!r} cannot be exported to ONNX exactly: it solves the "
            "pruning on each batch of rows predicted together, so a row's prediction depends on the other rows. "
            "Refit it with inference='frozen' (the default) to export it.")


def _elu(g: Graph, h: str, alpha: float = 1.0) -> str:
    """ELU as torch computes it: h where h > 0, else alpha·(exp(h) − 1)."""
    neg = g.node("Sub", [g.node("Exp", [h], "exp"), g.const(np.array(1.0), "one")], "expm1")
    if alpha != 1.0:
        neg = g.node("Mul", [neg, g.const(np.array(float(alpha)), "alpha")], "elu_neg")
    return g.node("Where", [g.node("Greater", [h, g.const(np.array(0.0), "zero")], "positive"), h, neg], "elu")


def _linear(g: Graph, x: str, layer: Any, hint: str) -> str:
    """``x @ W.T + b`` of a torch Linear layer."""
    out = g.node("MatMul", [x, g.const(_array(layer.weight).T, f"{hint}_w")], hint)
    if layer.bias is None:
        return out
    return g.node("Add", [out, g.const(_array(layer.bias), f"{hint}_b")], hint)


def split_scores(g: Graph, x: str, splits: Any) -> str:
    """(N, 2^D − 1) the split scores in evaluation mode (BatchNorm with running statistics, as torch's
    kernel applies it: ``h · (γ / sqrt(σ² + ε)) + (β_BN − μ γ / sqrt(σ² + ε))``), then + β and the act."""
    bn = splits.bn
    invstd = 1.0 / np.sqrt(_array(bn.running_var) + float(bn.eps))
    gamma = _array(bn.weight) if bn.weight is not None else np.ones_like(invstd)
    shift = _array(bn.bias) if bn.bias is not None else np.zeros_like(invstd)
    alpha = invstd * gamma
    beta_bn = shift - _array(bn.running_mean) * alpha
    h = _linear(g, x, splits.linear, "split_linear")
    h = g.node("Add", [g.node("Mul", [h, g.const(alpha, "bn_scale")], "bn"), g.const(beta_bn, "bn_shift")], "bn")
    s = g.node("Add", [h, g.const(_array(splits.beta), "split_beta")], "split_score")
    return _elu(g, s) if splits.activation == "elu" else s


def traversal(g: Graph, s: str, depth: int, pruning: np.ndarray, mode: str, shift: float) -> str:
    """(N, |T|) z from the split scores: the path rewards level by level, then the read-out."""
    levels = [outputs.rows_of(g, s, np.array([1.0]), "q_root")]
    for d in range(depth):
        w = 2**d
        q = levels[-1]
        s_level = g.node("Gather", [s, g.const(np.arange(w - 1, 2 * w - 1, dtype=np.int64), "level")], "s_level",
                         axis=1)
        left = g.node("Min", [q, g.node("Neg", [s_level], "minus_s")], "q_left")
        right = g.node("Min", [q, s_level], "q_right")
        pair = g.node("Concat", [g.node("Unsqueeze", [left, outputs.axes(g, 2)], "q_l"),
                                 g.node("Unsqueeze", [right, outputs.axes(g, 2)], "q_r")], "q_pair", axis=2)
        levels.append(g.node("Reshape", [pair, g.const(np.array([0, 2 * w], dtype=np.int64), "shape")], "q_level"))
    q = g.node("Concat", levels, "q", axis=1) if len(levels) > 1 else levels[0]
    delta, upper = readout_constants(mode, shift)
    cap = np.clip(np.asarray(pruning, dtype=np.float64), 0.0, upper)
    if delta != 0.0:
        q = g.node("Add", [q, g.const(np.array(float(delta)), "delta")], "q_shifted")
    return g.node("Relu", [g.node("Min", [q, g.const(cap, "cap")], "z_capped")], "z")


def head(g: Graph, features: str, module: Any) -> str:
    """The head f_φ in evaluation mode: Linear layers, ELU between them, dropout off."""
    layers = list(module.children()) if type(module).__name__ == "Sequential" else [module]
    out = features
    for i, layer in enumerate(layers):
        kind = type(layer).__name__
        if kind == "Linear":
            out = _linear(g, out, layer, f"head{i}")
        elif kind == "ELU":
            out = _elu(g, out, float(layer.alpha))
        elif kind != "Dropout":
            raise TreevizError(f"The latent tree's head has a {kind} layer, which the ONNX export does not know.")
    return out


def network_outputs(g: Graph, x: str, model: Any) -> str:
    """(N, k) the raw outputs of a latent tree's network with its frozen pruning."""
    _check_frozen(model)
    net = model._inference_net()
    s = split_scores(g, x, net.splits)
    shift = 0.0 if net.formulation == "preprint" else 0.5
    z = traversal(g, s, int(net.depth), model.pruning_, net.readout_mode, shift)
    features = g.node("Concat", [x, z], "xz", axis=1) if net.head_input == "xz" else z
    return head(g, features, net.head)


def classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """One logit (two classes: ``predict`` is logit > 0, ``predict_proba`` [1 − σ, σ]) or K logits
    (argmax and softmax)."""
    out = network_outputs(g, x, model)
    if len(model.classes_) > 2:
        return outputs.classifier(g, model.classes_, outputs.argmax(g, out), outputs.softmax(g, out))
    logit = g.node("Squeeze", [out, outputs.axes(g, 1)], "logit")
    one = g.const(np.array(1.0), "one")
    p = g.node("Div", [one, g.node("Add", [one, g.node("Exp", [g.node("Neg", [logit], "minus")], "exp")], "den")],
               "p")
    proba = g.node("Concat", [g.node("Unsqueeze", [g.node("Sub", [one, p], "q"), outputs.axes(g, 1)], "p0"),
                              g.node("Unsqueeze", [p, outputs.axes(g, 1)], "p1")], "proba", axis=1)
    index = g.node("Cast", [g.node("Greater", [logit, g.const(np.array(0.0), "zero")], "positive")], "index", to=7)
    return outputs.classifier(g, model.classes_, index, proba)


def regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """The network's output times ``y_std_`` plus ``y_mean_`` (the data's units)."""
    out = network_outputs(g, x, model)
    values = g.node("Add", [g.node("Mul", [out, g.const(np.asarray(model.y_std_, dtype=np.float64), "y_std")],
                                   "scaled"), g.const(np.asarray(model.y_mean_, dtype=np.float64), "y_mean")],
                    "in_units")
    return outputs.regression(g, model, values, int(model.n_outputs_))


def clustering(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """The cluster of each row: the position of its leaf among the leaves training rows reached
    (``cluster_leaves_``), −1 for another leaf; the leaf from the hard tree ``predict`` routes through."""
    tree = model._tree_for_routing()
    leaf = reached_leaf(g, x, HardTree.from_tree(tree))
    table = np.full(tree.n_nodes, -1, dtype=np.int64)
    clusters = np.asarray(model.cluster_leaves_, dtype=np.int64)
    table[clusters] = np.arange(clusters.size)
    return {"cluster": Output(g.node("Gather", [g.const(table, "cluster_of"), leaf], "cluster_id", axis=0),
                              np.int64, [None])}
