"""examples/quickstart.ipynb runs from top to bottom in a fresh kernel, and shows what it says: the
three models' tree diagrams (offline: nothing fetched from outside the notebook), the figure of
tv.plot_tree, the rules, and reloaded models that predict as the saved ones."""

from __future__ import annotations

import ast
import json
import os
import re
from pathlib import Path

import pytest

from tests.notebook_html import figure_traces, header, outside_requests
from treeviz.plots import NODE_TRACE_NAME

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "examples" / "quickstart.ipynb"
#: The cells that end in a model, by the model's variable: the class their diagram shows.
MODEL_CELLS = {"tao": "TAOClassifier", "latent": "LatentTreeClassifier", "skinny": "SkinnyTreesClassifier"}


def code_cells(nb) -> list:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def last_line(cell) -> str:
    return cell.source.strip().splitlines()[-1].strip()


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook executed in a fresh python3 kernel, working in an empty folder."""
    work = tmp_path_factory.mktemp("notebook")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PYTHONPATH", path)  # the kernel imports treeviz from this checkout
        mp.setenv("IPYTHONDIR", str(work / ".ipython"))
        client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                         resources={"metadata": {"path": str(work)}})
        client.execute()
    return nb


def test_the_stored_notebook_has_no_outputs_and_uses_the_public_face_only():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    cells = code_cells(nb)
    assert all(cell.outputs == [] and cell.execution_count is None for cell in cells)
    imported = set()
    for cell in cells:
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.Import):
                imported |= {(alias.name, alias.asname) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add((node.module, None))
    assert ("treeviz", "tv") in imported
    assert not {name for name, _ in imported if name.split(".")[0] in ("treeviz", "models")} - {"treeviz"}
    assert {last_line(cell) for cell in cells} >= set(MODEL_CELLS)


@pytest.mark.slow  # a kernel trains three models (about 15 s on two cores)
def test_the_notebook_runs_and_shows_each_model_offline(executed):
    outputs = [out for cell in code_cells(executed) for out in cell.outputs]
    assert not [out for out in outputs if out.output_type == "error"]
    assert not [out for out in outputs if out.output_type == "stream" and "Traceback" in out.text]
    shown = {}
    for cell in code_cells(executed):
        if last_line(cell) in MODEL_CELLS:
            results = [out for out in cell.outputs if out.output_type == "execute_result"]
            assert len(results) == 1 and "text/html" in results[0].data, cell.source
            shown[last_line(cell)] = results[0].data["text/html"]
    assert set(shown) == set(MODEL_CELLS)
    for name, html in shown.items():
        text = header(html)
        assert text.startswith(MODEL_CELLS[name] + " · ") and " nodes" in text and "validation accuracy" in text
        nodes = [t for t in figure_traces(html) if t.get("name") == NODE_TRACE_NAME]
        assert len(nodes) == 1 and len(nodes[0]["x"]) > 1, name  # the diagram with its node markers
        assert "plotly.js v" in html and outside_requests(html) == [], name
    assert "5 trees" in header(shown["skinny"])
    # nothing any output shows points outside the notebook
    for out in outputs:
        for value in out.get("data", {}).values():
            assert outside_requests(value if isinstance(value, str) else json.dumps(value)) == []


@pytest.mark.slow
def test_the_notebook_plots_exports_and_reloads(executed):
    def stdout(marker: str) -> str:
        cell = next(c for c in code_cells(executed) if marker in c.source)
        return "".join(out.text for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")

    plot_cell = next(c for c in code_cells(executed) if last_line(c).startswith("tv.plot_tree("))
    figures = [out.data for out in plot_cell.outputs if out.output_type in ("display_data", "execute_result")]
    assert len(figures) == 1
    figure = figures[0]
    if "application/vnd.plotly.v1+json" in figure:  # plotly's renderer in a kernel: the figure as JSON
        traces = figure["application/vnd.plotly.v1+json"]["data"]
    else:
        traces = figure_traces(figure["text/html"])
    assert [t for t in traces if t.get("name") == NODE_TRACE_NAME]
    rules = stdout("tv.export_text(")
    assert rules.count("IF ") >= 2 and "THEN class = " in rules
    code = stdout("tv.export_python(")
    assert "def predict(" in code and "import treeviz" not in code
    reload = stdout("tv.load_model(")
    for name in MODEL_CELLS:
        line = rf"^{name}: reloaded from {name}\.zip, predicts the same on \d+ test rows: True$"
        assert re.search(line, reload, re.M), reload
    assert "False" not in reload


def test_the_notebooks_pipeline_predicts_from_the_raw_table(executed):
    cell = next(c for c in code_cells(executed) if "tv.load_table(" in c.source)
    text = "".join(out.text for out in cell.outputs if out.output_type == "stream" and out.name == "stdout")
    assert text.startswith("Pipeline reads ['island', 'bill_length_mm'"), text
    predicted, true = re.search(r"predicted: (\[.*?\]) true: (\[.*?\])", text).groups()
    assert predicted.count("'") == 10 and predicted == true, text  # five raw rows, classed as they are
    assert "IF " in text and "(missing)" not in text.splitlines()[0]
