"""Every model family, found where it declares itself: ``models/<family>/family.py``.

Nothing here names a family. :func:`families` imports the ``family`` module of every package
under ``models/`` that has one, plus the modules listed in the environment variable
``TREEVIZ_FAMILIES`` (comma-separated module names, for families that live outside this
repository), and collects their ``FAMILIES`` tuples. Those modules are light (they import only
:mod:`models.schema`), and estimator classes are named as ``"module:Class"`` strings imported
on first use, so listing families (app start-up) does not import torch.

An estimator's family is found from its class: :func:`family_of_class` looks the class up among
the families' estimators. Nothing else stores a family key for an estimator.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
from collections.abc import Iterable

import models
from models.ground.errors import TreevizError
from models.schema import Family

#: Environment variable naming extra family modules (``package.module`` with a ``FAMILIES`` tuple).
PLUGINS_ENV = "TREEVIZ_FAMILIES"

_cache: dict[str, Family] | None = None


def _family_modules() -> list[str]:
    found = []
    for info in sorted(pkgutil.iter_modules(models.__path__), key=lambda i: i.name):
        if info.ispkg and importlib.util.find_spec(f"models.{info.name}.family") is not None:
            found.append(f"models.{info.name}.family")
    extra = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    return found + [m for m in extra if m not in found]


def _discover() -> dict[str, Family]:
    out: dict[str, Family] = {}
    classes: dict[str, str] = {}
    for name in _family_modules():
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise TreevizError(f"The model family module {name} cannot be imported ({err}).") from err
        declared = getattr(module, "FAMILIES", None)
        if not isinstance(declared, tuple) or not all(isinstance(f, Family) for f in declared):
            raise TreevizError(f"The model family module {name} must define FAMILIES, a tuple of Family.")
        for family in declared:
            if family.key in out:
                raise TreevizError(f"Two model families use the key {family.key!r}.")
            for ref in family.estimators.values():
                if ref in classes:
                    raise TreevizError(f"{ref} belongs to two families ({classes[ref]}, {family.key}).")
                classes[ref] = family.key
            out[family.key] = family
    return dict(sorted(out.items(), key=lambda kv: (kv[1].order, kv[0])))


def families() -> dict[str, Family]:
    """Every registered family by key, in display order (discovered once per process)."""
    global _cache
    if _cache is None:
        _cache = _discover()
    return _cache


def reload() -> dict[str, Family]:
    """Discover the families again (after ``TREEVIZ_FAMILIES`` changed)."""
    global _cache
    _cache = None
    return families()


def get_family(key: str) -> Family:
    try:
        return families()[key]
    except KeyError:
        known = ", ".join(families())
        raise TreevizError(f"There is no model family {key!r}; known families: {known}.") from None


def families_for_task(task: str) -> list[Family]:
    return [f for f in families().values() if task in f.estimators]


def families_offering(view: str, task: str | None = None) -> list[Family]:
    """Families whose runs have something to show in ``view`` (for ``task`` when given)."""
    return [f for f in families().values() if f.offers(view) and (task is None or task in f.estimators)]


def registered_class(cls: type) -> tuple[Family, type]:
    """The family of an estimator class and the registered class it is or derives from.

    The class's method resolution order is walked, so a user's subclass of a treeviz estimator
    belongs to its parent's family (and validates, fits, saves and reloads as that estimator)."""
    refs = {ref: family for family in families().values() for ref in family.estimators.values()}
    for base in getattr(cls, "__mro__", (cls,)):
        family = refs.get(f"{base.__module__}:{base.__name__}")
        if family is not None:
            return family, base
    raise TreevizError(f"{getattr(cls, '__name__', cls)} is not a registered treeviz estimator, nor derived from one.")


def family_of_class(cls: type) -> Family:
    """The family an estimator class belongs to (the only source of its family key)."""
    return registered_class(cls)[0]


def all_estimator_classes() -> Iterable[tuple[Family, str, type]]:
    """(family, task, class) for every registered estimator (imports them)."""
    for family in families().values():
        for task in family.estimators:
            yield family, task, family.estimator_class(task)
