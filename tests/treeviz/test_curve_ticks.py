"""The training curves' x axis asks the browser for a bounded number of ticks.

A tick at every whole number (``dtick=1``) is right for a dozen epochs, but a bandit stream records
at rounds 400, 800, ...: one tick per round there made Plotly lay out thousands of ticks, about
30 s of the browser's time for each redraw of the Train page's live chart (the tab froze).
"""

import pytest

from treeviz.plots import training_curves
from treeviz.plots.curves import MAX_UNIT_TICKS


def x_axes(fig):
    layout = fig.to_dict()["layout"]
    return [layout[k] for k in layout if k.startswith("xaxis")]


def ticks_asked(axis, xs) -> float:
    """How many ticks the axis's fixed spacing asks for (0 when Plotly chooses the spacing)."""
    dtick = axis.get("dtick")
    return (max(xs) - min(xs)) / dtick + 1 if dtick else 0


@pytest.mark.parametrize("n_records", [1, 2, 4, 12, 13, 50])
def test_a_bandit_streams_rounds_get_plotlys_own_tick_spacing(n_records):
    """Records every 400 rounds, as the Train page polls them: never one tick per round."""
    history = [{"round": 400 * (i + 1), "avg_loss": 1.0 / (i + 1), "val_score": 0.5, "reward": 0.4}
               for i in range(n_records)]
    xs = [r["round"] for r in history]
    fig = training_curves(history, x="round", panels=[("Loss", ["avg_loss"]), ("Score", ["val_score"]),
                                                      ("Reward", ["reward"])])
    axes = x_axes(fig)
    assert len(axes) == 3
    for axis in axes:
        assert axis["tickformat"] == "d"
        assert ticks_asked(axis, xs) <= MAX_UNIT_TICKS + 1


def test_a_few_epochs_keep_a_tick_at_every_whole_number():
    history = [{"epoch": i, "loss": 1.0 / i} for i in range(1, 6)]
    (axis,) = x_axes(training_curves(history))
    assert axis["dtick"] == 1 and axis["tickformat"] == "d"


def test_a_short_span_far_from_zero_keeps_unit_ticks_and_a_wide_one_does_not():
    near = [{"iteration": 1000 + i, "objective": float(i)} for i in range(MAX_UNIT_TICKS + 1)]
    assert x_axes(training_curves(near))[0]["dtick"] == 1
    wide = [{"iteration": i * 4, "objective": float(i)} for i in range(1, 6)]  # 5 records over 16 units
    assert x_axes(training_curves(wide))[0].get("dtick") is None
