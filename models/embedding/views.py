"""What the Embeddings page compares a tree embedding with, as the family declares it
(:class:`models.schema.Comparison`): the thesis's direct CART fit, a regression tree fitted to the
free embedding Z0."""

from __future__ import annotations

from typing import Any

from models.embedding.tree_embedding import direct_fit


def direct_cart_fit(X: Any, Z0: Any, random_state: int | None = 0) -> Any:
    """scikit-learn's multi-output CART regression tree fitted to the free embedding ``Z0``, its
    depth chosen on a held-out part of the points (as the thesis does); its ``predict`` maps points."""
    return direct_fit(X, Z0, kind="cart", random_state=random_state)
