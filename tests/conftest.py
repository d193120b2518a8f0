"""Test-wide setup.

The test-only stump family (``tests/families/stump``) is registered the way a family living outside
this repository would be, through ``TREEVIZ_FAMILIES``. So the contract test
(``tests/test_contract.py``) and the app tests cover a family that the frame has never heard of:
if a new family needed an edit in ``treeviz/``, ``app_pages/`` or ``models/registry.py``, the
stump's tests would fail.
"""

import os

from models import registry

STUMP_MODULE = "tests.families.stump.family"
_extra = [m for m in os.environ.get(registry.PLUGINS_ENV, "").split(",") if m.strip()]
if STUMP_MODULE not in _extra:
    os.environ[registry.PLUGINS_ENV] = ",".join([*_extra, STUMP_MODULE])
registry.reload()
