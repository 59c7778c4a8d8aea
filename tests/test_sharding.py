"""Sharded application must give exactly the bytes of the single-process run, in order."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from data_sources import RealData
from subword_nmt.apply_bpe import BPE
from subword_nmt.learn_bpe import learn_bpe

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.text.moses import NormalizeTokenize, Tokenizer
from nmtvariants.text.sharding import map_lines, process_file
from nmtvariants.text.truecase import Truecaser, train_truecaser


@pytest.fixture(scope="module")
def raw(real_data: RealData) -> list[str]:
    lines = list(read_lines(real_data.file("wmt/en-de/newstest2014.en.gz")))[:1500]
    # Empty lines keep their place through every step.
    for position in (0, 17, 500, 1499):
        lines.insert(position, "")
    return lines


def test_tokenize_two_processes_identical_files(raw: list[str], tmp_path: Path) -> None:
    write_lines(tmp_path / "in.txt", raw)
    step = NormalizeTokenize("en", aggressive_dash_splits=True)
    assert process_file(step, tmp_path / "in.txt", tmp_path / "one.txt", processes=1) == len(raw)
    assert process_file(step, tmp_path / "in.txt", tmp_path / "two.txt", 2, chunk_lines=97) == len(raw)
    assert (tmp_path / "one.txt").read_bytes() == (tmp_path / "two.txt").read_bytes()
    # and the single-process output is the plain loop
    expected = "".join(step(line) + "\n" for line in raw).encode()
    assert (tmp_path / "one.txt").read_bytes() == expected


def test_truecase_and_bpe_three_processes(raw: list[str], tmp_path: Path) -> None:
    tokenized = [Tokenizer("en")(line) for line in raw]
    train_truecaser(tokenized, tmp_path / "tc")
    truecase = Truecaser(tmp_path / "tc")
    truecased = [truecase(line) for line in tokenized]
    assert list(map_lines(truecase, tokenized, processes=3, chunk_lines=50)) == truecased

    codes = io.StringIO()
    learn_bpe(io.StringIO("\n".join(truecased)), codes, 300)
    codes.seek(0)
    bpe = BPE(codes)
    segmented = [bpe.process_line(line) for line in truecased]
    assert any("@@ " in line for line in segmented)
    assert list(map_lines(bpe.process_line, truecased, processes=2, chunk_lines=33)) == segmented


def _fail_on_marker(line: str) -> str:
    if "FAIL" in line:
        raise InputError(f"cannot process {line!r}")
    return line.upper()


def test_worker_errors_reach_the_caller() -> None:
    lines = ["a"] * 100 + ["FAIL"] + ["b"] * 100
    with pytest.raises(InputError, match="cannot process 'FAIL'"):
        list(map_lines(_fail_on_marker, lines, processes=2, chunk_lines=10))


def test_bad_settings() -> None:
    with pytest.raises(ConfigError, match="processes"):
        list(map_lines(str.upper, ["a"], processes=0))
    with pytest.raises(ConfigError, match="chunk_lines"):
        list(map_lines(str.upper, ["a"], processes=2, chunk_lines=0))


def test_empty_input() -> None:
    assert list(map_lines(str.upper, [], processes=2)) == []
