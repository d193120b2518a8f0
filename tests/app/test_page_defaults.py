"""Every page's form starts from the family's declared defaults (its ``Param`` defaults), as the
Train page's does: the λ path's and the grid's shared parameters, the grid's depth and seed
values, and the Bandit page's settings."""

from __future__ import annotations

from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from models.registry import families_offering, get_family
from models.schema import Family
from tests.app.conftest import assert_clean, new_app, open_page

TASK = "classification"  # iris, the app's default data set


def form_values(at: AppTest, family: Family, task: str, key: str, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    """The values the page's parameter form (widget keys ``{key}.{name}``) shows for ``family``."""
    out: dict[str, Any] = {}
    for p in family.params_for(task, form_only=True):
        if p.name in exclude:
            continue
        widget = f"{key}.{p.name}"
        if p.optional_label is not None and at.checkbox(key=f"{widget}__none").value:
            out[p.name] = None
        elif p.kind == "bool":
            out[p.name] = at.checkbox(key=widget).value
        elif p.kind == "text":
            out[p.name] = at.text_input(key=widget).value
        elif p.kind == "choice":
            out[p.name] = at.selectbox(key=widget).value
        else:
            out[p.name] = at.number_input(key=widget).value
    return out


def declared(family: Family, task: str, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in family.defaults(task).items()
            if k not in exclude and k in {p.name for p in family.params_for(task, form_only=True)}}


def test_the_train_page_starts_from_the_declared_defaults(home):
    at = new_app().run()
    open_page(at, "train")
    at.selectbox(key="train.family").set_value("tao").run()
    assert_clean(at)
    tao = get_family("tao")
    assert form_values(at, tao, TASK, "train.tao.defaults") == declared(tao, TASK)


@pytest.mark.slow  # one page run per family offering a λ path (a few seconds in all)
@pytest.mark.parametrize("key", [f.key for f in families_offering("lambda_path", TASK)])
def test_the_lambda_path_and_the_grid_start_from_the_declared_defaults(home, key):
    family = get_family(key)
    path = family.lambda_path
    at = new_app().run()
    open_page(at, "lambda_path")
    at.selectbox(key="pruning.family").set_value(key).run()
    at.selectbox(key="grid.family").set_value(key).run()
    assert_clean(at)
    # the λ path: every parameter but λ at its default (latent: auto depth and 100 epochs, not 3 and 30)
    assert form_values(at, family, TASK, f"pruning.{key}", exclude=(path.param,)) == \
        declared(family, TASK, exclude=(path.param,))
    assert any("starts at the family's defaults" in c.value for c in at.caption)
    # the grid: its depth values start at the default depth, its seeds at the default seed
    varied = [path.param]
    for name in ("depth", "max_depth"):
        if any(p.name == name for p in family.params_for(TASK, form_only=True)):
            default = family.param(name, TASK).default
            text = at.text_input(key=f"grid.depth.{key}").value
            assert text.split(",")[0].strip() == ("auto" if default is None else str(default))
            varied.append(name)
            break
    if any(p.name == "random_state" for p in family.params_for(TASK, form_only=True)):
        assert at.text_input(key=f"grid.seed.{key}").value == "0, 1"
        varied.append("random_state")
    assert form_values(at, family, TASK, f"grid.{key}", exclude=tuple(varied)) == \
        declared(family, TASK, exclude=tuple(varied))


def test_tao_on_the_lambda_path_trains_at_auto_depth_and_20_iterations(home):
    at = new_app().run()
    open_page(at, "lambda_path")
    at.selectbox(key="pruning.family").set_value("tao").run()
    assert at.checkbox(key="pruning.tao.depth__none").value is True  # auto, as on the Train page
    assert at.number_input(key="pruning.tao.max_iter").value == 20


@pytest.mark.slow  # the Bandit page runs its data set's preparation (about a second)
def test_the_bandit_page_starts_from_the_declared_defaults(home):
    at = new_app().run()
    open_page(at, "bandit")
    assert_clean(at)
    family = get_family("dgt_bandit")
    shown = form_values(at, family, TASK, f"bandit.{family.key}.{TASK}.defaults", exclude=("random_state",))
    assert shown == declared(family, TASK, exclude=("random_state",))
    assert shown["n_rounds"] is None  # the family's 10 passes (at least 20 000 rounds), not 10 000
