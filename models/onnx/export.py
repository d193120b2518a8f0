"""The two entry points: an estimator's nodes inside a graph someone else builds
(:func:`estimator_graph`, :func:`estimator_outputs`), and a whole ONNX model of the estimator
alone (:func:`to_onnx`).

Outputs, by task (see :mod:`models.onnx.families` for how each family computes them):

* classification: ``label`` (N,) as ``predict`` (int64 for integer classes, strings for class
  names, float64 for real-valued classes) and ``probabilities`` (N, C) float64 as ``predict_proba``;
* regression: ``prediction`` float64, (N,) or (N, k) as ``predict``;
* clustering: ``cluster`` (N,) int64 as ``predict``;
* embedding: ``embedding`` (N, 2) float64 as ``transform``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from models.ground import __version__
from models.ground.errors import TreevizError
from models.onnx.families import converter, family_and_task
from models.onnx.graph import Graph
from models.onnx.outputs import Output


def _fitted(model: Any) -> None:
    try:
        check_is_fitted(model)
    except NotFittedError:
        raise TreevizError(f"This {type(model).__name__} is not fitted yet; fit it before exporting it to ONNX.") \
            from None
    except TypeError:  # not an estimator at all
        raise TreevizError(f"{type(model).__name__} is not a treeviz estimator, so it has no ONNX export; "
                           "export a model trained with treeviz.") from None


def estimator_outputs(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """Write into ``g`` the nodes that compute the fitted ``model``'s outputs from the float64 tensor
    ``x`` of shape (N, ``model.n_features_in_``), the features as ``predict`` takes them.

    Returns each output's tensor with its dtype and shape (see the module docstring for the names).
    Raises :class:`~models.ground.errors.TreevizError` with a sentence when the model is not fitted or
    its family has no exact graph.
    """
    _fitted(model)
    return converter(model)(model, g, x)


def estimator_graph(model: Any, g: Graph, x: str) -> dict[str, str]:
    """As :func:`estimator_outputs`, returning only the output tensors' names."""
    return {name: out.tensor for name, out in estimator_outputs(model, g, x).items()}


def to_onnx(model: Any) -> Any:
    """The fitted ``model`` as an ``onnx.ModelProto`` with one input ``X`` (float64, (N, d)) and the
    outputs of :func:`estimator_outputs` under their names.

    The metadata holds the estimator's class (``treeviz.estimator``), family and task, the treeviz
    version, the feature names (JSON, when the model has them) and the class labels (JSON, for
    classifiers).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from models.cart.estimators import CARTClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> proto = to_onnx(CARTClassifier(max_depth=2).fit(X, y))
    >>> [o.name for o in proto.graph.output]
    ['label', 'probabilities']
    """
    _fitted(model)
    g = Graph()
    d = int(model.n_features_in_)
    x = g.input("X", np.float64, [None, d])
    for name, out in estimator_outputs(model, g, x).items():
        g.output(out.tensor, name, out.dtype, out.shape)
    key, _, task = family_and_task(model)
    metadata = {"treeviz.estimator": type(model).__name__, "treeviz.family": key, "treeviz.task": task,
                "treeviz.version": __version__, "treeviz.n_features": str(d)}
    names = getattr(model, "feature_names_", None)
    if names is not None:
        metadata["treeviz.feature_names"] = json.dumps([str(n) for n in names])
    if hasattr(model, "classes_") and task == "classification":
        metadata["treeviz.classes"] = json.dumps([c.item() if isinstance(c, np.generic) else c
                                                  for c in np.asarray(model.classes_).tolist()], default=str)
    return g.model(name=type(model).__name__, doc=f"treeviz {type(model).__name__} ({key}, {task})",
                   metadata=metadata)
