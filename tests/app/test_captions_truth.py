"""Captions say what was measured: the Semi-supervised page's caption under the error curve is
computed from the curve's own numbers (which method is lower at each labelled fraction), and the
thesis's finding is attributed to the thesis."""

from __future__ import annotations

import time

import pytest

from tests.app.conftest import WAIT_S, assert_clean, new_app, open_page
from treeviz.services.data import PrepConfig, load_dataset, prepare
from treeviz.services.experiments.training import train_run
from treeviz.services.store.runs import RunStore
from treeviz.ui import state

TINY = {"depth": 2, "n_mu": 3, "tao_iter": 3, "labelled_fraction": 0.1}
SEMI, SUP = "LapTAO", "supervised TAO (labelled points only)"


def rows(errors: dict[tuple[str, float], float]) -> list[dict]:
    """Label-curve rows (two subsets per method and fraction, both at the given mean)."""
    return [{"method": m, "fraction": f, "seed": s, "n_labelled": 3, "error": e}
            for (m, f), e in errors.items() for s in (0, 1)]


def caption_under_the_curve(home, curve: list[dict]) -> str:
    prepared = prepare(load_dataset("moons"), PrepConfig(seed=0))
    record = train_run("laptao", "classification", TINY, prepared, store=RunStore(home))
    state.view_results()[f"semi:{record.run_id}"] = curve  # as if the page's background job had finished
    at = new_app().run()
    at.sidebar.selectbox(key="treeviz.run_id").set_value(record.run_id).run()
    open_page(at, "semi_supervised")
    assert_clean(at)
    return next(c.value for c in at.caption if "labels the test error" in c.value)


@pytest.mark.slow  # trains a tiny LapTAO run (about a second)
def test_the_caption_says_supervised_tao_is_lower_where_it_is(home):
    text = caption_under_the_curve(home, rows({(SEMI, 0.01): 0.400, (SUP, 0.01): 0.396,
                                               (SEMI, 0.2): 0.100, (SUP, 0.2): 0.150}))
    assert (f"At 1 % labels the test error is 0.400 for {SEMI} and 0.396 for {SUP}: {SUP} is lower here."
            in text)
    assert f"At 20 % labels the test error is 0.100 for {SEMI} and 0.150 for {SUP}: {SEMI} is lower here." in text
    assert "The thesis reports" in text and f"on this run {SEMI} is lower at 1 of 2 labelled fractions" in text
    assert "The thesis's finding:" not in text


@pytest.mark.slow  # trains a tiny LapTAO run (about a second)
def test_the_caption_says_when_they_tie(home):
    text = caption_under_the_curve(home, rows({(SEMI, 0.05): 0.2501, (SUP, 0.05): 0.2499}))
    assert "At 5 % labels the test error is 0.250 for" in text and "they tie" in text
    assert f"{SEMI} is lower at 0 of 1 labelled fraction." in text


@pytest.mark.slow  # runs a short bandit comparison (a few seconds)
def test_the_bandit_caption_reports_this_runs_reward_and_accuracy(home):
    form = "bandit.dgt_bandit.classification.defaults.{}"
    at = new_app().run()
    open_page(at, "bandit")
    at.checkbox(key=form.format("n_rounds__none")).uncheck().run()  # the default is 10 passes
    at.number_input(key=form.format("n_rounds")).set_value(300).run()
    at.number_input(key="bandit.seeds").set_value(1).run()
    at.checkbox(key="bandit.baseline").uncheck().run()
    at.button(key="bandit.start").click().run()
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and not any("On this run" in c.value for c in at.caption):
        time.sleep(0.3)
        at.run()
    assert_clean(at)
    text = next(c.value for c in at.caption if "On this run" in c.value)
    table = at.dataframe[-1].value
    reward, accuracy = table["average reward"].iloc[0], table["held-out accuracy"].iloc[0]
    assert f"average reward is {reward:.3f} and its held-out accuracy {accuracy:.3f}" in text
    assert ("below it." if reward < accuracy else "not below it here.") in text
