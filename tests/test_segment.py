"""ja/zh segmentation: the Moses detokenizer (``-l ja/zh``) must restore the unsegmented text."""

from __future__ import annotations

import pickle
import sys

import pytest
from data_sources import RealData

from nmtvariants.errors import ConfigError, MissingResourceError
from nmtvariants.fileio import read_lines
from nmtvariants.text.moses import Tokenizer
from nmtvariants.text.postprocess import InverseChain
from nmtvariants.text.segment import Segmenter, desegment
from nmtvariants.text.sharding import map_lines


def _check(lines: list[str], segmenter: Segmenter, lang: str) -> None:
    segmented = [segmenter(line) for line in lines]
    # real segmentation happened: many more tokens than whitespace words
    assert sum(len(s.split()) for s in segmented) > 3 * sum(len(line.split()) for line in lines)
    inverse = InverseChain(lang, bpe=False, truecased=False)
    no_spaces = exact = exact_chain = 0
    for line, seg in zip(lines, segmented, strict=True):
        assert "".join(seg.split()) == "".join(line.split())
        if not any(ch.isspace() for ch in line):
            # a line without spaces should come back exactly, through desegment alone and through
            # the whole inverse chain (Moses tokenizer/detokenizer + desegment); a space between two
            # non-CJK characters ("_ (") is kept by design, so a few lines may differ
            no_spaces += 1
            exact += desegment(seg) == line
            exact_chain += inverse(Tokenizer(lang)(seg)) == line
    assert no_spaces > 50
    assert exact >= 0.97 * no_spaces
    assert exact_chain >= 0.95 * no_spaces


def test_japanese_mecab_on_kftt(real_data: RealData) -> None:
    lines = list(read_lines(real_data.file("kftt/orig/kyoto-test.ja")))[:200]
    _check(lines, Segmenter("ja"), "ja")


@pytest.mark.parametrize("method", ["jieba", "chars"])
def test_chinese_on_flores(real_data: RealData, method: str) -> None:
    lines = list(read_lines(real_data.file("flores200-devtest/zho_Hans.devtest")))[:200]
    _check(lines, Segmenter("zh", method), "zh")


def test_chars_keeps_latin_runs() -> None:
    assert Segmenter("zh", "chars")("我用iPhone 12拍照。") == "我 用 iPhone 12 拍 照 。"


def test_segmenter_in_worker_processes(real_data: RealData) -> None:
    lines = list(read_lines(real_data.file("kftt/orig/kyoto-test.ja")))[:300]
    segmenter = Segmenter("ja")
    assert list(map_lines(segmenter, lines, processes=2, chunk_lines=40)) == [segmenter(x) for x in lines]
    assert pickle.loads(pickle.dumps(segmenter))(lines[0]) == segmenter(lines[0])


def test_bad_language_or_method() -> None:
    with pytest.raises(ConfigError, match="no segmenter"):
        Segmenter("de")
    with pytest.raises(ConfigError, match="not available"):
        Segmenter("ja", "jieba")


def test_missing_backend_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "fugashi", None)  # makes `import fugashi` fail
    with pytest.raises(MissingResourceError, match="pip install fugashi unidic-lite"):
        Segmenter("ja")("日本語")
