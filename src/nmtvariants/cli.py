"""The `nmtvariants` command: one sub-command per pipeline stage.

Each stage module exposes ``add_parser(subparsers)`` that registers its sub-command(s) and sets
``func`` on the parsed namespace. Stage modules are *discovered*, not listed: every module named
``cli`` or ending in ``_cli`` directly inside a subpackage of ``nmtvariants`` (``text/cli.py``,
``text/bpe_cli.py``, ``analysis/cli.py``, ...). A study adds its commands by adding such a module,
without editing a shared list. Discovery reads directory listings only (``pkgutil.iter_modules``
on each subpackage's search path, which imports no subpackage), and a module that fails to import
costs only its own commands, with a one-line warning, so that a broken optional stage cannot take
the others down.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import pkgutil
import sys
from dataclasses import dataclass, field

from nmtvariants import __version__
from nmtvariants.errors import NMTVariantsError

PACKAGE = "nmtvariants"


def is_command_module(name: str) -> bool:
    return name == "cli" or name.endswith("_cli")


def command_modules(package: str = PACKAGE) -> list[str]:
    """Dotted names of the stage modules of ``package``, sorted: ``<package>.<sub>.[*_]cli``."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.submodule_search_locations is None:
        raise ModuleNotFoundError(f"{package} is not an importable package")
    names = []
    for sub in pkgutil.iter_modules(spec.submodule_search_locations):
        if not sub.ispkg:
            continue
        sub_spec = importlib.util.find_spec(f"{package}.{sub.name}")
        if sub_spec is None or sub_spec.submodule_search_locations is None:
            continue
        for module in pkgutil.iter_modules(sub_spec.submodule_search_locations):
            if not module.ispkg and is_command_module(module.name):
                names.append(f"{package}.{sub.name}.{module.name}")
    return sorted(names)


@dataclass
class Registration:
    """What registering the discovered modules gave: the modules that added commands, and the
    modules that could not be imported (module name -> one-line reason)."""

    loaded: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def register_commands(subparsers: argparse._SubParsersAction, package: str = PACKAGE) -> Registration:
    """Import every stage module of ``package`` and let it add its sub-commands."""
    registration = Registration()
    for name in command_modules(package):
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


def build_parser(package: str = PACKAGE) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="nmtvariants", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"nmtvariants {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    registration = register_commands(subparsers, package)
    for name, reason in registration.failed.items():
        print(f"nmtvariants: warning: the commands of {name} are unavailable ({reason})", file=sys.stderr)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        result = args.func(args)
    except NMTVariantsError as error:
        print(f"nmtvariants {args.command}: error: {error}", file=sys.stderr)
        return 2
    return int(result or 0)
