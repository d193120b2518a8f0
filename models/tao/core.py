"""TAO's public core: what the families built on TAO (LapTAO, the tree embedding) may use, and
all they may use; the rest of this package is TAO's own (an import contract in pyproject.toml
holds them to this module).

* :class:`TAORegressor`: the tree step of LapTAO and of the tree embedding (a TAO regression tree
  refitted to moving targets, warm-started);
* :class:`TAOTree`: the tree's arrays (node weights, biases, leaves) that a fitted model keeps;
* :class:`FittedTAOTree`: the mixin giving a model that keeps a ``TAOTree`` its ``apply``, its
  :class:`models.ground.tree.Tree` and its model-file arrays;
* :func:`tao_tree_to_tree`, :func:`tree_arrays`, :func:`tree_from_arrays`: a ``TAOTree`` as a
  Tree and as the arrays of a model file, and back;
* :func:`auto_depth`: the depth ``depth=None`` gives a tree for K classes.
"""

from models.tao.estimators import (
    FittedTAOTree,
    TAORegressor,
    auto_depth,
    tao_tree_to_tree,
    tree_arrays,
    tree_from_arrays,
)
from models.tao.state import TAOTree

__all__ = ["FittedTAOTree", "TAORegressor", "TAOTree", "auto_depth", "tao_tree_to_tree", "tree_arrays",
           "tree_from_arrays"]
