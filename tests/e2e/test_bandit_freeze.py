"""Browser check that a finished DGT-Bandit run leaves the Train page answering, its chart drawn
with Plotly's own tick spacing.

The Train page redraws its live training chart at every poll and once more after the run. A
DGT-Bandit run records every few hundred rounds (x = 400, 800, ...), and the chart used to ask for a
tick at every whole number whenever it had at most 12 records: Plotly then laid out thousands of
ticks, about 30 s of the browser's main thread per draw, and the tab stopped answering for minutes
after the run (issue 22, item 9). This run (the "quick" preset, 5 000 rounds, so the job is short)
records every 500 rounds, 10 records, as the first polls of a default run see them, so that both
the live chart and the final one have few records far apart: the old chart would ask for about
5 000 ticks.

What it checks is behaviour, not time: after the run the page still answers a click (the "All
metrics" expander opens), and the chart has fewer than 50 ticks on its round axis. The waits are
for those states, with limits far above what they need (``tests/e2e/conftest.py``).
"""

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import TRAINING_MS
from tests.e2e.test_browser import choose, settle
from tests.e2e.test_train_runs import open_train_page

pytestmark = [pytest.mark.e2e, pytest.mark.slow]  # a browser and a server: the full tier

#: The tick labels of every x axis of a Plotly figure (``g.xtick``, ``g.x2tick``, ``g.x3tick``, ...).
X_TICKS = 'g[class^="x"][class$="tick"]'


def untick(page, label: str, tries: int = 3) -> None:
    """Untick the checkbox ``label``, clicking its label again if a click landed while the expander
    opened or a rerun replaced the box (on a loaded CI machine one click was lost this way)."""
    box = page.get_by_role("checkbox", name=label)
    box.wait_for(state="attached")
    for _ in range(tries):
        if not box.is_checked():
            break
        page.get_by_text(label).click()  # the label: the box itself is covered
        settle(page)
    expect(box).not_to_be_checked()


def test_the_train_page_answers_after_a_bandit_runs_finish(app_url, page):
    open_train_page(page, app_url, "Iris", "iris")
    choose(page, "Model family", "DGT-Bandit")
    choose(page, "Preset", "quick")  # 5 000 rounds: a short job
    page.get_by_text("Advanced parameters").click()
    settle(page)
    untick(page, "eval every: about 50 records")
    every = page.get_by_role("spinbutton", name="eval every")
    every.fill("500")
    every.press("Enter")
    settle(page)
    expect(every).to_have_value("500")
    page.get_by_role("button", name="Train", exact=True).click()
    page.get_by_text(re.compile(r"Finished: saved as ")).wait_for(timeout=TRAINING_MS)
    # the page answers a click: the expander opens
    expander = page.get_by_test_id("stExpander").filter(has_text=re.compile(r"All metrics \("))
    expander.get_by_text(re.compile(r"All metrics \(")).click()
    expect(expander.locator("details")).to_have_attribute("open", "")
    # the chart the page keeps showing has Plotly's own tick spacing on its round axis: its panels
    # share that axis, and only the lowest one (x3 with three panels) draws tick labels
    chart = page.get_by_test_id("stPlotlyChart").first
    ticks = chart.locator(X_TICKS)
    ticks.first.wait_for()  # drawn
    assert 0 < ticks.count() < 50
