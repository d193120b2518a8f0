"""The selected-pixels picture tells removed pixels from kept ones of low weight (issue 52): removed
pixels are grey cells crossed out and named "removed" in the legend; kept pixels are on a blue scale
that starts well away from white and from the removed grey."""

import numpy as np
from plotly.colors import hex_to_rgb

from treeviz.plots import feature_mask_figure
from treeviz.plots.features import REMOVED_FILL


def _far(a: str, b: str) -> float:
    return float(np.abs(np.subtract(hex_to_rgb(a), hex_to_rgb(b))).sum())


def test_removed_pixels_are_marked_and_named_and_low_weight_kept_pixels_are_not_white():
    norms = np.linspace(0.5, 3.0, 16)
    norms[[0, 3, 12]] = 0.0  # removed
    norms[5] = 1e-4  # kept, with a tiny weight
    spec = feature_mask_figure(norms, (4, 4)).to_dict()
    kept, fill, marks = spec["data"]
    z = np.array(kept["z"], dtype=float)
    assert np.isnan(z.reshape(-1)[[0, 3, 12]]).all() and z.reshape(-1)[5] == 1e-4
    # removed cells: their own grey layer and a cross each, under the legend entry "removed"
    grey = np.array(fill["z"], dtype=float).reshape(-1)
    assert set(np.flatnonzero(grey == 1.0)) == {0, 3, 12} and np.isnan(np.delete(grey, [0, 3, 12])).all()
    assert {c[1] for c in fill["colorscale"]} == {REMOVED_FILL} and fill["showscale"] is False
    assert marks["name"] == "removed" and marks["showlegend"] is True
    assert sorted(zip(marks["y"], marks["x"])) == [(0, 0), (0, 3), (3, 0)]
    assert spec["layout"]["meta"]["removed"] == [0, 3, 12] and spec["layout"]["meta"]["kept"] == 13
    # the kept scale's lowest colour (that of the tiny weight) is neither white nor the removed grey
    low = kept["colorscale"][0][1]
    assert kept["zmin"] == 0.0 and _far(low, "#FFFFFF") > 60 and _far(low, REMOVED_FILL) > 60
    assert "removed" in spec["layout"]["title"]["subtitle"]["text"]
    assert "white" not in spec["layout"]["title"]["subtitle"]["text"]


def test_nothing_removed_draws_no_cross_and_everything_removed_draws_no_kept_colour():
    spec = feature_mask_figure(np.ones(9), (3, 3)).to_dict()
    assert len(spec["data"][2]["x"]) == 0 and spec["layout"]["meta"]["removed"] == []
    spec = feature_mask_figure(np.zeros(9), (3, 3)).to_dict()
    assert np.isnan(np.array(spec["data"][0]["z"], dtype=float)).all() and len(spec["data"][2]["x"]) == 9
