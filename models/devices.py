"""Which device ``device="auto"`` trains on: the CPU first, a GPU only where it was measured to win.

A GPU is not faster for every problem. A small optimiser step is a handful of kernel launches whose
fixed cost (microseconds each, plus the host waiting on the device) is larger than its arithmetic,
so a small problem trains slower on a GPU than on the CPU. Measured with
``benchmarks/gpu_check.sh`` on an H200 (CPU time ÷ CUDA time; above 1 the GPU wins):

* latent trees' pruning layer (forward and backward of one step): 0.30× at depth 6 and batch 512,
  3.2× at depth 8 and batch 4 096, 1.55× at depth 10 and batch 16 384;
* DGT, a training epoch: 2.0× at height 6 and batch 128 (abalone), 3.0× at height 10 and batch 128
  (letter);
* Skinny Trees, a training epoch (20 trees of depth 4): 0.40× at batch 16, 0.55× at batch 64;
* TAO's torch node solver: 0.55× to 0.82× (TAO's default solver, coordinate descent, runs on the
  CPU only).

So ``"auto"`` resolves, for a fit, by one rule (:func:`choose_device`): CUDA only when a GPU is
visible **and** the family has a measured crossover (:data:`CROSSOVERS`) **and** the fit's step is at
least that size; else the CPU. A family without a measurement where the GPU won stays on the CPU.
The size of a step is :func:`step_size`: the rows one optimiser step sees (``min(batch, rows)``)
times the tree's leaves (times the trees trained together), the quantity whose growth makes the
GPU's fixed per-step cost small against the arithmetic. Each crossover is the smallest measured size
where the GPU won, so a size below it never goes to the GPU on a guess.

``"cpu"``, ``"cuda"`` and ``"cuda:N"`` are honoured as asked (CUDA without a GPU is refused with a
sentence, by :func:`models.base.resolve_device`). The choice and its reason are recorded on the
fitted estimator as ``device_`` and ``device_reason_``.

These measurements predate the collapsed DGT step, the fused Skinny step and the compiled latent
engine, which make the CPU 3-8× faster for the same problem: more than the GPU's measured margin.
So no family has a crossover today and ``"auto"`` is the CPU for every fit, which can be slower
than a GPU for a large fit but is never slower than the CPU. The next GPU loan re-measures them.
When ``gpu_check.sh`` measures new crossovers (its ``crossover`` benchmark prints the smallest
winning size per family), update :data:`CROSSOVERS` here; nothing else needs to change.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from models.ground.errors import TreevizError


@dataclass(frozen=True)
class Crossover:
    """Where a family's training starts to win on a GPU.

    ``min_size``: the smallest :func:`step_size` measured where CUDA beat the CPU, or None when no
    measurement showed the GPU winning (then ``"auto"`` keeps the family on the CPU).
    ``measured``: the measurements behind it, with the card, shown in ``device_reason_``.
    """

    min_size: float | None
    measured: str


#: Where the GPU won before the CPU paths were compiled (latent trees' engine, DGT's collapsed step):
#: the sizes ``gpu_check.sh`` measured then. They are not used while :data:`CROSSOVERS` says None:
#: those CPU paths are now 3-8× faster at the same sizes (``benchmarks/results/latent_train.json``,
#: ``dgt.json``), more than the GPU's 2-3.2× margin, so the GPU is no longer known to win anywhere.
STALE_CROSSOVERS = {"latent": 4096 * 2**8, "dgt": 128 * 2**6}
_RECOMPILED = ("; the CPU step has since become 3-8× faster, so the GPU is not known to win until "
               "benchmarks/gpu_check.sh measures it again")
_LATENT = Crossover(None, "H200, against the autograd CPU step: 0.30× at depth 6, batch 512; 3.2× at depth 8, "
                          "batch 4096; 1.55× at depth 10, batch 16384" + _RECOMPILED)
_DGT = Crossover(None, "H200, against the autograd CPU step: 2.0× at height 6, batch 128; 3.0× at height 10, "
                       "batch 128" + _RECOMPILED)
_SKINNY = Crossover(None, "H200: 0.40× at 20 trees of depth 4, batch 16; 0.55× at batch 64")
_TAO = Crossover(None, "H200: the torch node solver 0.55-0.82×; the default solver runs on the CPU only")

#: Per family key: the measured crossover. A family not listed has no measurement: CPU under "auto".
CROSSOVERS: dict[str, Crossover] = {
    "latent": _LATENT,
    "dgt": _DGT,
    "dgt_forest": _DGT,  # its trees are DGT trees, trained one after another on the device
    "skinny": _SKINNY,
    "tao": _TAO,
    "tao_forest": _TAO,
    "dgt_bandit": Crossover(None, "H100: 20 000 rounds 3.5× slower than one CPU thread"),
}


@dataclass(frozen=True)
class DeviceChoice:
    """A resolved device and, in a few words, why."""

    device: str
    reason: str


def step_size(rows: int | None = None, batch: int | None = None, depth: int | None = None,
              trees: int = 1) -> float | None:
    """The size of one optimiser step: rows per step × leaves (2^depth) × trees; None when unknown.

    ``rows``: training rows; ``batch``: rows per step (a full-batch fit passes rows only);
    ``depth``: the tree's depth (None: one leaf, as for a family whose cost does not grow with it).
    """
    if rows is None and batch is None:
        return None
    per_step = min(int(v) for v in (rows, batch) if v is not None)
    leaves = 1 if depth is None else 2 ** int(depth)
    return float(max(per_step, 0) * leaves * max(int(trees), 1))


def gpu_visible() -> bool:
    import torch  # deferred: torch is heavy and only torch families need a device

    return bool(torch.cuda.is_available())


def choose_device(family: str | None, size: float | None) -> DeviceChoice:
    """What ``"auto"`` resolves to for a fit of ``family`` whose step is ``size`` (see the module)."""
    if not gpu_visible():
        return DeviceChoice("cpu", "auto: no GPU visible")
    crossover = CROSSOVERS.get(family or "")
    if crossover is None or crossover.min_size is None:
        evidence = f" ({crossover.measured})" if crossover is not None else ""
        return DeviceChoice("cpu", f"auto: the GPU was not measured to win for {family or 'this fit'}{evidence}")
    if size is None:
        return DeviceChoice("cpu", f"auto: the problem's size is unknown, so the CPU ({family} wins on a GPU "
                                   f"from a step of {crossover.min_size:,.0f} rows × leaves)")
    if size < crossover.min_size:
        return DeviceChoice("cpu", f"auto: a step of {size:,.0f} rows × leaves is below {family}'s measured "
                                   f"crossover of {crossover.min_size:,.0f} ({crossover.measured})")
    return DeviceChoice("cuda", f"auto: a step of {size:,.0f} rows × leaves is at least {family}'s measured "
                                f"crossover of {crossover.min_size:,.0f} ({crossover.measured})")


#: Files that exist when an NVIDIA driver is loaded; without one CUDA cannot be available.
NVIDIA_DRIVER_FILES = ("/proc/driver/nvidia/version", "/dev/nvidiactl", "/dev/nvidia0")


def available_devices() -> list[str]:
    """Devices a user can choose from on this machine, ``"auto"`` first.

    Here rather than in :mod:`models.base` (which imports scikit-learn): the sidebar asks on every
    page, so the app's first page must not pay for scikit-learn's import to learn it. Without an
    NVIDIA driver (none of :data:`NVIDIA_DRIVER_FILES`) this is ``["auto", "cpu"]``
    without importing torch: every page's sidebar asks, and importing torch (over a second) on the
    app's first page would only say what the missing driver already says."""
    out = ["auto", "cpu"]
    if "torch" not in sys.modules and not any(os.path.exists(f) for f in NVIDIA_DRIVER_FILES):
        return out
    import torch  # deferred: torch is heavy

    if torch.cuda.is_available():
        out += ["cuda"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    return out


def resolve_device(device: str | None, *, work: tuple[str | None, float | None] | None = None) -> str:
    """Turn ``"auto"`` / ``"cpu"`` / ``"cuda"`` / ``"cuda:N"`` into a usable torch device name.

    ``work``: ``(family key, step size)`` of a fit (see :mod:`models.devices`). With it, ``"auto"``
    is CPU-first: CUDA only when a GPU is visible and the step is at least the family's measured
    crossover, else the CPU. Without it (scheduling, loading a model), ``"auto"`` means "a GPU may
    be used": CUDA when one is visible. Asking for CUDA without a GPU is an error the user can fix,
    not a silent fallback.
    """
    return device_choice(device, work=work).device


def device_choice(device: str | None, *, work: tuple[str | None, float | None] | None = None) -> DeviceChoice:
    """:func:`resolve_device` with the reason: a :class:`models.devices.DeviceChoice`."""

    device = "auto" if device is None else str(device).strip().lower()
    if device == "cpu":
        return DeviceChoice("cpu", "asked for")
    if device != "auto" and not device.startswith("cuda"):
        raise TreevizError(f"Unknown device {device!r}; use 'auto', 'cpu', 'cuda' or 'cuda:N'.")
    if device == "auto":
        if work is not None:
            return choose_device(*work)
        return DeviceChoice("cuda", "auto: a GPU is visible") if gpu_visible() else \
            DeviceChoice("cpu", "auto: no GPU visible")
    import torch  # deferred: torch is heavy and only torch families need a device

    if not gpu_visible():
        raise TreevizError(
            f"Device {device!r} was requested but no CUDA GPU is available; choose 'cpu' or 'auto'."
        )
    if ":" in device:
        index = device.split(":", 1)[1]
        if not index.isdigit() or int(index) >= torch.cuda.device_count():
            raise TreevizError(
                f"There is no GPU {device!r}; this machine has {torch.cuda.device_count()} GPU(s)."
            )
    return DeviceChoice(device, "asked for")
