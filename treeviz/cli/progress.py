"""Training progress on stderr (tqdm bars) and Ctrl-C during training: the first asks the model to
stop after its epoch (the run is stored as cancelled), the second stops at once."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from tqdm import tqdm

from models.base import Callback
from models.ground.errors import TrainingCancelled
from models.schema import Family
from treeviz.cli.common import number_text

#: What the bar says while a numba kernel compiles (a first training before ``treeviz warmup``).
COMPILING_NOTE = "compiling the numba kernels (first run only)…"


class StopRequest:
    """Ctrl-C during training: the first asks training to stop after its epoch, the second aborts.

    Use :meth:`catching` around training; callbacks read :attr:`requested`.
    """

    def __init__(self) -> None:
        self.requested = False

    def _handler(self, signum: int, frame: Any) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\ntreeviz: stopping after the current epoch; the run will be stored as cancelled "
              "(press Ctrl-C again to stop at once and store nothing).", file=sys.stderr)

    @contextmanager
    def catching(self) -> Iterator[StopRequest]:
        """Handle SIGINT as above inside the block (only in the main thread, where Python can)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handler)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)


class ProgressBar(Callback):
    """Training progress as a tqdm bar on stderr, and the hook through which Ctrl-C stops training.

    Parameters
    ----------
    family : Family
        Names the bar's unit (``Family.curves.x``: epoch, iteration, ...) and the numbers shown
        beside it (the first keys of its curve panels found in each record).
    enabled : bool or None
        None shows the bar only when stderr is a terminal.
    stop : StopRequest, optional
        When it has been requested, the next ``on_epoch_end`` or ``on_step`` raises
        ``TrainingCancelled``, so the estimator ends its loop with the epochs done and the run is
        stored as cancelled.
    leave, position, file
        As for :class:`tqdm.tqdm` (a sweep shows the epoch bar below its points bar).
    """

    def __init__(self, family: Family, *, enabled: bool | None = None, stop: StopRequest | None = None,
                 leave: bool = True, position: int = 0, file: TextIO | None = None) -> None:
        self.family = family
        self.enabled = enabled
        self.stop = stop
        self.leave = leave
        self.position = position
        self.file = file
        self.bar: tqdm | None = None
        self.epochs = 0
        curves = family.curves
        self.unit = curves.x if curves is not None else "epoch"
        self.keys = tuple(k for p in curves.panels for k in p.keys) if curves is not None else ()

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        """Open a bar for ``total`` epochs (an open-ended counter when the total is unknown)."""
        self._close()
        self.epochs = 0
        total = kwargs.get("total")
        self.bar = tqdm(total=total if isinstance(total, int) and total > 0 else None, desc="training",
                        unit=self.unit, leave=self.leave, position=self.position, dynamic_ncols=True,
                        disable=None if self.enabled is None else not self.enabled,
                        file=self.file if self.file is not None else sys.stderr)

    def on_epoch_end(self, estimator: Any, **kwargs: Any) -> None:
        """Advance the bar, show up to three of the family's curve values, honour a stop request."""
        self.epochs += 1
        if self.bar is not None:
            record = kwargs.get("record") or {}
            shown = {k: f"{record[k]:.4g}" for k in self.keys
                     if isinstance(record.get(k), (int, float)) and not isinstance(record.get(k), bool)}
            if shown:
                self.bar.set_postfix(dict(list(shown.items())[:3]), refresh=False)
            self.bar.update(1)
        self.on_step(estimator)

    def on_step(self, estimator: Any, **kwargs: Any) -> None:
        """Honour a stop request inside long phases between records too (the estimator asks often)."""
        if self.stop is not None and self.stop.requested:
            raise TrainingCancelled()

    def on_compile(self, estimator: Any, *, compiling: bool) -> None:
        """While a numba kernel compiles, the bar says so (:data:`COMPILING_NOTE`)."""
        if self.bar is not None:
            self.bar.set_postfix_str(COMPILING_NOTE if compiling else "", refresh=True)

    def on_train_end(self, estimator: Any, **kwargs: Any) -> None:
        """Close the bar."""
        self._close()

    def _close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class PointsBar(Callback):
    """A sweep's progress over its points: one step per fit, the current value beside the bar."""

    def __init__(self, param: str, count: int, *, enabled: bool | None = None, file: TextIO | None = None) -> None:
        self.param = param
        self.bar = tqdm(total=count, desc="λ path", unit="point", position=0, dynamic_ncols=True,
                        disable=None if enabled is None else not enabled,
                        file=file if file is not None else sys.stderr)

    def on_train_begin(self, estimator: Any, **kwargs: Any) -> None:
        """Show the value now being fitted."""
        value = estimator.get_params().get(self.param)
        self.bar.set_postfix({self.param: number_text(value)})

    def on_train_end(self, estimator: Any, **kwargs: Any) -> None:
        """One point done."""
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar."""
        self.bar.close()


def show_bars(args: argparse.Namespace) -> bool | None:
    """Whether to show progress bars: ``--progress``/``--no-progress`` when given, none with
    ``--quiet``, else only when stderr is a terminal (None)."""
    if args.progress is not None:
        return bool(args.progress)
    return False if args.quiet else None
