"""Fixtures the run-store tests share: the breast-cancer data prepared once, and an empty store."""

import pytest

from tests.treeviz.test_runs import breast_cancer
from treeviz.services.data.preprocess import PrepConfig, prepare
from treeviz.services.store.runs import RunStore


@pytest.fixture(scope="module")
def prepared():
    return prepare(breast_cancer(), PrepConfig(scaling="standard", seed=3))


@pytest.fixture()
def store(tmp_path):
    return RunStore(tmp_path / "home")
