"""How long a stage of work has left, from its reports of work done (:func:`time_left`).

A job's snapshot (:class:`treeviz.services.jobs.manager.JobSnapshot`) carries this estimate as
``eta_s``; the marks are the stage's start and its reports, on the jobs' clock.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Reports that span less than this fraction of the time before the first report are taken as one
#: (:func:`time_left`): a burst of them (trees of a forest ending together) tells no pace.
PACE_MIN_SPAN = 0.1
#: The same for the first two reports, whose one gap is little evidence: at 0.1, a forest of ten
#: trees on two workers (diabetes), its first pair ending 0.1 s apart after 0.55 s, was said to have
#: 0.7 s left of 2.4 (``benchmarks/speed/time_left.py``).
PACE_MIN_SPAN_TWO = 0.5
#: From this many reports on, :func:`time_left` takes the pace of the recent half only.
RECENT_AFTER = 6


def time_left(marks: Sequence[tuple[float, float]], total: float | None, now: float) -> float | None:
    """Seconds left in a stage of work, from its reports of work done.

    Parameters
    ----------
    marks
        ``(time, units done)`` pairs: the stage's start ``(t0, 0)``, then one per report, in order.
    total
        The units planned (None: unknown).
    now
        The time to estimate at (the clock of the marks).

    The pace is the units done per second between the last report and an earlier one: the first
    report, so the time before it (set-up, a first compilation) does not set the pace, or from
    :data:`RECENT_AFTER` reports on the latest report at least half the time since the first back,
    so phases long past do not either. Reports that span little time (one report, or a burst of
    them: :data:`PACE_MIN_SPAN`) tell no pace: the estimate waits, until the wait has lasted as long
    as the time before the first report, and then counts the pace from the start (a one-off cost
    before the first report would otherwise overstate the time left); reports that all came at the
    start's instant count it from the start to now. The seconds since the last
    report count against the estimate, down to the time of the units after the one under way.

    Returns
    -------
    float or None
        The seconds left; 0 once the work done reaches ``total``; None while it cannot be told
        (no total, no report yet, or no work done between the reports).

    Examples
    --------
    >>> time_left([(0.0, 0.0), (4.0, 1.0), (6.0, 2.0), (8.0, 3.0)], 10, 8.0)
    14.0
    >>> time_left([(0.0, 0.0), (30.0, 1.0)], 10, 31.0) is None
    True
    """
    if not total or total <= 0 or len(marks) < 2:
        return None
    t_last, d_last = marks[-1]
    if d_last >= total:
        return 0.0
    t_start, t_first = marks[0][0], marks[1][0]
    min_span = PACE_MIN_SPAN_TWO if len(marks) == 3 else PACE_MIN_SPAN
    if t_last - t_first <= min_span * (t_first - t_start) or len(marks) == 2:
        if now - t_last < t_first - t_start:
            return None
        if t_last <= t_start:  # every report came at the start's instant: the pace is the work over the time since
            return (total - d_last) * (now - t_start) / d_last if now > t_start and d_last > 0 else None
        origin = marks[0]
    elif len(marks) - 1 >= RECENT_AFTER:
        cut = t_last - 0.5 * (t_last - t_first)
        origin = next(m for m in reversed(marks[1:-1]) if m[0] <= cut)
    else:
        origin = marks[1]
    span, work = t_last - origin[0], d_last - origin[1]
    if span <= 0 or work <= 0:
        return None
    pace = work / span
    step = d_last - marks[-2][1]
    return max((total - d_last) / pace - (now - t_last), (total - d_last - step) / pace, 0.0)
