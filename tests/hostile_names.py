"""A corpus of hostile names, and a run store whose every user-controlled name comes from it.

Every string a user controls (the uploaded file's name, so the data set's; column, feature, class
and target names; run names; notes) is shown as text everywhere: on every page, in every figure,
export and the report. The names below would become an element (an ``img``, an ``a``, a styled
``span``) or a request to another origin if any of those read them as Markdown, as Plotly's HTML
subset or as HTML. Every URL in them points at :data:`HOST`, a host that cannot resolve (the
``.invalid`` top-level domain is reserved), so a test can find them in attributes and requests.

The tests that use the corpus: ``tests/test_contract_names.py`` (every page in ``AppTest`` and
every figure builder) and ``tests/e2e/test_hostile_names.py`` (every page, an exported HTML figure
and the report in a real browser, every request intercepted).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

HOST = "evil.invalid"
URL = f"http://{HOST}"

#: Markup that would fetch, link or style if it were read as Markdown, HTML or Plotly's subset. The
#: text inside each tag starts with "tvz-": an element whose own text is exactly such a marker was
#: made from a name's markup (escaped, the marker sits inside a longer text).
MARKUP: tuple[str, ...] = (
    f"![tvz-md-img]({URL}/md-img.png)",
    f"[tvz-md-link]({URL}/md-link)",
    "[tvz-md-js](javascript:alert(1))",
    f'<span style="background:url({URL}/span.png)">tvz-styled</span>',
    f'<a href="{URL}/a">tvz-anchor</a>',
    '<a href="javascript:alert(1)">tvz-js-anchor</a>',
    f'<img src="{URL}/img.png">',
    f'<svg><a xlink:href="{URL}/svg">tvz-svg-anchor</a></svg>',
    f"<{URL}/autolink>",
    f"{URL}/bare-url www.{HOST}",
    f"<style>@import url({URL}/css.css);</style>",
    ":red[tvz-red] :material/home: $x^2$ **tvz-bold** `tvz-code` # hash",
    "&lt;b&gt;entity&lt;/b&gt; &amp; %{x} %{customdata[0]}",
    "<b>tvz-b</b><br><i>tvz-i</i><sup>tvz-sup</sup> <span style='color:red'>tvz-red-span</span>",
)

#: The uploaded file's name (so the data set's name, and every default run name).
FILE_NAME = f"x![tvz-file]({URL}/file.png)<span style='background:url({URL}/file-span.png)'>tvz-f</span>.csv"
#: Class labels of the target (three classes).
CLASSES = (
    f'<a href="{URL}/class0">tvz-c0</a>',
    f"![tvz-c1]({URL}/class1.png)",
    f'<span style="background:url({URL}/class2.png)">tvz-c2</span>',
)
#: The target column's name.
TARGET = f"[tvz-target]({URL}/target)<img src={URL}/target.png>"
#: Run names (one per run made by :func:`hostile_store`; the store keeps names unique).
RUN_NAME = (f"![tvz-run]({URL}/run.png) <a href='{URL}/run-a'>tvz-run-a</a> "
            f"<span style='background:url({URL}/run.png)'>tvz-run-span</span>")
NOTE = f"a note ![tvz-note]({URL}/note.png) <a href='{URL}/note-a'>tvz-note-a</a>"
#: An element whose own text is one of these was made from a name's markup.
MARKER = re.compile(r"^tvz-[a-z0-9-]+$")


def hostile_table(rows: int = 150, seed: int = 0) -> pd.DataFrame:
    """A classification table: one informative numeric feature per hostile name, three classes
    labelled with hostile names, and a hostile target column name."""
    rng = np.random.default_rng(seed)
    y = np.arange(rows) % len(CLASSES)
    columns: dict[str, Any] = {}
    for j, name in enumerate(MARKUP):
        columns[name] = np.round(rng.normal(size=rows) + (y == j % len(CLASSES)) * 2.0, 3)
    columns[TARGET] = [CLASSES[k] for k in y]
    return pd.DataFrame(columns)


def hostile_csv(rows: int = 150) -> bytes:
    return hostile_table(rows).to_csv(index=False).encode("utf-8")


def hostile_dataset():
    """The table read as the upload reads it, under the hostile file name."""
    from treeviz.services.data import TableOptions, read_table, table_to_dataset

    df = read_table(FILE_NAME, hostile_csv())
    return table_to_dataset(df, FILE_NAME, TableOptions(target=TARGET), source=f"upload {FILE_NAME}")


def hostile_regression_dataset():
    """The same features with a numeric target under the hostile target name (a regression)."""
    from treeviz.services.data import TableOptions, table_to_dataset

    df = hostile_table()
    df[TARGET] = np.round(df[MARKUP[0]] * 2.0 + np.arange(len(df)) % 3, 3)
    return table_to_dataset(df, FILE_NAME, TableOptions(target=TARGET, task="regression"))


#: One small run per view, so every page has a run to show: (family, task, parameters).
VIEW_RUNS: tuple[tuple[str, str], ...] = (
    ("skinny", "classification"),        # Features
    ("latent", "clustering"),            # Clustering
    ("tree_embedding", "embedding"),     # Embeddings
    ("laptao", "classification"),        # Semi-supervised
    ("dgt_bandit", "classification"),    # Bandit feedback
    ("tao_forest", "classification"),    # an ensemble in the explorer
    ("cart", "classification"),          # newest: what the explorer and routing show first
)


def store_of_every_view(home: Path, dataset: Any, *, name: str | None = None, notes: tuple[str, ...] = ()
                        ) -> list[Any]:
    """Fill the run store ``home`` with ``dataset``, a small run of every view's family
    (:data:`VIEW_RUNS`, each family's ``test_params``) and a TAO λ path of three points, named
    ``name`` (the store's default names without one); returns the runs' records."""
    from models.registry import families
    from treeviz.services.data import PrepConfig, prepare
    from treeviz.services.experiments.sweep import run_sweep
    from treeviz.services.experiments.training import train_run
    from treeviz.services.store.runs import RunStore

    store = RunStore(home)
    store.store_dataset(dataset)
    prepared = prepare(dataset, PrepConfig())
    registry = families()
    sweep = run_sweep("tao", "classification", dict(registry["tao"].test_params), prepared, [0.01, 0.1, 1.0],
                      store=store, name=name)
    records = [point.record for point in sweep]
    for key, task in VIEW_RUNS:
        params = dict(registry[key].test_params)
        records.append(train_run(key, task, params, prepared, store=store, name=name, notes=notes))
    return records


def hostile_store(home: Path) -> list[Any]:
    """:func:`store_of_every_view` of the hostile data set, every run and note named from the corpus."""
    return store_of_every_view(home, hostile_dataset(), name=RUN_NAME, notes=(NOTE,))
