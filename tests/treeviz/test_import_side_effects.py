"""Importing treeviz creates nothing: no job manager, worker process, run store, thread or child
process exists until a function asks for one (the app's job managers are made on first use)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: In a fresh interpreter: import every module of treeviz (``__main__`` would run the command
#: line), then list what exists that an import should not have made.
CODE = """
import gc, importlib, json, multiprocessing, pkgutil, threading
import treeviz
names = sorted(m.name for m in pkgutil.walk_packages(treeviz.__path__, "treeviz.")
               if not m.name.endswith(".__main__"))
for name in names:
    importlib.import_module(name)
from treeviz.services.jobs.manager import JobManager
from treeviz.services.jobs.worker_process import WorkerProcess
from treeviz.services.store.runs import RunStore
kinds = (JobManager, WorkerProcess, RunStore, threading.Thread)
made = sorted(type(o).__name__ for o in gc.get_objects() if isinstance(o, kinds))
print(json.dumps({"modules": len(names), "objects": made,
                  "threads": [t.name for t in threading.enumerate() if t is not threading.main_thread()],
                  "children": [p.name for p in multiprocessing.active_children()]}))
"""


@pytest.mark.slow  # seconds: a fresh interpreter imports torch and every module
def test_importing_every_treeviz_module_creates_no_manager_thread_or_process():
    done = subprocess.run([sys.executable, "-c", CODE], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["modules"] > 50, got  # the walk found the package's modules
    # the main thread is a threading.Thread too; nothing else may exist
    assert got["objects"] == ["_MainThread"], got
    assert got["threads"] == [] and got["children"] == [], got
