"""Every session-state key the pages use is declared once, in :data:`treeviz.ui.session_keys.SESSION_KEYS`.

The pages (``app_pages/``) and the UI helpers (``treeviz/ui/``) are read, not run: every key given
to ``st.session_state[...]``, ``.get``, ``.pop``, ``.setdefault``, ``in st.session_state``, and to a
``key=`` argument (a widget's value lives in session state under its key; the project's helpers
pass theirs on to widgets), is resolved to its text. Module constants (``NODE``, ``state.RUN_ID``)
are substituted; the dynamic parts of an f-string become ``{}``; a key that is the enclosing
function's own parameter is the caller's key, checked at the caller. The table declares dynamic
parts as ``{name}``. The test fails on a key used but not declared, and on a key declared but no
longer used.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from treeviz.ui.session_keys import SESSION_KEYS

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (ROOT / "app_pages", ROOT / "treeviz" / "ui")
#: The dict methods that take a key first.
METHODS = ("get", "pop", "setdefault")
#: Calls whose ``key=`` is not a session-state key (sorting, grouping).
NOT_WIDGETS = ("sorted", "sort", "max", "min", "groupby")


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in folder.glob("*.py"))


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's string constants, f-strings of earlier constants included."""
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            text = _text(node.value, out, {}, set())
            if text is not None and "{}" not in text:
                out[node.targets[0].id] = text
    return out


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """``alias -> file stem`` for the modules of treeviz.ui imported whole (``from treeviz.ui import state``)."""
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "treeviz.ui":
            for name in node.names:
                out[name.asname or name.name] = name.name
    return out


def _text(node: ast.AST, constants: dict[str, str], others: dict[str, dict[str, str]],
          params: set[str]) -> str | None:
    """The key an expression gives: its text with ``{}`` for each dynamic part; None when it is a
    parameter of the enclosing function (the caller's key) or not text at all."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        if node.id in constants:
            return constants[node.id]
        return None if node.id in params else "{}"
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in others:
        return others[node.value.id].get(node.attr, "{}")
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            else:
                inner = value.value
                known = _text(inner, constants, others, set()) if isinstance(inner, ast.Name | ast.Attribute) else None
                parts.append(known if known is not None and "{}" not in known else "{}")
        return "".join(parts)
    return "{}"


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _key_nodes(tree: ast.AST, positional: dict[str, set[int]]) -> Iterator[tuple[ast.AST, set[str]]]:
    """Every expression used as a session-state key, with the enclosing function's parameters;
    ``positional`` names the helpers that take a key by position (function -> argument indexes)."""
    def walk(node: ast.AST, params: set[str]) -> Iterator[tuple[ast.AST, set[str]]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            args = node.args
            params = params | {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        if isinstance(node, ast.Subscript) and _is_session_state(node.value):
            yield node.slice, params
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in METHODS and _is_session_state(func.value) and node.args:
                yield node.args[0], params
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            for index in positional.get(name, ()):
                if index < len(node.args):
                    yield node.args[index], params
            if name not in NOT_WIDGETS:
                for keyword in node.keywords:
                    if keyword.arg == "key" and not isinstance(keyword.value, ast.Lambda):
                        yield keyword.value, params
        elif isinstance(node, ast.Compare) and any(_is_session_state(c) for c in node.comparators) \
                and all(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            yield node.left, params
        for child in ast.iter_child_nodes(node):
            yield from walk(child, params)

    yield from walk(tree, set())


def _positional_keys(trees: list[ast.Module]) -> dict[str, set[int]]:
    """The functions that use a parameter as a session-state key as it is (the caller's key), with
    that parameter's position, so that a call passing the key by position is seen too."""
    out: dict[str, set[int]] = {}
    for tree in trees:
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            names = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
            for node, _ in _key_nodes(func, {}):
                if isinstance(node, ast.Name) and node.id in names:
                    out.setdefault(func.name, set()).add(names.index(node.id))
    return out


def used_keys() -> dict[str, list[str]]:
    """Every session-state key of the pages and the UI helpers -> where it is used (``file:line``)."""
    trees = {path: ast.parse(path.read_text(encoding="utf-8")) for path in _sources()}
    constants = {path.stem: _constants(tree) for path, tree in trees.items() if path.parent.name == "ui"}
    positional = _positional_keys(list(trees.values()))
    found: dict[str, list[str]] = {}
    for path, tree in trees.items():
        own = _constants(tree)
        others = {alias: constants.get(stem, {}) for alias, stem in _module_aliases(tree).items()}
        for node, params in _key_nodes(tree, positional):
            key = _text(node, own, others, params)
            if key is not None:
                found.setdefault(key, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _pattern(declared: str) -> str:
    return re.sub(r"\{[^{}]*\}", "{}", declared)


def test_the_scan_finds_the_keys_it_should():
    """The scanner sees literals, constants of the page and of ui.state, f-strings and widget keys."""
    found = used_keys()
    for key in ("treeviz.run_id", "explorer.node", "data.table", "features.compared.{}", "runs.name.{}",
                "{}.download.{}", "{}.job_id", "explorer.tree", "data.source"):
        assert key in found, key
    assert "{}" not in found, found["{}"]  # every key resolves to some text


def test_every_session_state_key_is_declared_and_every_declared_key_used():
    found = used_keys()
    declared = {_pattern(k): k for k in SESSION_KEYS}
    assert len(declared) == len(SESSION_KEYS), "two declared keys differ only in their {names}"
    missing = {key: where for key, where in found.items() if key not in declared}
    assert not missing, f"session-state keys used but not declared in treeviz.ui.session_keys.SESSION_KEYS: {missing}"
    unused = sorted(original for pattern, original in declared.items() if pattern not in found)
    assert not unused, f"declared in treeviz.ui.session_keys.SESSION_KEYS but used nowhere: {unused}"
    assert all(meaning.strip() and "\n" not in meaning for meaning in SESSION_KEYS.values())
