"""ONNX export of a model with its preprocessing inside the graph, so the ONNX model takes a table's raw
columns (the optional extra ``treeviz[onnx]``: ``pip install 'treeviz[onnx]'``).

The graph has one input per column the model reads, named after the column, of shape ``(N,)``:

* a **numeric** column is ``tensor(double)``; a missing value is NaN, filled with the training median;
* a **text** column is ``tensor(string)``, one level per row as it appears in the table; the empty
  string (or ``(missing)``) is a missing value, and a level training never saw sets none of the
  column's one-hot features, as :class:`~treeviz.services.data.pipeline.Preprocessing` does.

Then the training medians, the z-score and the model (:mod:`models.onnx`): outputs ``label`` and
``probabilities`` (classifiers), ``prediction`` (regressors), ``cluster`` (clustering) or ``embedding``.
An output whose name a column already has gets ``_out`` appended. Date columns (read as decimal years at
upload) and quantile scaling (the normal quantile function has no ONNX operator) cannot be expressed
exactly, so their export is refused with a sentence; so is a data set uploaded before treeviz recorded
where each feature comes from.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from models.ground import __version__
from models.ground.errors import TreevizError
from models.onnx import estimator_outputs, to_onnx
from models.onnx.graph import ML, Graph
from treeviz.services.data.encoding import MISSING_LEVEL
from treeviz.services.data.pipeline import Preprocessing, pipeline_parts
from treeviz.services.data.preprocess import PreparedData


def _check(steps: Preprocessing) -> None:
    """Refuse what the graph cannot compute exactly, with a sentence."""
    if steps.sources is None:
        raise TreevizError("This model's data set was uploaded before treeviz recorded where each feature comes "
                           "from, so the ONNX graph cannot read the raw columns. Upload the table again and "
                           "retrain, or export the model alone (treeviz.models.onnx.to_onnx) on its features.")
    if dates := [c.name for c in steps.columns if c.kind == "dates"]:
        raise TreevizError(f"Column(s) {', '.join(map(repr, dates))} hold dates, which an ONNX graph cannot "
                           "parse. Give the dates as numbers (for example the decimal year) in the table, "
                           "retrain, then export.")
    if steps.scaling == "quantile":
        raise TreevizError("The model's data was scaled with the quantile transform, whose normal quantile "
                           "function ONNX has no operator for, so the export would not be exact. Retrain with "
                           "standard or no scaling to export it to ONNX.")


def _column_tensors(g: Graph, steps: Preprocessing) -> dict[str, str]:
    """One graph input per raw column: numbers as (N,) doubles, text columns as (N,) strings mapped to
    their level's index (-1 for a level training never saw)."""
    tensors = {}
    for column in steps.columns:
        if column.kind == "number":
            tensors[column.name] = g.input(column.name, np.float64, [None])
            continue
        text = g.input(column.name, object, [None])
        keys = list(column.levels)
        values = list(range(len(keys)))
        if MISSING_LEVEL in keys:  # an empty cell is the missing level, as at upload
            keys.append("")
            values.append(column.levels.index(MISSING_LEVEL))
        tensors[column.name] = g.node("LabelEncoder", [text], "level", domain=ML, keys_strings=keys,
                                      values_int64s=values, default_int64=-1)
    return tensors


def _front(g: Graph, steps: Preprocessing) -> str:
    """The raw columns to the model's features: one-hot levels and numbers in feature order, the
    training medians for NaN, then the z-score. Returns the (N, d) tensor."""
    _check(steps)
    tensors = _column_tensors(g, steps)
    levels = {c.name: list(c.levels) for c in steps.columns}
    one = g.const(np.array([1], dtype=np.int64), "axis1")
    pieces = []
    for kind, column, level in steps.sources:
        value = tensors[column]
        if kind == "one-hot":
            index = g.const(np.array(levels[column].index(level), dtype=np.int64), "level_index")
            value = g.node("Cast", [g.node("Equal", [value, index], "is_level")], "indicator", to=11)
        pieces.append(g.node("Unsqueeze", [value, one], "feature"))
    X = g.node("Concat", pieces, "features", axis=1) if len(pieces) > 1 else pieces[0]
    if steps.fill is not None:
        X = g.node("Where", [g.node("IsNaN", [X], "gap"), g.const(steps.fill, "median"), X], "filled")
    if steps.scaling == "standard":
        if np.any(steps.exponent):  # dividing by a power of two is exact: X * 2**-e
            X = g.node("Mul", [X, g.const(np.ldexp(1.0, -steps.exponent), "unit")], "shrunk")
        X = g.node("Div", [g.node("Sub", [X, g.const(steps.center, "center")], "centred"),
                           g.const(steps.spread, "spread")], "scaled")
    return X


def onnx_model(model: Any, *, prepared: PreparedData | Preprocessing | None = None) -> Any:
    """The ``onnx.ModelProto`` of :func:`export_onnx`."""
    estimator, steps = pipeline_parts(model, prepared)
    if steps is None:  # the estimator alone: one input X, its features
        return to_onnx(estimator)
    g = Graph()
    x = _front(g, steps)
    inputs = [c.name for c in steps.columns]
    renamed = {}
    for key, out in estimator_outputs(estimator, g, x).items():
        name = key if key not in inputs else f"{key}_out"
        renamed[key] = g.output(out.tensor, name, out.dtype, out.shape)
    metadata = {"treeviz.estimator": type(estimator).__name__, "treeviz.version": __version__,
                "treeviz.outputs": json.dumps(renamed),
                "treeviz.feature_names": json.dumps(list(steps.feature_names)),
                "treeviz.columns": json.dumps([{"name": c.name, "kind": c.kind, "levels": list(c.levels)}
                                               for c in steps.columns])}
    if hasattr(estimator, "classes_"):
        metadata["treeviz.classes"] = json.dumps(np.asarray(estimator.classes_).tolist(), default=str)
    return g.model(name=type(estimator).__name__, metadata=metadata,
                   doc=f"treeviz {type(estimator).__name__}, fed the table's raw columns")


def export_onnx(model: Any, path: str | os.PathLike | None = None, *,
                prepared: PreparedData | Preprocessing | None = None) -> bytes:
    """A fitted model as an ONNX model (bytes; also written to ``path`` when given).

    Parameters
    ----------
    model : estimator or Pipeline
        A :class:`~treeviz.services.data.pipeline.Pipeline` (what :func:`treeviz.load_model` gives for a
        model file with preprocessing) brings its preprocessing into the graph.
    path : str or path, optional
        Where to write the ``.onnx`` file.
    prepared : PreparedData or Preprocessing, optional
        The data an estimator was fitted on: its preprocessing goes into the graph. Without it (and for
        a bare estimator), the graph's one input ``X`` takes the model's features as ``predict`` does.

    Returns
    -------
    bytes
        The serialised ``onnx.ModelProto`` (see the module docstring for inputs and outputs).

    Raises
    ------
    TreevizError
        When onnx is not installed, the model is not fitted, or a family or preprocessing step cannot be
        expressed exactly.

    Examples
    --------
    >>> import treeviz as tv
    >>> data = tv.prepare(tv.load_dataset("penguins"))
    >>> model = tv.CARTClassifier(max_depth=3).fit(data.X_train, data.labels("train"))
    >>> blob = tv.export_onnx(model, prepared=data)
    >>> feed = onnx_feed(pd.read_csv("sample_data/penguins.csv").head(2), model, prepared=data)
    >>> sorted(feed)[:2]
    ['bill_depth_mm', 'bill_length_mm']
    """
    data = onnx_model(model, prepared=prepared).SerializeToString()
    if path is not None:
        Path(path).write_bytes(data)
    return data


def onnx_feed(df: pd.DataFrame, model: Any, *, prepared: PreparedData | Preprocessing | None = None
              ) -> dict[str, np.ndarray]:
    """The inputs of the exported graph for the rows of ``df``: each column the model reads, numbers as
    float64 (NaN where empty) and text as strings (the empty string where empty)."""
    _, steps = pipeline_parts(model, prepared)
    if steps is None:
        raise TreevizError("This model has no preprocessing: its ONNX graph takes one input 'X', the features.")
    feed = {}
    for column in steps.columns:
        if column.name not in df.columns:
            raise TreevizError(f"The table lacks the column {column.name!r} that the model reads.")
        values = df[column.name]
        if column.kind == "category":
            feed[column.name] = np.asarray(values.astype(str).where(values.notna(), ""), dtype=object)
        else:
            feed[column.name] = pd.to_numeric(values, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    return feed
