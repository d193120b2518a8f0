"""Test-wide setup.

The test-only stump family (``tests/families/stump``) is registered the way a family living outside
this repository would be, through ``TREEVIZ_FAMILIES``. So the contract test
(``tests/test_contract.py``) and the app tests cover a family that the frame has never heard of:
if a new family needed an edit in ``treeviz/``, ``app_pages/`` or ``models/registry.py``, the
stump's tests would fail.
"""

import os

import pytest
import streamlit as st

from models import registry
from treeviz.services.jobs import JobManager

STUMP_MODULE = "tests.families.stump.family"
_extra = [m for m in os.environ.get(registry.PLUGINS_ENV, "").split(",") if m.strip()]
if STUMP_MODULE not in _extra:
    os.environ[registry.PLUGINS_ENV] = ",".join([*_extra, STUMP_MODULE])
registry.reload()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A private run store (``TREEVIZ_HOME``) for one test; Streamlit's caches cleared before and
    after, so nothing leaks between tests."""
    root = tmp_path / "treeviz-home"
    monkeypatch.setenv("TREEVIZ_HOME", str(root))
    st.cache_resource.clear()
    st.cache_data.clear()
    yield root
    JobManager.shutdown_all()  # the app's job workers and their child processes end with the test
    st.cache_resource.clear()
