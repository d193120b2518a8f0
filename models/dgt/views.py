"""What the bandit view compares DGT-Bandit with, as the DGT family declares it
(:class:`models.schema.Comparison`): the online linear model under the same protocol, and the
height the supervised reference tree takes when the bandit's height is automatic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from models.dgt.bandit import LinearBanditClassifier, LinearBanditRegressor, auto_depth


def linear_baseline(task: str, params: Mapping[str, Any], random_state: int, device: str | None) -> Any:
    """The online linear model under the bandit's protocol, estimator, optimiser and budget: the
    bandit's ``params`` that the linear model also takes, its own seed and device; unfitted."""
    cls = LinearBanditClassifier if task == "classification" else LinearBanditRegressor
    names = set(cls().get_params())
    values = {k: v for k, v in params.items() if k in names and k not in ("random_state", "device")}
    if device is not None:
        values["device"] = device
    return cls(**values, random_state=int(random_state))


def supervised_values(values: Mapping[str, Any], y: Any) -> dict[str, Any]:
    """The supervised tree's shared values: an automatic height (``depth`` None) becomes the
    height the bandit tree will have for the classes of ``y``."""
    out = dict(values)
    if "depth" in out and out["depth"] is None:
        out["depth"] = auto_depth(np.unique(np.asarray(y).astype(str)).size)
    return out
