"""The Train page's result cards say how many features a feature-selecting model kept (issue 52):
"Features kept: k of p", from the run's count, for a family that declares feature selection, and
no such card for one that does not."""

import pytest

from tests.app.conftest import app_on, metric_values, train_on_page
from treeviz.services.store.runs import RunStore


@pytest.mark.slow  # an app session and a short training: seconds on a 2-core machine
def test_the_train_cards_show_the_features_a_skinny_model_kept(home):
    at = app_on("train", "digits")
    record = train_on_page(at, home, "skinny", "classification", preset="quick",
                           values={"n_trees": 4, "depth": 2, "max_epochs": 3})
    model = RunStore(home).load_model(record.run_id)
    k = model.selected_features_.size
    assert k < 64 and record.metrics["n_features"] == k  # at least the constant pixels are gone
    assert metric_values(at)["Features kept"] == f"{k} of 64"


@pytest.mark.slow
def test_a_family_that_does_not_select_features_has_no_such_card(home):
    at = app_on("train", "iris")
    train_on_page(at, home, "cart", "classification")
    cards = metric_values(at)
    assert "Nodes" in cards and "Features kept" not in cards
