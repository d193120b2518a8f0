"""How long a DGT-Bandit stream is, and what one run of it plays: rounds, loss queries, passes.

No heavy imports, so the family's declaration (the ``n_rounds`` help that the command line prints,
the form's "auto" label, the time estimate), the Bandit feedback page (through the bandit
comparison's ``plan``) and the learning loop (:mod:`models.dgt.bandit.loop`) read one set of
numbers and one reason for the minimum.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The stream when ``n_rounds`` is None (:func:`default_rounds`): this many passes over the rows, at
#: least DEFAULT_ROUNDS and at most MAX_DEFAULT_ROUNDS rounds, and never less than one pass.
DEFAULT_PASSES = 10
DEFAULT_ROUNDS = 20_000
MAX_DEFAULT_ROUNDS = 1_000_000


def count(n: float) -> str:
    """A whole number with a space between thousands ("20 000")."""
    return f"{round(n):,}".replace(",", " ")


#: Why the automatic stream plays at least DEFAULT_ROUNDS rounds (measured: see :func:`default_rounds`).
WHY_MINIMUM = (f"at the paper's learning rate (1e-3, one RMSprop step every 4 rounds) a tree is still learning "
               f"after a few thousand rounds, so {DEFAULT_PASSES} passes over a small table would stop it early")
#: The form's and the command line's name for ``n_rounds=None``.
AUTO_LABEL = f"{DEFAULT_PASSES} passes, at least {count(DEFAULT_ROUNDS)} rounds"
#: The ``n_rounds`` help (the Train form's tooltip, ``treeviz train --help``'s text).
ROUNDS_HELP = (f"Rounds of the stream, one loss query each (two for the two-point estimator). Passes over the "
               f"training rows reshuffle and count as new queries. Auto: {DEFAULT_PASSES} passes, at least "
               f"{count(DEFAULT_ROUNDS)} and at most {count(MAX_DEFAULT_ROUNDS)} rounds (never less than one pass): "
               f"the minimum is there because {WHY_MINIMUM}.")


def default_rounds(n_rows: int) -> int:
    """The stream's length when ``n_rounds`` is None: DEFAULT_PASSES passes over the ``n_rows``
    rows, kept between DEFAULT_ROUNDS and MAX_DEFAULT_ROUNDS rounds, and never less than one pass.

    At the paper's learning rate (1e-3, no schedule) the held-out accuracy is still climbing after
    one pass over a mid-sized table, so one pass (the earlier default) stopped it early: on a
    20 000-row synthetic table (14 000 training rows, 3 classes, h = 5) the validation accuracy was
    0.78 after one pass, 0.85 after 4, 0.88 after 10 and 0.90 after 30 (test 0.906); the table's CART
    scores 0.843. Small data keep their 20 000 rounds (digits: 16 passes)."""
    n = int(n_rows)
    return max(n, min(MAX_DEFAULT_ROUNDS, max(DEFAULT_ROUNDS, DEFAULT_PASSES * n)))


def queries_per_round(task: str, values: Mapping[str, Any]) -> int:
    """Loss queries one round asks: two for the two-point estimator (regression), else one."""
    return 2 if task == "regression" and values.get("estimator", "two_point") == "two_point" else 1


def _passes(rounds: int, n_rows: int) -> str:
    passes = rounds / max(1, n_rows)
    shown = f"{passes:.1f}".removesuffix(".0") if passes < 10 else count(passes)
    return shown if float(shown.replace(" ", "")) == passes else f"about {shown}"


def stream_plan(task: str, values: Mapping[str, Any], n_rows: int) -> str:
    """What one run plays with the form's ``values`` on ``n_rows`` training rows, as sentences:
    its rounds and loss queries and the passes they make, and, for the automatic length, the rule
    and whether its minimum or maximum set the length here (and why the minimum)."""
    n_rows = max(1, int(n_rows))
    asked = values.get("n_rounds")
    rounds = int(asked) if asked is not None else default_rounds(n_rows)
    per = queries_per_round(task, values)
    how = "two a round: the two-point estimator" if per == 2 else "one a round"
    text = (f"Each run under the protocol (every learner, every seed) plays {count(rounds)} rounds, "
            f"{count(rounds * per)} loss queries ({how}): {_passes(rounds, n_rows)} passes over the "
            f"{count(n_rows)} training rows.")
    if asked is not None:
        return text + " The length is the n rounds set above."
    passes = DEFAULT_PASSES * n_rows
    rule = (f" The automatic length is {DEFAULT_PASSES} passes ({count(passes)} rounds here), at least "
            f"{count(DEFAULT_ROUNDS)} and at most {count(MAX_DEFAULT_ROUNDS)} rounds")
    if passes < DEFAULT_ROUNDS <= rounds:
        return text + rule + f": the minimum sets it here, because {WHY_MINIMUM}. Set n rounds to play fewer."
    if rounds == MAX_DEFAULT_ROUNDS < passes:
        return text + rule + ": the maximum sets it here. Set n rounds to play more."
    return text + rule + "."
