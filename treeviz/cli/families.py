"""``families``: describe the model families (tasks, presets, λ path, parameters), as text or JSON."""

from __future__ import annotations

import argparse

from models.registry import families, get_family
from models.schema import TASKS
from treeviz.cli.common import OK, describe_family, to_json

#: The command's one-line help, also the first line of its ``--help``.
HELP = "Describe the model families: tasks, presets, λ path and parameters."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``families [FAMILY ...] [--task TASK] [--json]``."""
    parser.add_argument("keys", nargs="*", metavar="FAMILY", help="only these families")
    parser.add_argument("--task", choices=TASKS, help="only this task's families and parameters")
    parser.add_argument("--json", action="store_true", help="as JSON")


def cmd_families(args: argparse.Namespace) -> int:
    """``families``: every family's parameters (or the named ones), as text or JSON."""
    chosen = [get_family(k) for k in args.keys] if args.keys else list(families().values())
    if args.task is not None:
        chosen = [f for f in chosen if args.task in f.tasks]
    if args.json:
        out = []
        for f in chosen:
            params = [{"name": p.name, "label": p.title, "kind": p.kind, "default": p.default, "help": p.help,
                       "low": p.low, "high": p.high, "choices": list(p.choices), "optional_label": p.optional_label,
                       "tasks": list(p.tasks), "advanced": p.advanced} for p in f.params_for(args.task)]
            path = f.lambda_path
            out.append({"key": f.key, "label": f.label, "description": f.description, "tasks": list(f.tasks),
                        "presets": {k: dict(v) for k, v in f.presets.items()}, "params": params,
                        "lambda_path": None if path is None else {
                            "param": path.param, "low": path.low, "high": path.high, "count": path.count,
                            "warm_start": path.warm_start}})
        print(to_json(out))
        return OK
    print("\n\n".join(describe_family(f, args.task) for f in chosen))
    return OK
