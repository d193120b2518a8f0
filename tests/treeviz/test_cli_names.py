"""Names are text on the command line too: a terminal acts on control characters (an escape
sequence moves the cursor, recolours, retitles the window; a bidirectional override reorders a
line), so every line written for people shows them as escapes (``treeviz.cli.common.shown``).
Data written on purpose (``--json``, exported code, predictions) keeps them exactly."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from treeviz.cli.common import shown
from treeviz.cli.main import main

#: What a terminal would act on (tab and line feed aside).
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
ESC = "\x1b"
COLUMNS = (f"red{ESC}[31m", "over\u202eride", f"bell\x07{ESC}[2J", f"title{ESC}]0;pwned\x07", "c\x9bJ")
TARGET = f"label{ESC}[5m"
CLASSES = (f"k{ESC}[1A", "plain", "r\u202eL")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def table(tmp_path):
    rng = np.random.default_rng(0)
    y = np.arange(90) % 3
    frame = pd.DataFrame({c: rng.normal(size=90) + (y == j % 3) for j, c in enumerate(COLUMNS)})
    frame[TARGET] = [CLASSES[k] for k in y]
    path = tmp_path / "controls.csv"
    frame.to_csv(path, index=False)
    return path


def test_shown_turns_every_control_character_into_its_escape():
    assert shown(f"a{ESC}[31mb\u202ec\x07\td") == "a\\x1b[31mb\\u202ec\\x07\td"
    assert CONTROLS.search(shown("".join(chr(c) for c in range(0x20)) + "\x7f\x9b\u2066\u2028")) is None


@pytest.fixture
def names_table(tmp_path):
    """Column names and class labels a terminal could show (they may be stored), in a file whose
    name holds an escape sequence and a bidirectional override."""
    rng = np.random.default_rng(0)
    y = np.arange(90) % 3
    frame = pd.DataFrame({f"x{j} [31m \u2022": rng.normal(size=90) + (y == j % 3) for j in range(3)})
    frame["label"] = [("a", "b", "c")[k] for k in y]
    path = tmp_path / f"rows{ESC}[31m\u202e.csv"
    frame.to_csv(path, index=False)
    return path


def test_every_command_writes_names_for_people_as_text(home, capsys, names_table):
    outputs = []
    code, out, err = run(capsys, "train", "--home", home, "--data", names_table, "--target", "label",
                         "--family", "cart", "--param", "max_depth=3")
    assert code == 0, err
    outputs.append(out + err)
    assert "rows\\x1b[31m\\u202e" in out  # the data set's name (the file's), shown with its escapes
    code, out, err = run(capsys, "list", "--home", home)
    outputs.append(out + err)
    run_id = out.splitlines()[1].split()[0]
    outputs.append("".join(run(capsys, "datasets", "--home", home)[1:]))
    code, out, err = run(capsys, "predict", "--home", home, run_id, names_table)
    assert code == 0, err
    outputs.append(err)  # the notes (the predictions on stdout are data)
    code, out, err = run(capsys, "export", "--home", home, run_id, "--sql", "-")
    outputs.append(err)
    for text in outputs:
        assert CONTROLS.search(text.replace("\n", "")) is None, text


@pytest.mark.parametrize("where", ["column", "class"])
def test_a_column_or_class_with_control_characters_is_refused_with_a_sentence_shown_as_text(
        home, capsys, tmp_path, table, where):
    """The run store keeps no control characters, so the upload refuses such names at once (before,
    the fit ran and the run could not be stored); the sentence names them with their escapes."""
    if where == "class":
        frame = pd.read_csv(table)
        frame.columns = [f"x{j}" for j in range(len(COLUMNS))] + ["label"]
        table = tmp_path / "classes.csv"
        frame.to_csv(table, index=False)
    code, _out, err = run(capsys, "train", "--home", home, "--data", table, "--target",
                         TARGET if where == "column" else "label", "--family", "cart")
    assert code != 0 and "Traceback" not in err
    assert CONTROLS.search(err.replace("\n", "")) is None, err
    assert ("red\\x1b[31m" if where == "column" else "k\\x1b[1A") in err and "control characters" in err


def test_an_error_quoting_a_name_from_the_command_line_is_shown_as_text(home, capsys, names_table):
    code, _out, err = run(capsys, "train", "--home", home, "--data", names_table, "--target", f"no{ESC}[31m such",
                         "--family", "cart")
    assert code != 0 and "no\\x1b[31m such" in err
    assert CONTROLS.search(err.replace("\n", "")) is None, err


def test_json_keeps_names_exactly(home, capsys, names_table):
    code, out, err = run(capsys, "train", "--home", home, "--data", names_table, "--target", "label",
                         "--family", "cart", "--json")
    assert code == 0, err
    record = json.loads(out)
    assert record["dataset"]["name"] == "rows\\x1b[31m\\u202e.csv"  # the stored name (the file's, made visible)
