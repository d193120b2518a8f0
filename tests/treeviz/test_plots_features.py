"""Feature-selection figures: trajectory, ranking, pixel mask (8×8 and 28×28), budget trials, comparison."""

import numpy as np
import pytest

from models.ground.errors import TreevizError
from treeviz.plots import (
    budget_trials_figure,
    feature_mask_figure,
    feature_ranking_figure,
    feature_trajectory_figure,
    selection_comparison_figure,
)


def test_trajectory_draws_features_kept_and_the_schedule_on_a_second_axis():
    history = [{"epoch": e, "n_features": n, "lambda0": lam, "loss": 1.0}
               for e, n, lam in [(1, 30, 0.1), (2, 30, 0.5), (3, 24, 0.9), (4, 21, 1.0)]]
    spec = feature_trajectory_figure(history, schedule="lambda0", schedule_label="λ0 / p", n_inputs=30).to_dict()
    kept, ramp = spec["data"]
    assert list(kept["y"]) == [30, 30, 24, 21] and kept["line"]["shape"] == "hv"
    assert list(ramp["y"]) == [0.1, 0.5, 0.9, 1.0] and ramp["yaxis"] == "y2"
    assert "21 of 30 features" in spec["layout"]["title"]["subtitle"]["text"]
    assert "no feature counts" in str(feature_trajectory_figure([{"epoch": 1}]).to_dict()["layout"])


def test_ranking_puts_the_strongest_kept_features_first_and_removed_ones_grey():
    names = ["a", "b", "c", "d"]
    spec = feature_ranking_figure(names, [0.5, 0.0, 2.0, 0.0], [True, False, True, False]).to_dict()
    bar = spec["data"][0]
    assert list(bar["y"]) == ["d", "b", "a", "c"]  # bottom to top: removed, then weakest kept, strongest on top
    assert bar["marker"]["color"][-1] != bar["marker"]["color"][0]
    assert spec["layout"]["meta"] == {"order": [2, 0, 1, 3], "kept": 2}
    many = feature_ranking_figure([f"x{j}" for j in range(100)], np.arange(100.0), [True] * 100, top=10).to_dict()
    assert len(many["data"][0]["y"]) == 10 and many["data"][0]["y"][-1] == "x99"


@pytest.mark.parametrize("shape", [(8, 8), (28, 28)])
def test_the_mask_of_image_data_blanks_removed_pixels(shape):
    rng = np.random.default_rng(0)
    norms = np.where(rng.random(shape[0] * shape[1]) < 0.3, rng.random(shape[0] * shape[1]), 0.0)
    spec = feature_mask_figure(norms, shape).to_dict()
    z = np.array(spec["data"][0]["z"], dtype=float)
    assert z.shape == shape
    np.testing.assert_allclose(np.nan_to_num(z).reshape(-1), norms)
    assert np.all(np.isnan(z.reshape(-1)[norms == 0]))
    assert spec["layout"]["meta"]["kept"] == np.count_nonzero(norms)
    with pytest.raises(TreevizError, match="needs 64 features"):
        feature_mask_figure(norms[:10], (8, 8))


def test_budget_trials_mark_the_budget_and_the_chosen_trial():
    trials = [{"index": 0, "n_features": 3, "val_auc": 0.9, "test_auc": 0.88},
              {"index": 1, "n_features": 12, "val_auc": 0.97, "test_auc": 0.96},
              {"index": 2, "n_features": 6, "val_auc": 0.95, "test_auc": 0.94},
              {"index": 3, "n_features": None, "val_auc": None}]
    spec = budget_trials_figure(trials, budget=7, score="val_auc", score_label="validation AUC",
                                test_score="test_auc", chosen=2).to_dict()
    by_name = {t["name"]: t for t in spec["data"]}
    assert list(by_name["within the budget"]["x"]) == [3, 6] and list(by_name["over the budget"]["x"]) == [12]
    assert list(by_name["chosen"]["x"]) == [6] and list(by_name["chosen"]["y"]) == [0.95]
    assert spec["layout"]["meta"] == {"budget": 7, "chosen": 2, "n_trials": 3}
    assert any(s.get("x0") == 7 for s in spec["layout"]["shapes"])
    assert "No finished trial" in str(budget_trials_figure([], budget=3, score="val_auc",
                                                           score_label="AUC").to_dict()["layout"])


def test_selection_comparison_groups_metrics_by_method():
    rows = [{"method": "Skinny Trees", "n_features": 5, "test_auc": 0.99, "test_accuracy": 0.95},
            {"method": "random forest importance", "n_features": 5, "test_auc": 0.97, "test_accuracy": 0.93}]
    spec = selection_comparison_figure(rows, metrics=["test_auc", "test_accuracy"]).to_dict()
    assert [t["name"] for t in spec["data"]] == ["Skinny Trees (5)", "random forest importance (5)"]
    assert list(spec["data"][1]["y"]) == [0.97, 0.93] and spec["layout"]["barmode"] == "group"
