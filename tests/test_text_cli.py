"""The text sub-commands, run as a user runs them: files or stdin/stdout, exit codes, messages."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.text.moses import Detokenizer, Normalizer, Tokenizer

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-m", "nmtvariants", *args], input=stdin, capture_output=True, env=env
    )


@pytest.fixture(scope="module")
def raw_en(real_data: RealData) -> list[str]:
    lines = list(read_lines(real_data.file("multi30k/task1/raw/val.en.gz")))[:300]
    lines.insert(5, "")  # an empty line in a test set keeps its place
    return lines


def test_stdin_stdout_tokenize_matches_sacremoses_tool(raw_en: list[str]) -> None:
    data = ("\n".join(raw_en) + "\n").encode()
    ours = run_cli("tokenize", "-l", "en", "-j", "2", stdin=data)
    assert ours.returncode == 0, ours.stderr
    tool = subprocess.run(
        [str(Path(sys.executable).with_name("sacremoses")), "-l", "en", "-j", "1", "-q", "tokenize"],
        input=data,
        capture_output=True,
        check=True,
    )
    assert ours.stdout == tool.stdout
    assert ours.stdout.count(b"\n") == len(raw_en)


def test_file_chain_normalize_tokenize_truecase_postprocess(raw_en: list[str], tmp_path: Path) -> None:
    write_lines(tmp_path / "raw", raw_en)
    assert main(["normalize", "-l", "en", str(tmp_path / "raw"), "-o", str(tmp_path / "norm")]) == 0
    assert main(["tokenize", "-l", "en", "-a", str(tmp_path / "norm"), "-o", str(tmp_path / "tok")]) == 0
    assert main(["truecase", "train", "--model", str(tmp_path / "tc.model"), str(tmp_path / "tok")]) == 0
    args = ["truecase", "apply", "--model", str(tmp_path / "tc.model"), "-j", "2"]
    assert main([*args, str(tmp_path / "tok"), "-o", str(tmp_path / "tc")]) == 0
    args = ["postprocess", "-l", "en", "--truecased", str(tmp_path / "tc"), "-o", str(tmp_path / "out")]
    assert main(args) == 0
    normalized = [Normalizer("en")(line) for line in raw_en]
    tokenized = [Tokenizer("en", aggressive_dash_splits=True)(line) for line in normalized]
    assert list(read_lines(tmp_path / "norm")) == normalized
    assert list(read_lines(tmp_path / "tok")) == tokenized
    truecased = list(read_lines(tmp_path / "tc"))
    assert len(truecased) == len(raw_en) and truecased[5] == ""
    assert truecased[0].split()[0] == "a"  # "A man ..." -> truecased sentence start
    output = list(read_lines(tmp_path / "out"))
    assert sum(o == n for o, n in zip(output, normalized, strict=True)) >= 0.98 * len(raw_en)
    assert main(["truecase", "undo", str(tmp_path / "tc"), "-o", str(tmp_path / "undo")]) == 0
    assert main(["detokenize", "-l", "en", str(tmp_path / "tok"), "-o", str(tmp_path / "detok")]) == 0
    assert list(read_lines(tmp_path / "detok")) == [Detokenizer("en")(t) for t in tokenized]


def test_clean_cli_and_report(real_data: RealData, tmp_path: Path) -> None:
    tok = (
        real_data("multi30k/task1/tok/val.lc.norm.tok.en.gz", "multi30k/task1/tok/val.lc.norm.tok.de.gz")
        / "multi30k/task1/tok"
    )
    args = [
        "clean",
        "--src-in", str(tok / "val.lc.norm.tok.en.gz"),
        "--tgt-in", str(tok / "val.lc.norm.tok.de.gz"),
        "--src-out", str(tmp_path / "c.en"),
        "--tgt-out", str(tmp_path / "c.de"),
        "--max", "20",
        "--report", str(tmp_path / "drops.json"),
    ]  # fmt: skip
    assert main(args) == 0
    report = json.loads((tmp_path / "drops.json").read_text())
    src, tgt = read_lines(tok / "val.lc.norm.tok.en.gz"), read_lines(tok / "val.lc.norm.tok.de.gz")
    long_pairs = sum(len(a.split()) > 20 or len(b.split()) > 20 for a, b in zip(src, tgt, strict=True))
    assert report["dropped"]["too_long"] == long_pairs > 0
    assert report["kept"] == 1014 - long_pairs == len(list(read_lines(tmp_path / "c.de")))


def test_errors_are_one_clean_line(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.en", ["a", "b"])
    write_lines(tmp_path / "a.de", ["x"])
    result = run_cli(
        "clean", "--src-in", str(tmp_path / "a.en"), "--tgt-in", str(tmp_path / "a.de"),
        "--src-out", str(tmp_path / "o1"), "--tgt-out", str(tmp_path / "o2"),
    )  # fmt: skip
    assert result.returncode == 2
    message = result.stderr.decode()
    assert "a.en has 2 lines" in message and "a.de has 1 lines" in message
    assert "Traceback" not in message and len(message.strip().splitlines()) == 1


def test_more_errors_in_process(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fine\nbad \xff here\n")))
    assert main(["tokenize", "-l", "en"]) == 2
    assert "<stdin>:2: invalid UTF-8 at byte offset 4" in capsys.readouterr().err

    assert main(["tokenize", "-l", "en", str(tmp_path / "missing.txt")]) == 2
    assert "file not found" in capsys.readouterr().err

    assert main(["truecase", "apply", "--model", str(tmp_path / "nomodel"), str(tmp_path)]) == 2
    assert "truecase train" in capsys.readouterr().err

    args = ["roundtrip", "-l", "en", "--json", str(tmp_path / "x.json")]
    args += [f"--{stage}={tmp_path / 'nothing'}" for stage in ("raw", "tok", "tc", "bpe")]
    assert main(args) == 2
    assert "file not found" in capsys.readouterr().err

    write_lines(tmp_path / "t", ["a b"])
    assert main(["postprocess", "-l", "ru", "--translit-reverse", "nope", str(tmp_path / "t")]) == 2
    assert "expected 'package.module:function'" in capsys.readouterr().err


def test_crlf_is_normalised_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "crlf.txt").write_bytes(b"Hello, world!\r\n\r\nBye.\r\n")
    result = run_cli("tokenize", "-l", "en", str(tmp_path / "crlf.txt"))
    assert result.returncode == 0
    assert result.stdout == b"Hello , world !\n\nBye .\n"
    assert "CRLF" in result.stderr.decode()
