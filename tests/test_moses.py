"""Moses steps: our wrappers against the real sacremoses command-line tool and Moses' conventions."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.fileio import read_lines
from nmtvariants.text.moses import Detokenizer, Normalizer, NormalizeTokenize, Tokenizer

SACREMOSES = Path(sys.executable).with_name("sacremoses")


def sacremoses_cli(lang: str, lines: list[str], *commands: str) -> list[str]:
    """The plain `sacremoses` tool (an independent process, its own click pipeline)."""
    result = subprocess.run(
        [str(SACREMOSES), "-l", lang, "-j", "1", "-q", *commands],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.split("\n")[:-1]


@pytest.fixture(scope="module")
def newstest_en(real_data: RealData) -> list[str]:
    return list(read_lines(real_data.file("wmt/en-de/newstest2014.en.gz")))[:400]


@pytest.fixture(scope="module")
def newstest_de(real_data: RealData) -> list[str]:
    return list(read_lines(real_data.file("wmt/en-de/newstest2014.de.gz")))[:400]


@pytest.mark.parametrize("aggressive", [False, True])
def test_tokenizer_equals_sacremoses_cli(newstest_de: list[str], aggressive: bool) -> None:
    flags = ["-a"] if aggressive else []
    expected = sacremoses_cli("de", newstest_de, "tokenize", *flags)
    tokenizer = Tokenizer("de", aggressive_dash_splits=aggressive)
    assert [tokenizer(line) for line in newstest_de] == expected


def test_detokenizer_equals_sacremoses_cli(newstest_en: list[str]) -> None:
    tokenized = [Tokenizer("en")(line) for line in newstest_en]
    expected = sacremoses_cli("en", tokenized, "detokenize")
    assert [Detokenizer("en")(line) for line in tokenized] == expected


def test_aggressive_hyphen_split_and_escape() -> None:
    line = 'The 26-year-old said: "R&D <costs> [are] high" | 50% ok'
    assert Tokenizer("en", aggressive_dash_splits=True)(line) == (
        "The 26 @-@ year @-@ old said : &quot; R &amp; D &lt; costs &gt; &#91; are &#93; high "
        "&quot; &#124; 50 % ok"
    )
    assert Tokenizer("en", escape=False)(line) == (
        'The 26-year-old said : " R & D < costs > [ are ] high " | 50 % ok'
    )
    # detokenize undoes the @-@ splits and the escapes; like detokenizer.perl it cannot know that
    # "R & D" was one word (a mismatch class the round-trip report counts)
    tokens = Tokenizer("en", aggressive_dash_splits=True)(line)
    assert Detokenizer("en")(tokens) == 'The 26-year-old said: "R & D < costs > [are] high" | 50% ok'


def test_normalizer_moses_perl_mappings() -> None:
    normalize = Normalizer("de")
    # „ “ ” become ", – becomes -, … becomes ..., « » become ", a lone ’ becomes " (perl parity)
    assert normalize("„Hallo“ – sagte er… «gut» ’so’") == '"Hallo" - sagte er... "gut" "so"'
    # between letters ’ is an apostrophe
    assert normalize("it’s") == "it's"
    assert Normalizer("de", perl_parity=False)("’so’") == "'so'"
    # German: "quotation", followed by comma -> ", ; a final ." is moved outside as perl does
    assert normalize('Er sagte: "Ja."') == 'Er sagte: "Ja".'
    assert normalize("  doppelte   Leerzeichen ") == "doppelte Leerzeichen"
    assert Normalizer("en", lowercase=True)("ABC") == "abc"


def test_empty_lines_stay_empty() -> None:
    for step in (Normalizer("en"), Tokenizer("en"), Detokenizer("en"), NormalizeTokenize("en")):
        assert step("") == ""


def test_steps_pickle_for_worker_processes() -> None:
    step = NormalizeTokenize("fr", aggressive_dash_splits=True)
    clone = pickle.loads(pickle.dumps(step))
    line = "L’homme a dit « bonjour » à l'arrêt-minute."
    assert clone(line) == step(line)
