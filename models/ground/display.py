"""How a notebook shows a fitted model or a Tree: one hook that the app's figures fill.

A cell that ends in a fitted estimator or a :class:`~models.ground.tree.Tree` shows the Tree
explorer's diagram. The figures live in ``treeviz.plots``, above ``models`` (which never imports
``treeviz``), so the ground keeps a renderer that ``import treeviz`` registers
(:func:`set_html_renderer`), and ``_repr_html_`` of the Tree and of every estimator hands it a
:class:`Card`. While no renderer is registered (only ``models`` imported), :func:`card_html` gives
None and the notebook shows the plain repr (scikit-learn's, for an estimator).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Card", "card_html", "html_renderer", "set_html_renderer"]


@dataclass(frozen=True)
class Card:
    """What a notebook shows of a model: a header and the diagram of its first tree.

    Attributes
    ----------
    title : str
        The estimator's class name ("TAOClassifier"), or "Tree".
    trees : sequence of Tree
        Every tree of the model (one for a single tree); the first is drawn.
    family_label : str
        The family's display name, for the diagram's title ("" when not known).
    metric : tuple of (str, float), optional
        The headline metric when known, as (label, value): ("validation accuracy", 0.96).
    """

    title: str
    trees: Sequence[Any]
    family_label: str = ""
    metric: tuple[str, float] | None = None


#: The registered renderer: a function Card -> HTML, or a "module:function" reference to one,
#: imported on first use (so registering it imports nothing).
_renderer: Callable[[Card], str | None] | str | None = None


def set_html_renderer(renderer: Callable[[Card], str | None] | str | None) -> None:
    """Register the function that turns a :class:`Card` into HTML (None unregisters it).

    ``renderer`` may be a ``"module:function"`` reference, imported the first time a notebook
    shows something; that keeps registering free of the renderer's imports (plotly).
    """
    global _renderer
    if isinstance(renderer, str) and ":" not in renderer:
        raise ValueError(f"{renderer!r} is not a 'module:function' reference.")
    _renderer = renderer


def html_renderer() -> Callable[[Card], str | None] | None:
    """The registered renderer (a reference imported now), or None."""
    renderer = _renderer
    if isinstance(renderer, str):
        module, _, name = renderer.partition(":")
        renderer = getattr(importlib.import_module(module), name)
    return renderer


def card_html(card: Card) -> str | None:
    """The card as HTML from the registered renderer; None when none is registered."""
    renderer = html_renderer()
    return None if renderer is None else renderer(card)
