"""ONNX export of fitted estimators (the optional extra ``treeviz[onnx]``).

:func:`to_onnx` gives a fitted estimator as an ONNX model with one input ``X``;
:func:`estimator_graph` writes its nodes into a :class:`~models.onnx.graph.Graph` that another
builder (a preprocessing front) feeds. The onnx package is imported only when a graph is built.
"""

from models.onnx.export import estimator_graph, estimator_outputs, to_onnx

__all__ = ["estimator_graph", "estimator_outputs", "to_onnx"]
