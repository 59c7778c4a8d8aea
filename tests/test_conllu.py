"""CoNLL-U reader/writer: byte-exact round trip on the real English PUD treebank, and clear errors."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.errors import InputError
from nmtvariants.syntax.conllu import format_sentence, make_sentence, read_conllu, write_conllu

PUD = "ud-pud/UD_English-PUD/en_pud-ud-test.conllu.gz"


@pytest.fixture(scope="module")
def pud(real_data: RealData) -> tuple[Path, str]:
    path = real_data.file(PUD)
    return path, gzip.decompress(path.read_bytes()).decode("utf-8")


def test_pud_round_trip_is_byte_identical(pud: tuple[Path, str], tmp_path: Path) -> None:
    path, original = pud
    sentences = read_conllu(path)
    assert len(sentences) == 1000
    # Independent counts straight from the text.
    assert sum(len(s.words) for s in sentences) == len(re.findall(r"^\d+\t", original, flags=re.M))
    ranges = re.findall(r"^\d+-\d+\t.*$", original, flags=re.M)
    assert len(ranges) == 129
    assert sum(len(s.multiword) for s in sentences) == len(ranges)
    assert sum(len(s.empty_nodes) for s in sentences) == len(re.findall(r"^\d+\.\d+\t", original, flags=re.M))
    assert "".join(format_sentence(s) for s in sentences) == original
    out = tmp_path / "pud.conllu"
    assert write_conllu(out, sentences) == 1000
    assert out.read_text(encoding="utf-8") == original
    # Multiword token lines come back in place, e.g. "I'm" before its two words.
    assert any(line.startswith("2-3\tI'm\t") for line in out.read_text(encoding="utf-8").splitlines())


def test_pud_fields(pud: tuple[Path, str]) -> None:
    path, _ = pud
    first = read_conllu(path)[0]
    assert first.sent_id == "n01001011"
    assert first.text.startswith("“While much of the digital transition")
    assert first.words[28].form == "wrote" and first.words[28].head == 0 and first.words[28].deprel == "root"
    assert first.heads[:3] == [20, 9, 9]


def test_gzip_write_round_trip(tmp_path: Path) -> None:
    sentence = make_sentence(
        ["Dogs", "bark", "."],
        [2, 0, 2],
        ["nsubj", "root", "punct"],
        upos=["NOUN", "VERB", "PUNCT"],
        space_after=[True, False, True],
        comments=["# sent_id = 1", "# text = Dogs bark."],
    )
    out = tmp_path / "x.conllu.gz"
    write_conllu(out, [sentence, sentence])
    back = read_conllu(out)
    assert back == [sentence, sentence]
    assert back[0].words[1].misc == "SpaceAfter=No"


def _write(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "bad.conllu"
    lines = ["# sent_id = ok", "1\tA\t_\t_\t_\t_\t0\troot\t_\t_", ""]
    lines += ["# sent_id = broken", *rows, ""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _row(i: int, head: str, deprel: str) -> str:
    return f"{i}\tw{i}\t_\t_\t_\t_\t{head}\t{deprel}\t_\t_"


@pytest.mark.parametrize(
    ("rows", "line", "words"),
    [
        ([_row(1, "0", "root"), _row(2, "0", "root")], 6, "2 root words"),
        ([_row(1, "0", "root"), _row(2, "7", "obj")], 6, "out of range 0..2"),
        ([_row(1, "0", "root"), _row(2, "3", "obj"), _row(3, "2", "obj")], 6, "cycle"),
        ([_row(1, "0", "root"), _row(2, "x", "obj")], 6, "not a number"),
        ([_row(1, "0", "root"), _row(3, "1", "obj")], 6, "expected 2"),
        ([_row(1, "0", "root"), "2\tw\t_\t_\t_\t_\t1\tobj"], 6, "expected 10"),
        ([_row(1, "0", "root"), _row(2, "2", "obj")], 6, "its own head"),
        ([_row(1, "2", "nsubj"), _row(2, "1", "obj")], 4, "0 root words"),
    ],
)
def test_broken_tree_names_file_and_line(tmp_path: Path, rows: list[str], line: int, words: str) -> None:
    path = _write(tmp_path, rows)
    with pytest.raises(InputError) as error:
        read_conllu(path)
    message = str(error.value)
    assert f"{path}:{line}" in message
    assert words in message


def test_unvalidated_read_keeps_blank_heads(tmp_path: Path) -> None:
    path = _write(tmp_path, [_row(1, "_", "_"), _row(2, "_", "_")])
    with pytest.raises(InputError, match="no head"):
        read_conllu(path)
    sentences = read_conllu(path, validate=False)
    assert sentences[1].heads == [None, None]
    assert format_sentence(sentences[1]).splitlines()[1] == _row(1, "_", "_")
