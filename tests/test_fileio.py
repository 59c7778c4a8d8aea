"""Atomic writes and strict text reading: the guarantees every stage relies on."""

from __future__ import annotations

import gzip
import logging

import pytest

from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write, count_lines, read_lines, write_lines


def test_atomic_write_leaves_no_file_when_interrupted(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_write(target) as out:
        out.write("half a file")
        raise RuntimeError("killed")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_keeps_previous_version_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    write_lines(target, ["old"])
    with pytest.raises(KeyboardInterrupt), atomic_write(target) as out:
        out.write("new")
        raise KeyboardInterrupt
    assert target.read_text() == "old\n"


def test_gzip_output_is_deterministic_and_readable(tmp_path):
    first, second = tmp_path / "a.gz", tmp_path / "b.gz"
    write_lines(first, ["ä", "", "b"])
    write_lines(second, ["ä", "", "b"])
    assert first.read_bytes() == second.read_bytes()
    assert gzip.decompress(first.read_bytes()).decode() == "ä\n\nb\n"
    assert list(read_lines(first)) == ["ä", "", "b"]


def test_invalid_utf8_names_file_line_and_offset(tmp_path):
    bad = tmp_path / "bad.de"
    bad.write_bytes(b"gut\nschl" + b"\xe4" + b"cht\n")
    with pytest.raises(InputError) as error:
        list(read_lines(bad))
    message = str(error.value)
    assert f"{bad}:2" in message
    assert "byte offset 4" in message
    assert "UTF-8" in message


def test_crlf_normalised_with_one_warning(tmp_path, caplog):
    path = tmp_path / "win.en"
    path.write_bytes(b"one\r\ntwo\r\n\r\nfour")
    with caplog.at_level(logging.WARNING):
        assert list(read_lines(path)) == ["one", "two", "", "four"]
    assert sum("CRLF" in record.message for record in caplog.records) == 1
    assert count_lines(path) == 4


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        list(read_lines(tmp_path / "nope.txt"))
