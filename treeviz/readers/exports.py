"""A model's (or a Tree's) rules as text, Python or SQL: the public ``treeviz.export_*`` functions.

Each takes a fitted treeviz estimator, a Pipeline or a :class:`~models.ground.tree.Tree` (:func:`tree_of`).
The tree is read in the units the model was fitted in; a Pipeline (a model with its preprocessing, as
``treeviz.load_model`` gives a model downloaded from the app) gives its trees in the data's own units when
its scaling allows, with the training medians for missing values; a bare model trained on scaled features
exports in those units (the app's and the command line's exports decide units and missing values
through :mod:`treeviz.services.views.export`).
"""

from __future__ import annotations

from typing import Any

from models.ground.errors import TreevizError
from models.ground.tree import Tree
from treeviz.readers.codegen import python_source, sql_query
from treeviz.readers.rules import rules


def tree_of(model_or_tree: Any, index: int = 0) -> Tree:
    """The Tree of a fitted estimator (tree ``index`` of an ensemble), or the Tree itself."""
    if isinstance(model_or_tree, Tree):
        return model_or_tree
    to_trees = getattr(model_or_tree, "to_trees", None)
    if not callable(to_trees):
        raise TreevizError(f"A {type(model_or_tree).__name__} is neither a Tree nor a treeviz estimator; pass a "
                           "fitted estimator (e.g. treeviz.TAOClassifier().fit(X, y)) or its Tree.")
    from sklearn.exceptions import NotFittedError  # deferred: scikit-learn is heavy, and only a model needs it

    try:
        trees = to_trees()
    except NotFittedError:
        raise TreevizError(f"This {type(model_or_tree).__name__} is not fitted yet; call fit(X, y) first.") from None
    if not 0 <= index < len(trees):
        raise TreevizError(f"The model has {len(trees)} tree(s); tree {index} does not exist.")
    return trees[index]


def export_text(model_or_tree: Any, *, tree: int = 0, max_terms: int = 4, precision: int = 4) -> str:
    """Every root-to-leaf path as an IF ... THEN ... rule, one per line."""
    return "\n".join(rules(tree_of(model_or_tree, tree), max_terms=max_terms, precision=precision))


def _units(model_or_tree: Any) -> dict[str, Any]:
    """The units and missing-value fill of a model's trees, when it states them (a Pipeline's trees are
    in the data's own units, with the training medians for missing values)."""
    units = getattr(model_or_tree, "tree_units", None)
    if units not in ("input", "model"):
        return {}
    return {"units": units, "fill_values": getattr(model_or_tree, "fill_values", None)}


def export_python(model_or_tree: Any, *, tree: int = 0, output: str = "prediction", name: str | None = None) -> str:
    """A dependency-free Python module computing the tree's prediction (``output="leaf"``: the leaf id)."""
    return python_source(tree_of(model_or_tree, tree), output=output, name=name, **_units(model_or_tree))


def export_sql(model_or_tree: Any, table: str = "data", *, tree: int = 0, output: str = "prediction") -> str:
    """A ``SELECT`` over ``table`` computing the tree's prediction (or leaf) from the feature columns."""
    return sql_query(tree_of(model_or_tree, tree), table, output=output, **_units(model_or_tree))
