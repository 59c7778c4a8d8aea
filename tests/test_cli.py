"""The command line: every stage module registers distinct sub-commands, each with --help."""

from __future__ import annotations

import subprocess
import sys

from nmtvariants.cli import build_parser


def test_every_subcommand_is_registered_once_and_documented():
    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices
    assert len(choices) >= 10


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


def test_every_subcommand_has_a_one_line_summary_in_the_top_level_help():
    """`nmtvariants --help` lists each command with what it does (argparse prints nothing for a
    sub-command registered without ``help=``)."""
    parser = build_parser()
    subparsers = parser._subparsers._group_actions[0]
    summaries = {action.dest: action.help for action in subparsers._choices_actions}
    assert sorted(summaries) == sorted(subparsers.choices)
    missing = [name for name, text in summaries.items() if not text or not text.strip()]
    assert missing == []
