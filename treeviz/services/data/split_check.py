"""What a split leaves each part: class counts per split and the warnings a researcher should read
before training (a class with one row, a class missing from a split, a split too small to score).

Training stays allowed; these are sentences to show, not refusals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from treeviz.services.data.preprocess import PreparedData

#: Split names as the pages show them, with the index attribute of :class:`PreparedData`.
SPLITS = (("train", "train_idx"), ("validation", "val_idx"), ("test", "test_idx"))
#: A split with fewer rows than this gives scores too noisy to compare models by.
SMALL_SPLIT = 10


def class_counts_by_split(prepared: PreparedData) -> list[dict[str, Any]]:
    """One row per class: ``{"class", "train", "validation", "test", "total"}`` row counts; an empty
    list when the data set has no classes (regression, clustering without reference classes)."""
    ds = prepared.dataset
    if ds.class_names is None or ds.y is None:
        return []
    k = ds.n_classes
    counts = {name: np.bincount(ds.y[getattr(prepared, attr)], minlength=k) for name, attr in SPLITS}
    return [{"class": cls, **{name: int(c[i]) for name, c in counts.items()},
             "total": int(sum(c[i] for c in counts.values()))} for i, cls in enumerate(ds.class_names)]


def _names(classes: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{c}'" for c in classes[:limit])
    return shown + (f" and {len(classes) - limit} more" if len(classes) > limit else "")


def split_warnings(prepared: PreparedData) -> list[str]:
    """Sentences about the split that make scores meaningless or noisy: a split (train, validation,
    test) of fewer than :data:`SMALL_SPLIT` rows, a class with a single row, a class absent from
    the training split or from a non-empty validation or test split. Empty when all is well; an
    empty split the user chose (fraction 0) is not warned about."""
    out: list[str] = []
    sizes = {name: int(getattr(prepared, attr).size) for name, attr in SPLITS}
    for name, size in sizes.items():
        if 0 < size < SMALL_SPLIT:
            out.append(f"The {name} split has only {size} row{'s' if size != 1 else ''}: its scores "
                       f"move by {100 / size:.0f} points per row and say little.")
    rows = class_counts_by_split(prepared)
    if not rows:
        return out
    single = [r["class"] for r in rows if r["total"] == 1]
    if single:
        out.append(f"{len(single)} class(es) have a single row ({_names(single)}): such a class appears "
                   "in one split only, so it is either never learned or never scored.")
    for name, size in sizes.items():
        missing = [r["class"] for r in rows if r[name] == 0 and r["total"] > 0]
        if size == 0 or not missing:
            continue
        if name == "train":
            out.append(f"{len(missing)} class(es) have no training row ({_names(missing)}): no model "
                       "can predict them.")
        else:
            out.append(f"{len(missing)} of {len(rows)} classes are absent from the {name} split "
                       f"({_names(missing)}): its accuracy says nothing about them.")
    return out
