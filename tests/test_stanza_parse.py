"""The Stanza adapter: a clear error without models; with a tiny tagger and parser trained offline on
English PUD (slow), a Moses-tokenised corpus parsed line by line with the escapes restored.
"""

from __future__ import annotations

import pytest

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.syntax.conllu import read_conllu, write_conllu
from nmtvariants.syntax.stanza_parse import StanzaModels, parse_file
from nmtvariants.syntax.stanza_train import StanzaSizes, train_stanza


def test_missing_models_name_the_directory_and_how_to_get_them(tmp_path, capsys):
    models = tmp_path / "models"
    models.mkdir()
    corpus, out = tmp_path / "corpus.tok", tmp_path / "corpus.conllu"
    write_lines(corpus, ["a b ."])
    with pytest.raises(InputError) as error:
        parse_file(corpus, out, StanzaModels(models, "en"))
    message = str(error.value)
    assert str(models) in message and "en_tagger.pt, en_parser.pt" in message
    assert "nmtvariants stanza-train" in message and "--lang en" in message

    (models / "en_tagger.pt").write_bytes(b"")
    argv = ["parse", str(corpus), "-o", str(out), "--lang", "en", "--model-dir", str(models)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Stanza model(s) en_parser.pt for language 'en'" in err
    assert not out.exists()


@pytest.mark.slow
def test_tiny_offline_parser_parses_moses_tokens_line_by_line(real_data, tmp_path):
    """Train a deliberately tiny tagger + parser (seconds of steps) and run the real parse step."""
    treebank = "ud-pud/UD_English-PUD/en_pud-ud-test.conllu.gz"
    pud = read_conllu(real_data(treebank) / treebank)
    train, dev = tmp_path / "train.conllu", tmp_path / "dev.conllu"
    write_conllu(train, pud[:300])
    write_conllu(dev, pud[300:340])
    sizes = StanzaSizes(
        tagger_hidden=32,
        parser_hidden=32,
        char_hidden=16,
        biaffine_hidden=32,
        composite_hidden=16,
        parser_layers=1,
        batch_size=500,
    )
    models = train_stanza(train, dev, tmp_path / "models", "en", 8, 20, sizes=sizes)
    assert models.tagger.is_file() and models.parser.is_file()

    lines = [
        "Tom &apos;s cat &amp; dog sat on the mat .",
        "The &quot; big &quot; house &#91; sic &#93; is red .",
        "Tom 's cat & dog sat on the mat .",
        "Hello .",
    ]
    corpus = tmp_path / "corpus.tok"
    write_lines(corpus, lines)
    parsed = {}
    for batch in (1, 100):
        out = tmp_path / f"parsed.{batch}.conllu"
        argv = ["parse", str(corpus), "-o", str(out), "--lang", "en", "--model-dir", str(models.model_dir)]
        assert main([*argv, "--batch-size", str(batch), "--device", "cpu"]) == 0
        parsed[batch] = read_conllu(out)  # validates every tree
    sentences = parsed[1]
    assert [" ".join(s.forms) for s in sentences] == lines  # aligned, escapes restored
    # the parser saw the unescaped tokens: the escaped and the plain line parse the same
    assert sentences[0].heads == sentences[2].heads
    assert [w.upos for w in sentences[0].words] == [w.upos for w in sentences[2].words]
    assert [s.heads for s in parsed[100]] == [s.heads for s in sentences]  # batching changes nothing

    # the output feeds the parents step directly (BPE = the words themselves here)
    parents = tmp_path / "parents"
    assert (
        main(
            [
                "parents",
                "--conllu",
                str(tmp_path / "parsed.1.conllu"),
                "--bpe",
                str(corpus),
                "-o",
                str(parents),
            ]
        )
        == 0
    )
    assert len(list(read_lines(parents))) == len(lines)

    write_lines(corpus, ["a b .", ""])
    with pytest.raises(InputError, match=r"corpus.tok:2: empty line"):
        parse_file(corpus, tmp_path / "never.conllu", models)
