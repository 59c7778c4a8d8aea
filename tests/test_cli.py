"""The command line: stage modules are discovered, each registers distinct documented sub-commands,
and a stage that fails to import costs only its own commands."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nmtvariants.cli import (
    build_parser,
    build_parser_for,
    command_index,
    command_modules,
    register_commands,
    registered_names,
    requested_command,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "nmtvariants"


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return parser._subparsers._group_actions[0].choices


def test_discovery_finds_every_cli_module_on_disk():
    """Independent listing: the file system, not pkgutil."""
    on_disk = sorted(
        "nmtvariants." + ".".join(path.relative_to(SRC).with_suffix("").parts)
        for path in [*SRC.glob("*/*.py"), *SRC.glob("*/*/*.py")]
        if (path.stem == "cli" or path.stem.endswith("_cli"))
        and (path.parent / "__init__.py").exists()
        and (path.parent.parent / "__init__.py").exists()
    )
    assert command_modules() == on_disk
    assert "nmtvariants.text.bpe_cli" in on_disk and "nmtvariants.training.cli" in on_disk
    assert "nmtvariants.studies.emelin2019.cli" in on_disk


def test_discovery_reaches_packages_within_subpackages_without_importing_them(tmp_path, monkeypatch):
    """A study's package (``<sub>/<study>/cli.py``) is found like a stage of its own; deeper modules
    and modules at the top are not stages, and listing imports none of the packages (their
    ``__init__`` raises here)."""
    files = {
        "__init__.py": "",
        "cli.py": "",
        "group/__init__.py": "raise RuntimeError('imported while discovering')",
        "group/cli.py": "",
        "group/study/__init__.py": "raise RuntimeError('imported while discovering')",
        "group/study/cli.py": "",
        "group/study/extra_cli.py": "",
        "group/study/tables.py": "",
        "group/study/deeper/__init__.py": "",
        "group/study/deeper/cli.py": "",
    }
    for name, text in files.items():
        path = tmp_path / "fakepkg_nested" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert command_modules("fakepkg_nested") == [
        "fakepkg_nested.group.cli",
        "fakepkg_nested.group.study.cli",
        "fakepkg_nested.group.study.extra_cli",
    ]
    assert "fakepkg_nested.group" not in sys.modules


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


def test_the_static_index_lists_exactly_what_each_module_registers():
    """The ast index (read from source) against the real thing: each module imported and its
    add_parser run on a fresh parser, aliases included. Catches any drift between the two."""
    index = command_index()
    for name in command_modules():
        own = argparse.ArgumentParser(prog="nmtvariants")
        sub = own.add_subparsers(dest="command")
        importlib.import_module(name).add_parser(sub)
        imported = sorted(choices(own))
        source = Path(importlib.util.find_spec(name).origin).read_text(encoding="utf-8")
        assert sorted(registered_names(source)) == imported, name
        assert sorted(command for command, module in index.items() if module == name) == imported, name


def test_the_lazy_parser_gives_every_command_the_same_help_as_the_full_parser():
    """What users see per command does not depend on how the parser was built."""
    full = choices(build_parser())
    by_module: dict[str, list[str]] = {}
    for command, module in command_index().items():
        by_module.setdefault(module, []).append(command)
    for module, commands in by_module.items():
        lazy = choices(build_parser_for([commands[0]]))
        assert sorted(lazy) == sorted(commands), module
        for command in commands:
            assert lazy[command].format_help() == full[command].format_help(), command


def test_requested_command_skips_verbose_and_leaves_other_options_to_the_full_parser():
    assert requested_command(["-v", "tokenize", "-l", "en"]) == "tokenize"
    assert requested_command(["--verbose", "train", "--help"]) == "train"
    for argv in ([], ["--help"], ["-h", "tokenize"], ["--version"], ["--verb", "tokenize"], ["-v"]):
        assert requested_command(argv) is None, argv


def test_the_source_reader_follows_subparsers_into_helpers_and_skips_nested_commands():
    source = textwrap.dedent(
        """
        def add_parser(subparsers):
            p = subparsers.add_parser("top", aliases=["t", "tp"], help="x")
            actions = p.add_subparsers()
            actions.add_parser("nested")
            _more(p, subparsers)
            subparsers.add_parser(NAME)

        def _more(parser, where):
            where.add_parser("helper")
            parser.add_argument("--x")

        def unrelated(subparsers):
            subparsers.add_parser("never-called")
        """
    )
    assert registered_names(source) == ["top", "t", "tp", "helper"]


def test_the_source_reader_takes_a_helper_calls_literal_name_after_subparsers():
    source = textwrap.dedent(
        """
        from nmtvariants.reporting.manifest import add_manifest_command

        def add_parser(subparsers):
            add_manifest_command(subparsers, "imported-helper", "help", "manifest", run)
            _table(subparsers, "own-helper", "help")
            _table(subparsers, NAME, "help")
            log(subparsers, 3)
            other("not-a-command", subparsers)

        def _table(subparsers, name, help):
            return add_manifest_command(subparsers, name, help, "manifest", run)
        """
    )
    assert registered_names(source) == ["imported-helper", "own-helper"]


def write_lazy_package(root: Path, package: str) -> None:
    """Stages whose imports leave a trace in sys.modules, one with a command name the source
    reader cannot see, one that fails to import."""
    files = {
        "__init__.py": "",
        "one/__init__.py": "",
        "one/cli.py": f"""
            import {package}_marker_one
            def add_parser(subparsers):
                subparsers.add_parser("first", help="one").set_defaults(func=lambda args: 0)
            """,
        "two/__init__.py": "",
        "two/cli.py": """
            NAME = "dyn" + "amic"
            def add_parser(subparsers):
                subparsers.add_parser(NAME, help="two").set_defaults(func=lambda args: 0)
            """,
        "three/__init__.py": "",
        "three/cli.py": """
            import a_module_that_is_not_installed
            def add_parser(subparsers):
                subparsers.add_parser("broken", help="three")
            """,
    }
    for name, text in files.items():
        path = root / package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    (root / f"{package}_marker_one.py").write_text("", encoding="utf-8")


def test_only_the_commands_module_is_imported_and_unknown_names_take_the_full_path(
    tmp_path, monkeypatch, capsys
):
    write_lazy_package(tmp_path, "fakepkg_c")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert command_index("fakepkg_c") == {"first": "fakepkg_c.one.cli", "broken": "fakepkg_c.three.cli"}

    parser = build_parser_for(["first"], "fakepkg_c")
    assert set(choices(parser)) == {"first"}
    assert "fakepkg_c.one.cli" in sys.modules and "fakepkg_c.two.cli" not in sys.modules
    assert capsys.readouterr().err == ""

    # a name only the import shows: the full parser finds it
    parser = build_parser_for(["dynamic"], "fakepkg_c")
    assert set(choices(parser)) == {"first", "dynamic"}
    assert "fakepkg_c.three.cli are unavailable (ModuleNotFoundError" in capsys.readouterr().err

    # the indexed module is broken: the full parser's warning, then argparse's error
    parser = build_parser_for(["broken"], "fakepkg_c")
    assert "fakepkg_c.three.cli are unavailable (ModuleNotFoundError" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["broken"])
    assert exit_info.value.code == 2


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)


def test_a_text_command_imports_neither_torch_nor_the_other_stages():
    """What the lazy dispatch is for: `nmtvariants tokenize` in a fresh process stays light."""
    result = run_python(
        "import sys\n"
        "from nmtvariants.cli import main\n"
        "try:\n"
        "    main(['tokenize', '--help'])\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "stages = sorted(m for m in sys.modules if m.endswith('cli') and m.count('.') >= 2)\n"
        "print(code, 'torch' in sys.modules, 'matplotlib' in sys.modules, ','.join(stages))\n"
    )
    assert result.returncode == 0, result.stderr
    last = result.stdout.splitlines()[-1]
    assert last == "0 False False nmtvariants.text.cli", last
    assert "usage: nmtvariants tokenize" in result.stdout


def test_an_unknown_command_exits_2_with_argparses_list_of_every_command():
    result = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "-v", "tokenise"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "argument COMMAND: invalid choice: 'tokenise' (choose from " in result.stderr
    listed = result.stderr.split("choose from ", 1)[1]
    assert all(f"'{command}'" in listed for command in command_index())
