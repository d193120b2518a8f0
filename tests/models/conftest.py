"""Fixtures the families' tests share."""

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler


@pytest.fixture(scope="session")
def cancer():
    """Breast cancer, standard-scaled, with the class names as labels (a module may define its own
    ``cancer``, which then wins)."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    names = np.array(["malignant", "benign"], dtype=object)[y]
    return X, names
