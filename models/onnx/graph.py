"""A small builder of ONNX graphs: nodes, constants, inputs and outputs under names that never collide.

Every converter of :mod:`models.onnx` and the preprocessing front of a pipeline write into one
:class:`Graph`, each naming tensors by a hint; the graph makes the names unique. Numbers are float64
(``tensor(double)``) throughout, so a model's arithmetic is the one treeviz does in numpy.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from models.ground.errors import TreevizError

try:  # an optional extra (treeviz[onnx]): without it, building a graph says how to install it
    import onnx
except ImportError:
    onnx = None

#: The ONNX operator set the graphs use (onnxruntime 1.2x runs it), and that of the ai.onnx.ml domain.
OPSET = 21
ML_OPSET = 3
ML = "ai.onnx.ml"


def _onnx() -> Any:
    if onnx is None:
        raise TreevizError("ONNX export needs the onnx package: pip install 'treeviz[onnx]'.")
    return onnx


class Graph:
    """Nodes, initialisers, inputs and outputs of one ONNX graph.

    Examples
    --------
    >>> g = Graph()
    >>> x = g.input("X", np.float64, [None, 2])
    >>> w = g.const(np.ones((2, 1)), "w")
    >>> g.output(g.node("MatMul", [x, w], "s"), "score")
    'score'
    """

    def __init__(self) -> None:
        self._names: set[str] = set()
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.inputs: list[Any] = []
        self.outputs: list[Any] = []
        self.domains: set[str] = set()

    def name(self, hint: str) -> str:
        """A tensor name not used yet: ``hint``, else ``hint_2``, ``hint_3``, ..."""
        name, k = hint, 2
        while name in self._names:
            name, k = f"{hint}_{k}", k + 1
        self._names.add(name)
        return name

    def const(self, value: Any, hint: str = "c") -> str:
        """An initialiser holding ``value`` (a numpy array; float arrays are stored as float64,
        strings as ONNX strings)."""
        onnx = _onnx()
        arr = np.asarray(value)
        if arr.dtype.kind == "f":
            arr = arr.astype(np.float64)
        elif arr.dtype.kind in "US O".replace(" ", ""):
            arr = arr.astype(object)
        name = self.name(hint)
        self.initializers.append(onnx.numpy_helper.from_array(arr, name=name))
        return name

    def node(self, op: str, inputs: list[str], hint: str | None = None, *, domain: str = "", **attrs: Any) -> str:
        """Add one node of type ``op`` with a single output; returns the output's name."""
        return self.multi(op, inputs, 1, hint, domain=domain, **attrs)[0]

    def multi(self, op: str, inputs: list[str], n_outputs: int, hint: str | None = None, *,
              domain: str = "", **attrs: Any) -> list[str]:
        """Add one node with ``n_outputs`` outputs; returns their names."""
        onnx = _onnx()
        hint = hint or op.lower()
        outs = [self.name(hint if n_outputs == 1 else f"{hint}_{i}") for i in range(n_outputs)]
        self.nodes.append(onnx.helper.make_node(op, inputs, outs, name=self.name(f"node_{hint}"),
                                                domain=domain, **attrs))
        if domain:
            self.domains.add(domain)
        return outs

    def input(self, name: str, dtype: Any, shape: list[int | None]) -> str:
        """A graph input of this exact name (numpy dtype: float64, int64, or object/str for strings)."""
        if name in self._names:
            raise ValueError(f"The graph already has a tensor named {name!r}.")
        self._names.add(name)
        self.inputs.append(self._value_info(name, dtype, shape))
        return name

    def output(self, tensor: str, name: str, dtype: Any = np.float64, shape: list[int | None] | None = None) -> str:
        """Expose ``tensor`` as the graph output ``name`` (through an Identity when the names differ)."""
        if tensor != name:
            if name in self._names:
                raise ValueError(f"The graph already has a tensor named {name!r}.")
            self._names.add(name)
            self.nodes.append(_onnx().helper.make_node("Identity", [tensor], [name], name=self.name(f"node_{name}")))
        self.outputs.append(self._value_info(name, dtype, shape))
        return name

    @staticmethod
    def _value_info(name: str, dtype: Any, shape: list[int | None] | None) -> Any:
        onnx = _onnx()
        dt = np.dtype(dtype)
        elem = onnx.TensorProto.STRING if dt.kind in "USO" else onnx.helper.np_dtype_to_tensor_dtype(dt)
        dims = None if shape is None else [d if d is not None else "N" for d in shape]
        return onnx.helper.make_tensor_value_info(name, elem, dims)

    def model(self, *, name: str = "treeviz", doc: str = "", metadata: dict[str, str] | None = None) -> Any:
        """The finished, checked ``onnx.ModelProto``."""
        onnx = _onnx()
        graph = onnx.helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.initializers)
        opsets = [onnx.helper.make_opsetid("", OPSET)]
        if ML in self.domains:
            opsets.append(onnx.helper.make_opsetid(ML, ML_OPSET))
        model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="treeviz", doc_string=doc)
        model.ir_version = min(model.ir_version, 10)  # what onnxruntime 1.2x reads
        for key, value in (metadata or {}).items():
            entry = model.metadata_props.add()
            entry.key, entry.value = key, value
        onnx.checker.check_model(model, full_check=True)
        return model
