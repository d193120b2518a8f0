"""The ``python -m treeviz`` parser and its one entry point, :func:`main`: the shared parent parsers,
one sub-parser per command from :data:`COMMANDS`, and the exit statuses of errors, crashes and Ctrl-C
(see :data:`treeviz.cli.common.EXIT_CODES`)."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import textwrap
import traceback
from collections.abc import Callable, Sequence
from typing import NamedTuple

from models import registry
from models.ground.errors import TreevizError
from models.schema import TASKS
from treeviz.cli import (
    app,
    datasets,
    delete,
    export,
    families,
    grid,
    imports,
    listing,
    predict,
    report,
    sweep,
    train,
    warmup,
)
from treeviz.cli.common import (
    BROKEN_PIPE,
    CRASH,
    EXIT_CODES,
    INTERRUPTED,
    OK,
    PROG,
    USAGE,
    USER_ERROR,
    device_name,
    help_width,
    name_value,
    shown,
    whole_number,
)
from treeviz.services.data import CATALOGUE, PrepConfig
from treeviz.services.data.preprocess import SCALINGS
from treeviz.services.data.upload import ENCODINGS


class Command(NamedTuple):
    """One command: a row of :data:`COMMANDS`."""

    #: The command's name on the command line.
    name: str
    #: Its one-line help (the listing in ``--help``, and the first line of its own ``--help``).
    help: str
    #: ``cmd_<name>``: runs the command on the parsed arguments, returns the exit status.
    handler: Callable[[argparse.Namespace], int]
    #: Adds the command's own options to its sub-parser.
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: The shared option groups it takes, by name: "data", "model" and "home" (see :func:`build_parser`).
    parents: tuple[str, ...] = ()
    #: The text its ``--help`` shows above the exit statuses (examples, notes), or None.
    epilog: Callable[[], str] | None = None


#: The commands, in the order ``--help`` lists them. A new command is one module (``HELP``,
#: ``add_arguments``, ``cmd_<name>``) and one row here.
COMMANDS = (
    Command("train", train.HELP, train.cmd_train, train.add_arguments, ("data", "model", "home"), train.epilog),
    Command("sweep", sweep.HELP, sweep.cmd_sweep, sweep.add_arguments, ("data", "model", "home"), sweep.epilog),
    Command("grid", grid.HELP, grid.cmd_grid, grid.add_arguments, ("data", "model", "home"), grid.epilog),
    Command("predict", predict.HELP, predict.cmd_predict, predict.add_arguments, ("home",), predict.epilog),
    Command("export", export.HELP, export.cmd_export, export.add_arguments, ("home",), export.epilog),
    Command("report", report.HELP, report.cmd_report, report.add_arguments, ("home",)),
    Command("list", listing.HELP, listing.cmd_list, listing.add_arguments, ("home",)),
    Command("delete", delete.HELP, delete.cmd_delete, delete.add_arguments, ("home",), delete.epilog),
    Command("import", imports.HELP, imports.cmd_import, imports.add_arguments, ("home",)),
    Command("families", families.HELP, families.cmd_families, families.add_arguments),
    Command("datasets", datasets.HELP, datasets.cmd_datasets, datasets.add_arguments, ("home",)),
    Command("app", app.HELP, app.cmd_app, app.add_arguments),
    Command("warmup", warmup.HELP, warmup.cmd_warmup, warmup.add_arguments, (), warmup.epilog),
)


def exit_codes_help() -> str:
    """The exit statuses, one per line, for ``--help`` epilogs."""
    wrap = textwrap.TextWrapper(width=help_width(), initial_indent="  ", subsequent_indent=" " * 7)
    return "exit status:\n" + "\n".join(wrap.fill(f"{code:<4} {text}") for code, text in EXIT_CODES)


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps one-line texts, keeps the line breaks of multi-line ones (the epilogs), and shows the
    default of every option that has one."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        unset = default is None or default is False or default is argparse.SUPPRESS or default == []
        if "%(default)" not in text and not unset and action.option_strings and action.nargs != 0:
            text += " (default: %(default)s)"
        return text


def _debug_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    # SUPPRESS: a command's own default must not overwrite a --debug given before the command
    parent.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="on a crash, print the traceback as well")
    return parent


def _home_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--home", metavar="DIR",
                        help="the run store's folder (default: $TREEVIZ_HOME, else $XDG_DATA_HOME/treeviz, "
                             "else ~/.local/share/treeviz)")
    return parent


def _data_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    data = parent.add_argument_group("data", "a built-in data set, a table file read as the Data page reads an "
                                             "upload, or a saved data set")
    data.add_argument("-d", "--data", metavar="DATA",
                      help=f"a built-in key ({', '.join(CATALOGUE)}), a CSV/TSV/Parquet file, or a saved data "
                           "set's fingerprint (see the datasets command)")
    data.add_argument("--target", metavar="COLUMN",
                      help="table files: the target column (default: guessed from its name, else the last column)")
    data.add_argument("--no-target", action="store_true", help="table files: no target (a clustering data set)")
    data.add_argument("--data-task", choices=("auto", "classification", "regression", "clustering"),
                      help="table files: the data set's task; auto: text columns and integer columns with at most "
                           "20 values mean classification (default: auto)")
    data.add_argument("--drop-missing-target", action="store_true",
                      help="table files: drop rows whose target is missing instead of refusing the file")
    data.add_argument("--image", choices=("auto", "yes", "no"),
                      help="table files: whether the features are the pixels of square images (default: auto)")
    data.add_argument("--encoding", choices=ENCODINGS, help="table files: the text encoding (default: auto)")
    prep = parent.add_argument_group("preparation", "the split and the preprocessing fitted on the training split")
    defaults = PrepConfig()
    prep.add_argument("--scaling", choices=SCALINGS, default=defaults.scaling, help="feature scaling")
    prep.add_argument("--test-size", type=float, default=defaults.test_size, metavar="FRACTION",
                      help="fraction of the rows held out for testing")
    prep.add_argument("--val-size", type=float, default=defaults.val_size, metavar="FRACTION",
                      help="fraction of the rows held out for validation")
    prep.add_argument("--seed", type=whole_number(0, 2**32 - 1), default=defaults.seed,
                      help="seed of the train/validation/test split (0 to 4294967295)")
    return parent


def _model_parent() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    model = parent.add_argument_group("model")
    model.add_argument("-f", "--family", choices=list(registry.families()), metavar="FAMILY",
                       help=f"the model family: {', '.join(registry.families())}")
    model.add_argument("--task", choices=TASKS,
                       help="what the model does (default: the data set's task; families that only cluster or "
                            "embed run on any data set)")
    model.add_argument("--preset", metavar="NAME", help="a named starting point of the family (see --help-params)")
    model.add_argument("-p", "--param", action="append", type=name_value, default=[], metavar="NAME=VALUE",
                       help="set a parameter (repeat the option for several); 'none' or the parameter's optional "
                            "label (such as 'unlimited') where None is allowed; true/false for switches")
    model.add_argument("--device", metavar="DEVICE", type=device_name,
                       help="for torch families: auto, cpu, cuda or cuda:N (default: the family's, auto)")
    model.add_argument("--help-params", action="store_true",
                       help="list the parameters of --family (for --task when given) and exit")
    out = parent.add_argument_group("output")
    out.add_argument("--name", help="the run's name (default: '<family> on <data set> #n', as in the app)")
    out.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                     help="show progress bars on stderr (default: only when stderr is a terminal)")
    out.add_argument("-q", "--quiet", action="store_true",
                     help="print only the run id(s); no notes, and no bars unless --progress")
    out.add_argument("--json", action="store_true", help="print the stored run record(s) as JSON")
    return parent


def _families_epilog() -> str:
    return ("families (key: label; tasks):\n"
            + "\n".join(f"  {f.key}: {f.label}; {', '.join(f.tasks)}" for f in registry.families().values())
            + f"\n\n`{PROG} families` lists every parameter with its default, range and help.\n\n"
            + exit_codes_help())


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m treeviz`` argument parser, with one sub-parser per command of :data:`COMMANDS`.

    Returns
    -------
    argparse.ArgumentParser
        Each sub-parser's defaults hold ``handler`` (the command function) and ``parser`` (itself,
        for usage errors found after parsing).
    """
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter,
        description="Train, sweep, inspect and share treeviz runs from the command line. Runs land in the same "
                    "run store as the app's, so its pages show them.",
        epilog=_families_epilog())
    parser.add_argument("--debug", action="store_true", help="on a crash, print the traceback as well")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    home, data, model, debug = _home_parent(), _data_parent(), _model_parent(), _debug_parent()
    shared = {"home": home, "data": data, "model": model}
    for command in COMMANDS:
        epilog = command.epilog() if command.epilog is not None else ""
        sub = commands.add_parser(command.name, help=command.help, description=command.help,
                                  parents=[*(shared[p] for p in command.parents), debug],
                                  formatter_class=_HelpFormatter,
                                  epilog=(epilog + "\n\n" if epilog else "") + exit_codes_help())
        sub.set_defaults(handler=command.handler, parser=sub)
        command.add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit status (see :data:`EXIT_CODES`).

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 success, 1 a :class:`TreevizError` or an ``OSError`` (one sentence on stderr), 2 bad
        usage, 70 a crash (any other exception, named in one line; the traceback with ``--debug``),
        130 interrupted, 141 stdout closed early.
    """
    args = None
    argv = list(sys.argv[1:] if argv is None else argv)
    nul = next((a for a in argv if "\x00" in str(a)), None)
    if nul is not None:  # only possible in-process (a real command line cannot hold one)
        print(f"{PROG}: error: the argument {str(nul)!r} holds a NUL character, which no value or path may hold",
              file=sys.stderr)
        return USAGE
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exit_:  # --help (0) and argparse's usage errors (2)
            return exit_.code if isinstance(exit_.code, int) else USAGE
        return int(args.handler(args) or OK)
    except SystemExit as exit_:  # parser.error() after parsing
        return exit_.code if isinstance(exit_.code, int) else USAGE
    except TreevizError as err:
        print(f"treeviz: error: {_one_line(str(err))}", file=sys.stderr)
        return USER_ERROR
    except BrokenPipeError:
        return _stdout_gone()
    except OSError as err:
        print(f"treeviz: error: {_one_line(os_error_sentence(err))}", file=sys.stderr)
        return USER_ERROR
    except Exception as err:
        return _crashed(err, debug=bool(getattr(args, "debug", False)))
    except KeyboardInterrupt:
        print("\ntreeviz: interrupted; nothing more was stored.", file=sys.stderr)
        return INTERRUPTED


def os_error_sentence(err: OSError) -> str:
    """An operating-system error (full disk, no permission, a file where a folder should be) as one
    sentence saying what to do."""
    where = f" ({err.filename})" if err.filename else ""
    advice = {
        errno.ENOSPC: "free some space, or choose another folder with --home or --out",
        errno.EDQUOT: "free some space, or choose another folder with --home or --out",
        errno.EACCES: "check its permissions, or choose another folder with --home or --out",
        errno.EPERM: "check its permissions, or choose another folder with --home or --out",
        errno.EROFS: "choose a folder on a writable disk with --home or --out",
        errno.ENOTDIR: "a part of that path is a file, not a folder; choose another path",
    }.get(err.errno, "check the path and try again")
    return f"{err.strerror or type(err).__name__}{where}: {advice}."


def _one_line(text: str) -> str:
    return shown(" ".join(text.split()))


def _crashed(err: Exception, *, debug: bool) -> int:
    """A crash (a bug): one line naming the exception, the traceback only with ``--debug``."""
    if debug:
        traceback.print_exc(file=sys.stderr)
    message = _one_line(str(err))[:300]
    print(f"treeviz: internal error: {type(err).__name__}{': ' + message if message else ''} (a bug in treeviz; "
          f"{'the traceback is above' if debug else 'run again with --debug for the traceback'}).", file=sys.stderr)
    return CRASH


def _stdout_gone() -> int:
    """stdout's reader went away (``| head``): write nothing more to it."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return BROKEN_PIPE
