"""The run report: one HTML file with every section a run has, in the data's own units, escaped."""

import re

import pytest

from treeviz.readers.rules import rules
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.sweep import run_sweep
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.ui.report import run_report


@pytest.fixture
def store(tmp_path):
    return RunStore(tmp_path)


def figures(html: str) -> int:
    return len(re.findall(r'<div class="figure">', html))


def test_a_cart_report_has_every_section_and_its_numbers(store):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 2}, prepared, store=store)
    html = run_report(store, record.run_id)
    assert html.startswith("<!doctype html>") and "<script src=" not in html  # plotly.js inlined once
    assert html.count("Plotly.newPlot") == figures(html) == int(re.search(r'data-figures="(\d+)"', html)[1])
    for heading in ("Data", "Preparation", "Hyperparameters", "Metrics", "Size and cost", "Tree", "Node weights",
                    "Class routing", "Split at the root", "Decision regions", "Features", "Rules"):
        assert f">{heading}</h" in html, heading
    # the explorer's split histogram and decision regions, drawn (their captions come with the figures)
    left, right = map(int, re.search(r"How the root splits the train rows: (\d+) go left, (\d+) right", html).groups())
    assert left + right == prepared.X_train.shape[0]
    assert "predictions over two features, every other held at the training rows&#x27; median" in html
    assert record.dataset_fingerprint in html and record.prepared_fingerprint in html
    assert f"{record.metrics['test_accuracy']:.4g}" in html
    model = store.load_model(record.run_id)
    view_rules = rules(model.to_tree().in_input_units(*prepared.affine_scaling()))
    assert all(r.replace(">", "&gt;").replace("<", "&lt;") in html for r in view_rules)  # the data's own units
    assert "in the data's own units" in html


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_point_of_a_lambda_path_shows_the_path_and_image_weights(store):
    prepared = prepare(load_dataset("digits"), PrepConfig(seed=0))
    results = run_sweep("tao", "classification", {"depth": 2, "max_iter": 2}, prepared, [0.01, 1.0], store=store)
    html = run_report(store, results[1].record.run_id)
    assert "λ path: " in html and "this run is at 1." in html
    assert "Weights as images" in html  # digits are 8 × 8 images


def test_names_are_escaped(store):
    prepared = prepare(load_dataset("iris"), PrepConfig(seed=0))
    record = train_run("cart", "classification", {"max_depth": 1}, prepared, store=store, name="<b>mine</b> & co")
    html = run_report(store, record.run_id)
    assert "<b>mine</b>" not in html and "&lt;b&gt;mine&lt;/b&gt; &amp; co" in html
