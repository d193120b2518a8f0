"""The ONNX converters of the families' fitted estimators. Each family declares which converter each of
its tasks gets (``Family.onnx``: task -> ``"models.onnx.families:cart_classifier"``, in its
``family.py``), so a new family adds its line there and nothing here dispatches on family keys.

The family and the task come from the registry (:func:`models.registry.registered_class`), so a
user's subclass of an estimator is exported as the estimator it derives from, and no family
package is imported here: the converters read the fitted attributes ``predict`` reads. Each
converter writes the nodes of ``predict`` (and ``predict_proba``) as the estimator computes them:

========================  ==============================================================
cart                      the Tree's leaf values (class fractions or values)
tao, laptao               the TAO tree's leaf scores; proba as ``predict_proba`` makes them
tao_forest                majority vote (constant leaves) or mean probabilities; mean values
dgt, dgt_bandit           the Tree's leaf values (softmax or sigmoid shares, or values)
dgt_forest                majority vote of the trees' leaf argmax; mean values
skinny                    :mod:`models.onnx.skinny`
latent                    :mod:`models.onnx.latent`
tree_embedding            the TAO tree's leaf outputs (``transform``)
========================  ==============================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from models.ground.errors import TreevizError
from models.onnx import outputs
from models.onnx.graph import Graph
from models.onnx.outputs import Output
from models.onnx.trees import HardTree, tree_outputs
from models.registry import get_family, registered_class
from models.schema import resolve_ref

Converter = Callable[[Any, Graph, str], dict[str, Output]]


def _leaf_classifier(model: Any, g: Graph, x: str, tree: HardTree) -> dict[str, Output]:
    """Probabilities are the reached leaf's values; the label is their argmax."""
    proba = tree_outputs(g, x, tree)
    return outputs.classifier(g, model.classes_, outputs.argmax(g, proba), proba)


def cart_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    return _leaf_classifier(model, g, x, HardTree.from_tree(model.to_tree()))


def tree_regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    tree = HardTree.from_tree(model.to_tree())
    return outputs.regression(g, model, tree_outputs(g, x, tree), tree.n_outputs)


def dgt_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    return _leaf_classifier(model, g, x, HardTree.from_tree(model.tree_))


def dgt_regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    tree = HardTree.from_tree(model.tree_)
    return outputs.regression(g, model, tree_outputs(g, x, tree), tree.n_outputs)


def _tao_probabilities(g: Graph, tree: HardTree, scores: str) -> str:
    """``class_probabilities``: constant leaves store them; linear and softmax leaves a softmax."""
    return scores if tree.leaf_weight is None else outputs.softmax(g, scores)


def tao_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """``predict`` is the argmax of the leaf scores, ``predict_proba`` their class probabilities."""
    tree = HardTree.from_tao(model.tao_tree_)
    scores = tree_outputs(g, x, tree)
    return outputs.classifier(g, model.classes_, outputs.argmax(g, scores), _tao_probabilities(g, tree, scores))


def tao_regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    tree = HardTree.from_tao(model.tao_tree_)
    return outputs.regression(g, model, tree_outputs(g, x, tree), tree.n_outputs)


def tao_forest_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """Constant leaves: each tree votes for its argmax and the probabilities are the vote fractions;
    otherwise the mean of the trees' probabilities. The label is the probabilities' argmax."""
    trees = [HardTree.from_tao(t) for t in model.trees_]
    scores = [tree_outputs(g, x, t) for t in trees]
    if model.leaf == "constant":
        proba = outputs.vote_fractions(g, [outputs.argmax(g, s) for s in scores], len(model.classes_))
    else:
        proba = outputs.mean(g, [_tao_probabilities(g, t, s) for t, s in zip(trees, scores)])
    return outputs.classifier(g, model.classes_, outputs.argmax(g, proba), proba)


def tao_forest_regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    trees = [HardTree.from_tao(t) for t in model.trees_]
    return outputs.regression(g, model, outputs.mean(g, [tree_outputs(g, x, t) for t in trees]), trees[0].n_outputs)


def dgt_forest_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """Each tree votes for the argmax of its leaf values; probabilities are the vote fractions and the
    label the class with most votes (ties to the smaller class index)."""
    votes = [outputs.argmax(g, tree_outputs(g, x, HardTree.from_tree(est.tree_))) for est in model.estimators_]
    proba = outputs.vote_fractions(g, votes, len(model.classes_))
    return outputs.classifier(g, model.classes_, outputs.argmax(g, proba), proba)


def dgt_forest_regressor(model: Any, g: Graph, x: str) -> dict[str, Output]:
    trees = [HardTree.from_tree(est.tree_) for est in model.estimators_]
    return outputs.regression(g, model, outputs.mean(g, [tree_outputs(g, x, t) for t in trees]), trees[0].n_outputs)


def laptao_classifier(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """``predict``: the argmax of the leaf's class scores; ``predict_proba``: the scores clipped at 0
    and renormalised, uniform where no score is positive."""
    scores = tree_outputs(g, x, HardTree.from_tao(model.tao_tree_))
    k = len(model.classes_)
    clipped = g.node("Max", [scores, g.const(np.array(0.0), "zero")], "clipped")
    total = g.node("ReduceSum", [clipped, outputs.axes(g, 1)], "total", keepdims=1)
    positive = g.node("Greater", [total, g.const(np.array(0.0), "zero")], "positive")
    safe = g.node("Where", [positive, total, g.const(np.array(1.0), "one")], "safe_total")
    proba = g.node("Where", [positive, g.node("Div", [clipped, safe], "shares"),
                             g.const(np.full(k, 1.0 / k), "uniform")], "proba")
    return outputs.classifier(g, model.classes_, outputs.argmax(g, scores), proba)


def embedding(model: Any, g: Graph, x: str) -> dict[str, Output]:
    """``transform``: the TAO tree's leaf outputs (the embedding's coordinates)."""
    tree = HardTree.from_tao(model.tao_tree_)
    return {"embedding": Output(tree_outputs(g, x, tree), np.float64, [None, tree.n_outputs])}


def family_and_task(model: Any) -> tuple[str, str, str]:
    """(family key, family label, task) of a fitted estimator, from the registry."""
    try:
        family, cls = registered_class(type(model))
    except TreevizError:
        raise TreevizError(f"{type(model).__name__} is not a treeviz estimator, so it has no ONNX export; "
                           "export a model trained with treeviz.") from None
    for task, ref in family.estimators.items():
        if ref == f"{cls.__module__}:{cls.__name__}":
            return family.key, family.label, task
    raise TreevizError(f"{cls.__name__} is not one of the {family.label} family's estimators; it has no ONNX export.")


def converter(model: Any) -> Converter:
    """The converter of ``model``'s family and task, or a sentence saying why there is none."""
    key, label, task = family_and_task(model)
    ref = get_family(key).onnx.get(task)
    if ref is None:
        raise TreevizError(f"The {label} family's {task} models cannot be exported to ONNX: treeviz has no exact "
                           "graph for them. Export its rules as Python or SQL, or save the model file instead.")
    return resolve_ref(ref)
