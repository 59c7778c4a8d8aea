"""The `nmtvariants` command: one sub-command per pipeline stage.

Each stage module exposes ``add_parser(subparsers)`` that registers its sub-command(s) and sets
``func`` on the parsed namespace. Stage modules are *discovered*, not listed: every module named
``cli`` or ending in ``_cli`` inside a subpackage of ``nmtvariants`` (``text/cli.py``,
``text/bpe_cli.py``, ``analysis/cli.py``, ...) or one level further down, inside a package within a
subpackage (``studies/emelin2019/cli.py``: every study is a package of its own). A study adds its
commands by adding such a module, without editing a shared list. Discovery reads directory listings
only (``pkgutil.iter_modules`` on each package's folder, whose finder locates the files without
importing any package), and a module that fails to import costs only its own commands, with a
one-line warning, so that a broken optional stage cannot take the others down.

Every job of the workflow is a fresh ``nmtvariants <command>`` process, so importing every stage
module (torch, matplotlib, pandas, ...) to run one text command would cost seconds per job. The
command's module is found instead from a static index, read from the stage modules' *source* with
``ast`` (``subparsers.add_parser("name", ...)`` in ``add_parser`` and in the module's helpers it hands
``subparsers`` to), and only that module is imported. ``--help``, ``--version``, no command, or a
command the index does not know (a misspelling, or a name a module registers from a non-literal)
build the full parser as before, so users see the same arguments, help, errors and exit codes.
"""

from __future__ import annotations

import argparse
import ast
import gc
import importlib
import importlib.util
import logging
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nmtvariants import __version__
from nmtvariants.errors import EXIT_STATUS, NMTVariantsError
from nmtvariants.fork_server import run_in_server
from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

PACKAGE = "nmtvariants"


def is_command_module(name: str) -> bool:
    return name == "cli" or name.endswith("_cli")


# How many package levels below the top package discovery looks into: 1 finds ``<package>.<sub>.cli``,
# 2 also ``<package>.<sub>.<study>.cli``. Deeper would cost a directory listing per nested package on
# every command for no stage that needs it.
DISCOVERY_DEPTH = 2


def _command_module_sources(package: str) -> dict[str, str | None]:
    """Dotted name -> source file (None when it is not a ``.py`` file) of each stage module, found
    without importing any subpackage: each package's folder is listed, and the finder that listed it
    locates the module file and the nested packages' folders (``find_spec`` on a dotted name would
    import every parent package instead)."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError(f"{package} is not an importable package")
    sources: dict[str, str | None] = {}

    def visit(prefix: str, locations: list[str], depth: int) -> None:
        for module in pkgutil.iter_modules(locations):
            nested = module.ispkg and depth < DISCOVERY_DEPTH
            if not nested and (module.ispkg or depth == 0 or not is_command_module(module.name)):
                continue
            name = f"{prefix}.{module.name}"
            find_spec = getattr(module.module_finder, "find_spec", None)
            found = find_spec(name) if find_spec else None
            if nested:
                if found is not None and found.submodule_search_locations:
                    visit(name, list(found.submodule_search_locations), depth + 1)
                continue
            origin = getattr(found, "origin", None)
            sources[name] = origin if origin and origin.endswith(".py") else None

    visit(package, list(spec.submodule_search_locations), 0)
    return dict(sorted(sources.items()))


def command_modules(package: str = PACKAGE) -> list[str]:
    """Dotted names of the stage modules of ``package``, sorted: ``<package>.<sub>.[*_]cli`` and
    ``<package>.<sub>.<subsub>.[*_]cli``."""
    return list(_command_module_sources(package))


def registered_names(source: str) -> list[str]:
    """The sub-command names (and aliases) a stage module's source registers, read without running it.

    Follows ``subparsers`` from the first parameter of the module-level ``add_parser`` into the
    module-level helpers it is passed to (``add_images_parser(subparsers)``), and keeps the string
    literals of ``<that name>.add_parser("name", aliases=[...])`` and of any helper call that takes
    it first and the name second (``add_manifest_command(subparsers, "name", ...)``, the table
    commands' registration, :func:`nmtvariants.reporting.manifest.add_manifest_command`). Nested sub-commands
    (``actions = parser.add_subparsers(); actions.add_parser("apply")``) are on another object and
    are not commands. A name built at run time is not seen: the caller falls back to the full parser
    for any command missing from the index.
    """
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    names: list[str] = []
    seen: set[tuple[str, int]] = set()

    def visit(function_name: str, position: int) -> None:
        function = functions.get(function_name)
        if function is None or (function_name, position) in seen:
            return
        seen.add((function_name, position))
        parameters = [*function.args.posonlyargs, *function.args.args]
        if position >= len(parameters):
            return
        target = parameters[position].arg
        for node in ast.walk(function):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr == "add_parser"
                and isinstance(func.value, ast.Name)
                and func.value.id == target
            ):
                names.extend(_literal_names(node))
            elif isinstance(func, ast.Name):
                if _passes_first(node, target) and _is_text(node.args[1:2]):
                    names.append(node.args[1].value)  # a registration helper: (subparsers, "name", ...)
                for index, argument in enumerate(node.args):
                    if isinstance(argument, ast.Name) and argument.id == target:
                        visit(func.id, index)

    visit("add_parser", 0)
    return names


def _passes_first(call: ast.Call, target: str) -> bool:
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id == target


def _is_text(arguments: list[ast.expr]) -> bool:
    return bool(arguments) and isinstance(arguments[0], ast.Constant) and isinstance(arguments[0].value, str)


def _literal_names(call: ast.Call) -> list[str]:
    """The command name and aliases of one ``add_parser(...)`` call, where they are literals."""
    names = []
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        names.append(call.args[0].value)
    for keyword in call.keywords:
        if keyword.arg == "aliases" and isinstance(keyword.value, (ast.List, ast.Tuple)):
            names.extend(
                element.value
                for element in keyword.value.elts
                if isinstance(element, ast.Constant) and isinstance(element.value, str)
            )
    return names


def command_index(package: str = PACKAGE) -> dict[str, str]:
    """Command name -> the stage module that registers it, from the modules' source alone.

    A module whose source cannot be read or parsed contributes nothing (its commands then take the
    full parser's path, which reports the module's failure as before). A name seen in two modules
    is left out for the same reason: the full parser decides.
    """
    index: dict[str, str] = {}
    clashes: set[str] = set()
    for name, path in _command_module_sources(package).items():
        if path is None:
            continue
        try:
            commands = registered_names(Path(path).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for command in commands:
            if command in index and index[command] != name:
                clashes.add(command)
            index[command] = name
    return {command: module for command, module in index.items() if command not in clashes}


@dataclass
class Registration:
    """What registering the discovered modules gave: the modules that added commands, and the
    modules that could not be imported (module name -> one-line reason)."""

    loaded: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def register_commands(
    subparsers: argparse._SubParsersAction, package: str = PACKAGE, modules: list[str] | None = None
) -> Registration:
    """Import the stage modules of ``package`` (all of them, or ``modules``) and let each add its
    sub-commands."""
    registration = Registration()
    for name in command_modules(package) if modules is None else modules:
        try:
            module = importlib.import_module(name)
        except Exception as error:  # one broken stage must not hide the others
            registration.failed[name] = f"{type(error).__name__}: {error}".splitlines()[0]
            continue
        add_parser = getattr(module, "add_parser", None)
        if add_parser is None:
            registration.failed[name] = "defines no add_parser(subparsers)"
            continue
        add_parser(subparsers)
        registration.loaded.append(name)
    return registration


def _top_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(prog="nmtvariants", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"nmtvariants {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    return parser, subparsers


def build_parser(package: str = PACKAGE) -> argparse.ArgumentParser:
    """The full parser: every discovered stage module imported, a warning per broken one."""
    parser, subparsers = _top_parser()
    registration = register_commands(subparsers, package)
    for name, reason in registration.failed.items():
        print(f"nmtvariants: warning: the commands of {name} are unavailable ({reason})", file=sys.stderr)
    return parser


def requested_command(argv: list[str]) -> str | None:
    """The sub-command ``argv`` asks for, or None where only the full parser can answer: no command,
    or a top-level option other than ``-v/--verbose`` before it (``--help``, ``--version``, an
    abbreviation argparse would expand, a typo argparse must report)."""
    for token in argv:
        if token in ("-v", "--verbose"):
            continue
        if token.startswith("-"):
            return None
        return token
    return None


def build_parser_for(argv: list[str], package: str = PACKAGE) -> argparse.ArgumentParser:
    """The parser for ``argv``: only the stage module that defines its command, when the static index
    knows the command and that module imports and registers it; otherwise the full parser."""
    command = requested_command(argv)
    module = command_index(package).get(command) if command is not None else None
    if module is not None:
        parser, subparsers = _top_parser()
        registration = register_commands(subparsers, package, [module])
        if registration.loaded and command in subparsers.choices:
            return parser
    return build_parser(package)


def run() -> int:
    """The ``nmtvariants`` executable: in the workflow's fork server when a local run has one
    (:mod:`nmtvariants.fork_server`: the command starts with torch and the rest imported), otherwise
    :func:`main` here, then :func:`gc.freeze` before the interpreter exits.

    Every job of the workflow is a fresh process, and one that imported torch holds ~10^6 Python
    objects that the interpreter's last collections walk on the way out: 0.6-0.7 s of every torch job
    (``benchmarks/results/process_exit.md``). Frozen objects are skipped by those collections; files,
    atexit handlers and the standard streams are closed and flushed as before (every output of the
    pipeline is written and renamed before its command returns). Not in :func:`main`, which tests call
    in-process many times: frozen cyclic garbage is never freed there."""
    served = run_in_server(sys.argv[1:])
    if served is not None:
        return served
    status = main()
    gc.freeze()
    return status


def main(argv: list[str] | None = None) -> int:
    if "torch" not in sys.modules:  # in a fork of the server (fork_server) the server did it
        use_fast_mkl_kernels()  # before any command imports torch
    args = build_parser_for(sys.argv[1:] if argv is None else list(argv)).parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        result = args.func(args)
    except NMTVariantsError as error:
        print(f"nmtvariants {args.command}: error: {error}", file=sys.stderr)
        return EXIT_STATUS
    return int(result or 0)
