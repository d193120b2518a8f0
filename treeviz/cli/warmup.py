"""``warmup``: compile the families' numba kernels now, so that no first training waits for them.

It trains every family's defaults briefly on small tables, as
:func:`treeviz.services.experiments.warmup.warm_up` says, on one thread (compiling uses one), and
prints one line per training with the time numba spent compiling. Run it once after installing
(the README's set-up does); it writes numba's cache, which later trainings in every process load.
"""

from __future__ import annotations

import argparse
import time

from models import registry
from models.ground import threads
from models.ground.errors import TreevizError
from treeviz.cli.common import OK, USER_ERROR, note, say, to_json
from treeviz.services.experiments.warmup import WarmedFit, warm_up

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Compile the numba kernels now, so that the first training of each family does not wait for them."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``warmup [FAMILY ...] [-q] [--json]``."""
    parser.add_argument("keys", nargs="*", metavar="FAMILY",
                        help="only these families (default: every family; those without numba kernels take "
                             "a fraction of a second)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the summary line")
    parser.add_argument("--json", action="store_true", help="print each training as JSON")


def epilog() -> str:
    """Where numba keeps what this compiles."""
    return ("numba's cache: __pycache__ beside each kernel's module, or numba's user-wide cache folder where that\n"
            "cannot be written (an installed package), or $NUMBA_CACHE_DIR when set; the app and each training\n"
            "read the same place. The app also runs this in the background when it starts (TREEVIZ_WARMUP=0\n"
            "turns that off).")


def _line(fit: WarmedFit) -> str:
    what = f"{fit.family} ({fit.task}, {fit.table})"
    if fit.error is not None:
        return f"{what}: failed: {fit.error}"
    compiled = f"compiled {fit.kernels} kernel(s) in {fit.compile_s:.1f} s" if fit.kernels else "nothing to compile"
    return f"{what}: {fit.seconds:.1f} s, {compiled}"


def cmd_warmup(args: argparse.Namespace) -> int:
    """``warmup``: train each family briefly so that numba compiles its kernels into its cache."""
    unknown = [k for k in args.keys if k not in registry.families()]
    if unknown:
        raise TreevizError(f"Unknown family {unknown[0]!r}; choose among {', '.join(registry.families())}.")
    threads.apply_budget(1)
    start = time.perf_counter()
    quiet = args.quiet or args.json
    fits = warm_up(args.keys or None, on_fit=None if quiet else (lambda fit: say(_line(fit))))
    if args.json:
        print(to_json([{"family": f.family, "task": f.task, "table": f.table, "seconds": f.seconds,
                        "compile_s": f.compile_s, "kernels": f.kernels, "error": f.error} for f in fits]))
    failed = [f for f in fits if f.error is not None]
    compile_s = sum(f.compile_s for f in fits)
    kernels = sum(f.kernels for f in fits)
    summary = (f"warm-up done in {time.perf_counter() - start:.1f} s: {kernels} kernel(s) compiled in "
               f"{compile_s:.1f} s" if kernels else
               f"warm-up done in {time.perf_counter() - start:.1f} s: every kernel was already compiled")
    if not args.json:
        say(summary)
    for fit in failed:
        note(args, f"the warm-up training of {fit.family} ({fit.task}) failed: {fit.error}")
    return USER_ERROR if failed else OK
