"""Skinny Trees ensembles as ONNX nodes: soft oblique trees whose expected leaf values are summed.

The estimators predict in float64 on the CPU from the selected features only
(``SoftTreeEnsemble`` over ``selected_features_``): split values ``z = bias + x_sel @ kernel_sel``,
each node's probability of sending a row *left* ``S(z)`` (the logistic sigmoid, or the smooth-step
``u²(3 − 2u)`` with ``u = clamp(z / width + 1/2, 0, 1)``), a leaf's reach probability the product
of its path's branch probabilities from the root down, and the output the sum over trees and leaves
of reach probability times leaf value. The graph writes the same steps in the same order; only the
products' summation inside MatMul may round differently (about 1e-16 relative), and routing is soft,
so nothing jumps: labels differ only where two classes' logits tie to rounding.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.onnx import outputs
from models.onnx.graph import Graph
from models.onnx.outputs import Output, axes


def _left_probability(g: Graph, z: str, activation: str, width: float) -> str:
    if activation == "sigmoid":
        return g.node("Sigmoid", [z], "p_left")
    u = g.node("Add", [g.node("Div", [z, g.const(np.array(float(width)), "width")], "z_scaled"),
                       g.const(np.array(0.5), "half")], "u")
    u = g.node("Clip", [u, g.const(np.array(0.0), "lo"), g.const(np.array(1.0), "hi")], "u")
    three_minus = g.node("Sub", [g.const(np.array(3.0), "three"),
                                 g.node("Mul", [g.const(np.array(2.0), "two"), u], "two_u")], "three_minus")
    return g.node("Mul", [g.node("Mul", [u, u], "u2"), three_minus], "p_left")


def path_columns(n_trees: int, depth: int) -> np.ndarray:
    """(n_trees·2^d, d) for each leaf (tree major, leaves left to right) the column of each branch
    probability on its path, root first, in ``[P_left, 1 − P_left]`` (nodes tree·|I| + node)."""
    n_nodes = 2**depth - 1
    out = np.zeros((n_trees * 2**depth, depth), dtype=np.int64)
    for t in range(n_trees):
        for leaf in range(2**depth):
            node = 0
            for level in range(depth):
                right = (leaf >> (depth - 1 - level)) & 1
                out[t * 2**depth + leaf, level] = t * n_nodes + node + right * n_trees * n_nodes
                node = 2 * node + 1 + right
    return out


def ensemble_outputs(g: Graph, x: str, model: Any) -> str:
    """(N, c) the ensemble's raw output (class logits, or standardised regression values)."""
    sel = np.asarray(model.selected_features_, dtype=np.int64)
    kernel = np.asarray(model.kernel_, dtype=np.float64)[sel]
    bias = np.asarray(model.bias_, dtype=np.float64)
    leaves = np.asarray(model.leaves_, dtype=np.float64)
    n_trees, n_leaves, c = leaves.shape
    depth = int(model.depth)
    xs = g.node("Gather", [x, g.const(sel, "selected")], "x_selected", axis=1)
    z = g.node("Add", [g.const(bias, "bias"), g.node("MatMul", [xs, g.const(kernel, "kernel")], "xk")], "z")
    p = _left_probability(g, z, model.activation, float(model.smoothstep_width))
    both = g.node("Concat", [p, g.node("Sub", [g.const(np.array(1.0), "one"), p], "p_right")], "branch", axis=1)
    steps = g.node("Gather", [both, g.const(path_columns(n_trees, depth), "path")], "path_p", axis=1)
    reach = g.node("ReduceProd", [steps, axes(g, 2)], "reach", keepdims=0)  # (N, m·2^d)
    return g.node("MatMul", [reach, g.const(leaves.reshape(n_trees * n_leaves, c), "leaves")], "ensemble")


def classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """``predict``: the class of the largest logit; ``predict_proba``: their softmax."""
    logits = ensemble_outputs(g, x, model)
    return outputs.classifier(g, model.classes_, outputs.argmax(g, logits), outputs.softmax(g, logits))


def regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """``predict``: the output times ``target_scale_`` plus ``target_mean_`` (the data's units)."""
    out = ensemble_outputs(g, x, model)
    scaled = g.node("Add", [g.node("Mul", [out, g.const(np.asarray(model.target_scale_, dtype=np.float64), "scale")],
                                   "scaled"), g.const(np.asarray(model.target_mean_, dtype=np.float64), "mean")],
                    "in_units")
    return outputs.regression(g, model, scaled, int(model.leaves_.shape[2]))
