"""What the converters share once a model's raw scores are in the graph: class labels, softmax,
votes, means and the shape of a regression's prediction, each written as numpy writes it in the
estimators, so that the graph's arithmetic is theirs.

An :class:`Output` names a tensor with the type and shape the graph exposes it under.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from models.onnx.graph import Graph


@dataclass(frozen=True)
class Output:
    """One output of an estimator's graph: the tensor, its numpy dtype (``object`` for strings)
    and its shape (``None`` for the rows)."""

    tensor: str
    dtype: Any
    shape: list[int | None]


def axes(g: Graph, *values: int) -> str:
    """An int64 axes tensor (the axes input of Reduce*, Squeeze and Unsqueeze)."""
    return g.const(np.array(values, dtype=np.int64), "axes")


def rows_of(g: Graph, x: str, value: np.ndarray, hint: str = "rows") -> str:
    """``value`` repeated once per row of ``x``: shape (N, *value.shape)."""
    value = np.asarray(value)
    n = g.node("Shape", [x], "n_rows", start=0, end=1)
    shape = g.node("Concat", [n, g.const(np.array(value.shape, dtype=np.int64), "shape")], "shape", axis=0)
    return g.node("Expand", [g.const(value[None], hint), shape], hint)


def argmax(g: Graph, scores: str) -> str:
    """The first index of each row's largest score, int64 (N,): ties go to the smaller index, as
    ``np.argmax`` gives them."""
    return g.node("ArgMax", [scores], "argmax", axis=1, keepdims=0, select_last_index=0)


def softmax(g: Graph, scores: str) -> str:
    """``e / e.sum(axis=1)`` with ``e = exp(scores - scores.max(axis=1))``, the estimators' formula."""
    top = g.node("ReduceMax", [scores, axes(g, 1)], "max", keepdims=1)
    e = g.node("Exp", [g.node("Sub", [scores, top], "shifted")], "exp")
    return g.node("Div", [e, g.node("ReduceSum", [e, axes(g, 1)], "total", keepdims=1)], "softmax")


def mean(g: Graph, tensors: list[str]) -> str:
    """The mean of equally shaped tensors, summed in order and divided by their count, as numpy
    reduces the first axis of a stack."""
    total = tensors[0]
    for t in tensors[1:]:
        total = g.node("Add", [total, t], "sum")
    if len(tensors) == 1:
        return total
    return g.node("Div", [total, g.const(np.array(float(len(tensors))), "count")], "mean")


def vote_fractions(g: Graph, winners: list[str], n_classes: int) -> str:
    """(N, K) the fraction of ``winners`` (class indices, one (N,) tensor per voter) naming each
    class: the count divided by the number of voters, exact in float64."""
    classes = g.const(np.arange(n_classes, dtype=np.int64), "class_ids")
    counts = [g.node("Cast", [g.node("Equal", [g.node("Unsqueeze", [w, axes(g, 1)], "vote"), classes], "is_class")],
                     "one_hot", to=11)  # 11: double
              for w in winners]
    total = counts[0]
    for c in counts[1:]:
        total = g.node("Add", [total, c], "votes")
    return g.node("Div", [total, g.const(np.array(float(len(winners))), "voters")], "vote_fraction")


def class_constant(classes: np.ndarray) -> tuple[np.ndarray, Any]:
    """``classes_`` as the array the label output gathers from, and its dtype: int64 for integer
    (and boolean) classes, float64 for real ones, strings otherwise (class names)."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "iub":
        return classes.astype(np.int64), np.int64
    if classes.dtype.kind == "f":
        return classes.astype(np.float64), np.float64
    items = list(classes.tolist())
    if items and all(isinstance(c, (int, np.integer)) and not isinstance(c, bool) for c in items):
        return np.array(items, dtype=np.int64), np.int64
    return np.array([str(c) for c in items], dtype=object), object


def labels(g: Graph, classes: np.ndarray, index: str) -> Output:
    """The class label of each row from its class index (N,): ``classes_.take(index)``."""
    table, dtype = class_constant(classes)
    return Output(g.node("Gather", [g.const(table, "classes"), index], "class_label", axis=0), dtype, [None])


def classifier(g: Graph, classes: np.ndarray, index: str, proba: str) -> dict[str, Output]:
    """The two outputs of a classifier: the label from ``index`` and the probabilities ``proba``."""
    return {"label": labels(g, classes, index),
            "probabilities": Output(proba, np.float64, [None, len(classes)])}


def regression(g: Graph, model: Any, values: str, k: int) -> dict[str, Output]:
    """The ``prediction`` output of a regressor from (N, k) ``values``: 1-D when the model's
    ``predict`` gives 1-D predictions (one target given as a vector), as ``_as_y_shape`` decides,
    else (N, k)."""
    if hasattr(model, "_as_y_shape"):
        flat = np.ndim(model._as_y_shape(np.zeros((1, k)))) == 1
    else:
        flat = k == 1
    if flat:
        return {"prediction": Output(g.node("Squeeze", [values, axes(g, 1)], "flat"), np.float64, [None])}
    return {"prediction": Output(values, np.float64, [None, k])}
