"""A diverged fit says so in the app: the Train page's finished job and the sidebar of every page
showing the run carry its warning; a normal fit shows none."""

import pytest

from tests.app.conftest import new_app, open_page, texts, wait_for_job
from treeviz.services.experiments.training import WARNING
from treeviz.services.store.runs import RunStore


def train_dgt_on_diabetes(learning_rate: float):
    at = new_app().run()
    at.selectbox(key="data.sample").set_value("diabetes").run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("dgt").run()
    at.selectbox(key="train.preset.dgt").set_value("quick").run()
    form = "train.dgt.quick"
    at.number_input(key=f"{form}.depth").set_value(3)
    at.number_input(key=f"{form}.max_epochs").set_value(5)
    at.number_input(key=f"{form}.min_steps").set_value(0)
    at.number_input(key=f"{form}.learning_rate").set_value(learning_rate).run()
    at.button(key="train.start").click().run()
    return wait_for_job(at)


def warnings_shown(at) -> list[str]:
    return [w for w in texts(at.warning) if w.startswith(WARNING)]


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_diverged_dgt_fit_is_shown_with_its_warning_on_the_train_page_and_the_run_views(home):
    at = train_dgt_on_diabetes(10.0)
    (record,) = RunStore(home).list()
    assert record.params["learning_rate"] == 10.0
    shown = warnings_shown(at)
    assert shown and "no better than always predicting the mean" in shown[0], texts(at.warning)
    for page in ("explorer", "runs"):
        open_page(at, page)
        assert any("no better than" in w for w in warnings_shown(at)), page
    assert "[warning]" in at.sidebar.selectbox(key="treeviz.run_id").format_func(record.run_id)


@pytest.mark.slow  # seconds on a 2-core machine: the full tier runs it, the fast one leaves it out
def test_a_normal_dgt_fit_shows_no_warning(home):
    at = train_dgt_on_diabetes(1e-2)
    assert at.success and not warnings_shown(at), texts(at.warning)
    (record,) = RunStore(home).list()
    assert not record.notes
