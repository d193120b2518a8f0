"""How much work an alternation has left when its steps get cheaper as it converges (for progress
bars only, never a rule of a fit).

LapTAO and the tree embedding run a fixed number of μ steps, but a step's inner work (the TAO
iterations of a warm-started tree fit, the iterations of a Z-step) falls as the alternation
converges: 3 to 10 times from the first steps to the last on digits, diabetes and breast cancer.
Planning every step at the cost of the last ones seen overstates the time left 3 to 8 times
(``benchmarks/speed/time_left.py``). :func:`remaining_work` extrapolates the fall instead.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The fastest and the slowest fall per step of a step's work above its floor that
#: :func:`remaining_work` extrapolates. Chosen by replaying the recorded per-step work of LapTAO
#: (TAO iterations, diabetes and digits) and of the tree embedding (Z-step iterations, breast cancer
#: and 500 digits) with their defaults: at a slowest fall of 0.7 the worst forecast from a quarter of
#: the way on was 1.1-1.9x off the time left; with no fall (1.0), 2.3-2.6x.
FALL_FASTEST = 0.3
FALL_SLOWEST = 0.7
#: The steps whose mean is the current level of work (the last ones).
LEVEL_STEPS = 2
#: While the last steps reached the cap, as many more are planned at the cap as reached it in a row,
#: at least the first and at most the second: breast cancer's Z-steps stayed at theirs for 7 of 20
#: steps, 500 digits' for 1 (fitted on those two; the worst forecast was 1.9x off at (2, 3),
#: 2.1-2.7x at (1, 7)).
CAP_RUN = (2, 3)
#: Below this many steps seen (by default) no fall is extrapolated: every step left is planned at
#: their mean (LapTAO's first tree fits, cold and then warm, tell no trend).
MIN_STEPS = 3


def remaining_work(done: Sequence[float], count: int, *, floor: float, cap: float | None = None,
                   min_steps: int = MIN_STEPS) -> float:
    """The work of the next ``count`` steps, from the work of the steps so far (``done``, in order).

    The work above ``floor`` (the least a step does: one iteration, or TAO's two and its finishing
    step) is taken to fall geometrically from its current level (the mean of the last
    :data:`LEVEL_STEPS`), by the rate of the last :data:`LEVEL_STEPS` + 1 steps (from ``min_steps``
    steps on; before, every step at their mean), held between
    :data:`FALL_FASTEST` and :data:`FALL_SLOWEST` per step: a step that rose or stayed level
    (a Z-step at its iteration cap) is still taken to fall at the slowest rate, since a warm-started
    alternation converges. Each step is at most ``cap``; while the last steps reached it (their
    work was cut short), as many more steps are planned at the cap as have reached it in a row
    (:data:`CAP_RUN`), and the fall starts after them.

    Examples
    --------
    >>> round(remaining_work([50, 100], 4, floor=1, cap=100), 1)  # 100, 100, then 70.3 and 49.5
    319.8
    >>> remaining_work([5.0], 4, floor=3)  # too few steps to see a fall: each at their mean
    20.0
    """
    if count <= 0 or not done:
        return 0.0
    top = float("inf") if cap is None else float(cap)
    held = 0  # the last steps stopped by the cap: their work was at least the cap
    while held < len(done) and done[-1 - held] >= top:
        held += 1
    if held:  # as many more at the cap as have been (CAP_RUN), then the fall from the cap
        more = min(max(held, CAP_RUN[0]), CAP_RUN[1], count)
        return more * top + remaining_work([*done, *[top] * more], count - more, floor=floor, min_steps=1)
    if len(done) < min_steps:
        return count * min(top, max(floor, sum(done) / len(done)))
    last = done[-LEVEL_STEPS:]
    level = max(0.0, sum(last) / len(last) - floor)
    tail = [max(0.0, v - floor) for v in done[-(LEVEL_STEPS + 1):]]
    rate = FALL_SLOWEST
    if len(tail) > 1 and tail[0] > 0.0:
        rate = min(FALL_SLOWEST, max(FALL_FASTEST, (tail[-1] / tail[0]) ** (1.0 / (len(tail) - 1))))
    return float(sum(min(top, floor + level * rate ** j) for j in range(1, count + 1)))
