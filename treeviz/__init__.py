"""treeviz: learn optimisation-based decision trees and look inside them.

The public face, in the manner of ``sklearn.tree`` (internal paths may change behind these names)::

    import treeviz as tv
    data = tv.prepare(tv.load_dataset("iris"))
    model = tv.TAOClassifier().fit(data.X_train, data.labels("train"), feature_names=data.feature_names)
    tv.plot_tree(model, data.X_test, data.labels("test"))     # the Tree explorer's diagram
    print(tv.export_text(model))                                # also export_python, export_sql
    tv.save_model(model, "tao.zip"); tv.load_model("tao.zip")

Every registered estimator is here by its class name (``tv.TAOClassifier``, ``tv.SkinnyTreesClassifier``,
...; :func:`estimator_names` lists them), and every figure builder of :mod:`treeviz.plots`. Names are
looked up on first use, so ``import treeviz`` loads neither torch nor plotly.

The app's layers, one folder each, each importing only the layers below it (``models`` and its
ground sit under them all): ``readers`` (what reads a Tree: rules, code, layout, metrics),
``services`` (data, the run store, jobs, experiments, the views' computations), ``plots``, ``ui``
(Streamlit helpers and the report) and ``cli`` (the command line, beside the pages in ``app_pages``).
"""

from __future__ import annotations

import importlib
from typing import Any

from models import registry
from models.ground import __version__
from models.ground import display as _display

# A cell ending in a fitted model or a Tree draws the explorer's diagram (plotly is imported only then).
_display.set_html_renderer("treeviz.plots.notebook:card_html")

#: The public functions, by name: the module each lives in.
_FUNCTIONS = {
    "load_dataset": "treeviz.services.data",
    "load_table": "treeviz.services.data",
    "prepare": "treeviz.services.data",
    "PrepConfig": "treeviz.services.data",
    "save_model": "treeviz.services.data.pipeline",
    "load_model": "treeviz.services.data.pipeline",
    "Pipeline": "treeviz.services.data.pipeline",
    "Preprocessing": "treeviz.services.data.pipeline",
    "export_text": "treeviz.readers.exports",
    "export_python": "treeviz.readers.exports",
    "export_sql": "treeviz.readers.exports",
    "export_onnx": "treeviz.services.data.onnx_export",
    "Tree": "models.ground.tree",
}
#: The figure builders of treeviz.plots, by name (plot_tree among them).
_PLOTS = ("plot_tree", "tree_figure", "TreeFigureOptions", "weights_heatmap", "top_weights_figure",
          "weight_images_grid", "class_flow_figure", "class_split_bars", "training_curves", "lambda_path_figure",
          "sweep_figure", "forest_summary_figure", "dendrogram_figure", "embedding_map", "feature_ranking_figure")

__all__ = ["__version__", "estimator_names", *_FUNCTIONS, *_PLOTS]


def _estimator_families() -> dict[str, Any]:
    """Each registered estimator's class name, and the family that declares it (nothing imported)."""
    return {ref.partition(":")[2]: family for family in registry.families().values()
            for ref in family.estimators.values()}


def estimator_names() -> list[str]:
    """The class names of every registered estimator, as ``treeviz.<name>`` gives them."""
    return sorted(_estimator_families())


def __getattr__(name: str) -> Any:
    if name in _FUNCTIONS:
        return getattr(importlib.import_module(_FUNCTIONS[name]), name)
    if name in _PLOTS:
        return getattr(importlib.import_module("treeviz.plots"), name)
    family = _estimator_families().get(name)
    if family is None:
        raise AttributeError(f"module 'treeviz' has no attribute {name!r}")
    return family.class_by_name(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *estimator_names()})
