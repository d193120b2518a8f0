"""TAO in the app, what only TAO shows: a decision node's sparse weights as signed bars and, on image
data, as an image in the model's scaled units and, ticked, in the pixels' own units; the λ path of its
ℓ1 penalty, which thins the tree.

What every family does in the app (trained from the Train page, its pages, its run zip, the λ path
page, a forest's tree picker and summary) is checked on TAO and the TAO forest by
tests/app/test_every_family.py; the page helpers come from tests/app/conftest.py."""

import numpy as np
import pytest

from models.registry import get_family
from tests.app.conftest import app_on, assert_clean, chart_specs, metric_values, run_page, stored_run
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_tao_trees_weights_show_as_bars_and_as_an_image_in_pixel_units(home):
    quick = {**get_family("tao").presets["quick"], "max_iter": 3}
    record = stored_run(home, "tao", "classification", "digits", quick)
    store = RunStore(home)
    # the objective of every iteration is recorded, so the training curves draw it
    assert all("objective" in r for r in store.history(record.run_id))
    at = run_page(record, "explorer")
    tree = store.load_model(record.run_id).to_tree()
    assert metric_values(at)["Nonzero weights"] == str(tree.n_nonzero_weights())
    # node 0 is a decision node: its weights as signed bars and as an 8×8 image
    bars = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("kind") == "top_weights"
                or any(t.get("type") == "bar" and t.get("orientation") == "h" for t in s["data"]))
    assert bars
    def weight_image():
        image = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("image_shape") == [8, 8])
        return image, np.array(image["data"][0]["z"], dtype=float)

    # an image table starts in the model's scaled units: the weights as learned
    image, z = weight_image()
    np.testing.assert_allclose(z.reshape(-1), tree.weight[0])
    # ticked, the pixels' own units: w / σ
    at.checkbox(key="explorer.units.image").check().run()
    assert_clean(at)
    image, z = weight_image()
    _mean, scale = store.load_prepared(record.run_id).affine_scaling()
    np.testing.assert_allclose(z.reshape(-1), tree.weight[0] / scale)
    assert np.count_nonzero(z) == np.count_nonzero(tree.weight[0])  # zero weights stay exactly zero (white)
    assert image["data"][0]["zmid"] == 0.0
    assert image["data"][0]["zmin"] == -image["data"][0]["zmax"]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_larger_l1_penalty_gives_fewer_weights_and_the_path_keeps_its_name(home):
    """The λ path page names a sweep from its stored label, not by parsing a run's display name."""
    prepared = prepare(load_dataset("breast_cancer"), PrepConfig(seed=0))
    runs = [r.record for r in run_sweep("tao", "classification", {"depth": 2, "max_iter": 2}, prepared,
                                        [0.01, 1.0, 100.0], store=RunStore(home))]
    assert not any(r.sweep["warm_start"] for r in runs)  # every λ from the same initial tree
    RunStore(home).rename(runs[0].run_id, "my favourite point")
    at = app_on("lambda_path", "breast_cancer")
    chooser = at.selectbox(key="pruning.sweep_id")
    name = chooser.format_func(chooser.value)
    assert name.startswith("TAO sparse oblique tree on breast_cancer · 3 points"), name
    figure = next(s for s in chart_specs(at) if s["layout"].get("meta", {}).get("param") == "l1_penalty")
    assert figure["layout"]["meta"]["values"] == [0.01, 1.0, 100.0]
    nnz = next(t for t in figure["data"] if t["name"] == "nonzero weights")["y"]
    assert nnz[0] > nnz[-1], "a larger λ gives fewer nonzero weights"
    at.select_slider(key=f"pruning.lambda.{runs[0].sweep['id']}").set_value(100.0).run()
    assert_clean(at)
    cards = metric_values(at)
    tree = RunStore(home).load_model(runs[-1].run_id).to_tree()
    assert int(cards["Nonzero weights"]) == tree.n_nonzero_weights()
    assert int(cards["Decision nodes"]) == tree.decision_nodes.size
