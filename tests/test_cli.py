"""The command line: stage modules are discovered, each registers distinct documented sub-commands,
and a stage that fails to import costs only its own commands."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nmtvariants.cli import build_parser, command_modules, register_commands

SRC = Path(__file__).resolve().parents[1] / "src" / "nmtvariants"


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return parser._subparsers._group_actions[0].choices


def test_discovery_finds_every_cli_module_on_disk():
    """Independent listing: the file system, not pkgutil."""
    on_disk = sorted(
        f"nmtvariants.{path.parent.name}.{path.stem}"
        for path in SRC.glob("*/*.py")
        if (path.parent / "__init__.py").exists() and (path.stem == "cli" or path.stem.endswith("_cli"))
    )
    assert command_modules() == on_disk
    assert "nmtvariants.text.bpe_cli" in on_disk and "nmtvariants.training.cli" in on_disk


def test_commands_are_exactly_what_the_modules_register():
    """Each module's add_parser run on its own parser; the union, with no name registered twice,
    must equal the commands of the real parser."""
    expected: dict[str, str] = {}
    for name in command_modules():
        own = argparse.ArgumentParser(prog="nmtvariants")
        sub = own.add_subparsers(dest="command")
        importlib.import_module(name).add_parser(sub)
        registered = choices(own)
        assert registered, f"{name} registers no command"
        for command in registered:
            assert command not in expected, f"{command} registered by {expected.get(command)} and {name}"
            expected[command] = name
    parser = build_parser()
    assert set(choices(parser)) == set(expected)


def test_every_subcommand_has_a_one_line_summary_in_the_top_level_help():
    """`nmtvariants --help` lists each command with what it does (argparse prints nothing for a
    sub-command registered without ``help=``)."""
    parser = build_parser()
    subparsers = parser._subparsers._group_actions[0]
    summaries = {action.dest: action.help for action in subparsers._choices_actions}
    assert sorted(summaries) == sorted(subparsers.choices)
    missing = [name for name, text in summaries.items() if not text or not text.strip()]
    assert missing == []


def write_package(root: Path, package: str) -> None:
    """A package with one good, one broken and one parser-less stage; unique name per test, since
    imported packages stay in sys.modules."""
    files = {
        "fakepkg/__init__.py": "",
        "fakepkg/good/__init__.py": "",
        "fakepkg/good/cli.py": """
            def add_parser(subparsers):
                p = subparsers.add_parser("hello", help="say hello")
                p.set_defaults(func=lambda args: print("hello") or 0)
            """,
        "fakepkg/good/helpers.py": "raise RuntimeError('not a command module: never imported')\n",
        "fakepkg/broken/__init__.py": "",
        "fakepkg/broken/probe_cli.py": "import a_module_that_is_not_installed\n",
        "fakepkg/noparser/__init__.py": "",
        "fakepkg/noparser/cli.py": "X = 1\n",
        "fakepkg/late/__init__.py": "",
    }
    for name, text in files.items():
        path = root / name.replace("fakepkg", package)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_a_broken_stage_costs_only_its_own_commands(tmp_path, monkeypatch, capsys):
    write_package(tmp_path, "fakepkg_a")
    monkeypatch.syspath_prepend(str(tmp_path))
    parser = build_parser("fakepkg_a")
    assert set(choices(parser)) == {"hello"}
    warnings = capsys.readouterr().err.splitlines()
    assert len(warnings) == 2
    assert "fakepkg_a.broken.probe_cli are unavailable (ModuleNotFoundError" in warnings[0]
    assert "fakepkg_a.noparser.cli are unavailable (defines no add_parser" in warnings[1]
    args = parser.parse_args(["hello"])
    assert args.func(args) == 0


def test_a_module_added_later_is_discovered(tmp_path, monkeypatch):
    """What a study does: drop `<subpackage>/cli.py` in, edit nothing else."""
    write_package(tmp_path, "fakepkg_b")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = command_modules("fakepkg_b")
    assert "fakepkg_b.late.cli" not in before
    (tmp_path / "fakepkg_b/late/cli.py").write_text(
        "def add_parser(subparsers):\n    subparsers.add_parser('late').set_defaults(func=None)\n",
        encoding="utf-8",
    )
    importlib.invalidate_caches()
    assert command_modules("fakepkg_b") == sorted([*before, "fakepkg_b.late.cli"])
    sub = argparse.ArgumentParser().add_subparsers()
    registration = register_commands(sub, "fakepkg_b")
    assert registration.loaded == ["fakepkg_b.good.cli", "fakepkg_b.late.cli"]
    assert set(registration.failed) == {"fakepkg_b.broken.probe_cli", "fakepkg_b.noparser.cli"}


def test_discovering_a_missing_package_is_an_error():
    with pytest.raises(ModuleNotFoundError):
        command_modules("no_such_package_anywhere")


def test_user_error_is_one_line_without_traceback(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "nmtvariants",
            "data-stats",
            str(tmp_path / "train.en"),
            "--out",
            str(tmp_path / "x.md"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "train.en: file not found" in result.stderr
