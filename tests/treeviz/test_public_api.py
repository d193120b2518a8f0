"""`import treeviz as tv`: the documented names, each the object the internal path holds, working
end to end on real data (train, plot, export, save, reload), and `import treeviz` staying light."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import treeviz as tv
from models.registry import all_estimator_classes

ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_estimator_is_a_public_name():
    classes = {cls.__name__: cls for _, _, cls in all_estimator_classes()}
    assert set(tv.estimator_names()) == set(classes)
    for name, cls in classes.items():
        assert getattr(tv, name) is cls and name in dir(tv)
    assert {"TAOClassifier", "SkinnyTreesClassifier", "LatentTreeClassifier", "DGTClassifier"} <= set(classes)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchTree'"):
        tv.NoSuchTree  # noqa: B018


def test_train_plot_export_save_and_reload_through_the_public_names(tmp_path):
    data = tv.prepare(tv.load_dataset("iris"), tv.PrepConfig(seed=0))
    names = list(data.dataset.feature_names)
    model = tv.TAOClassifier(depth=2).fit(data.X_train, data.labels("train"), feature_names=names)
    fig = tv.plot_tree(model, data.X_test, data.labels("test"), max_levels=3)
    nodes = fig.data[fig.layout.meta["node_trace"]]
    assert len(nodes.x) == model.to_tree().n_nodes
    text = tv.export_text(model)
    assert text.count("IF ") == model.to_tree().n_leaves and "petal length (cm)" in text
    source = tv.export_python(model)
    scope: dict = {}
    exec(compile(source, "tree.py", "exec"), scope)  # the exported module, as a user would import it
    predicted = [scope["predict_by_position"](list(row)) for row in data.X_test]
    assert predicted == list(model.predict(data.X_test))
    sql = tv.export_sql(model, "rows")
    assert 'FROM "rows"' in sql and "CASE" in sql
    path = tv.save_model(model, tmp_path / "tao.zip")
    again = tv.load_model(path)
    assert np.array_equal(again.predict(data.X_test), model.predict(data.X_test))
    assert isinstance(model.to_tree(), tv.Tree)


def test_a_model_that_is_not_fitted_or_not_a_tree_gets_a_sentence():
    with pytest.raises(ValueError, match="not fitted yet"):
        tv.export_text(tv.TAOClassifier())
    with pytest.raises(ValueError, match="neither a Tree nor a treeviz estimator"):
        tv.plot_tree(object())


def test_import_treeviz_loads_neither_torch_nor_plotly_nor_streamlit():
    code = "import sys, json, treeviz; print(json.dumps([m in sys.modules for m in ('torch', 'plotly', 'streamlit')]))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [False, False, False]
