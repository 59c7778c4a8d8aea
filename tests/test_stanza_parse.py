"""The Stanza adapter: a clear error without models; with a tiny tagger and parser trained offline on
English PUD (slow), a Moses-tokenised corpus parsed line by line with the escapes restored.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import pandas as pd
import pytest
import torch
from manifests import files_manifest
from stanza.models import parser as stanza_parser
from stanza.models import tagger as stanza_tagger
from workflow_configs import REPO, snakemake

from nmtvariants.cli import build_parser_for, main
from nmtvariants.corpora.catalogue import get_corpus
from nmtvariants.errors import InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.studies.bugliarello2020.plan import Bugliarello2020Plan
from nmtvariants.syntax.attachment import attachment_scores
from nmtvariants.syntax.cli import SIZE_FLAGS
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


def _stanza_train_sizes(options: list[str]) -> StanzaSizes:
    argv = ["stanza-train", "--train", "t", "--dev", "d", "--lang", "en", "--model-dir", "m", *options]
    args = build_parser_for(argv).parse_args([*argv, "--tagger-steps", "1", "--parser-steps", "1"])
    return StanzaSizes(**{name: getattr(args, name) for name in SIZE_FLAGS})


def test_parser_train_settings_reach_stanzas_own_options():
    """`parser_train` in the config -> the rule's `stanza-train` options -> the options of Stanza's own
    tagger and parser entry points, read back through Stanza's argparse: the tagger batch counts
    sentences, the parser batch words, and the tagger's classifiers are linear (--share_hid) unless
    `tagger_biaffine` asks for Stanza's bilinear ones."""
    train = {"tagger_batch": 7, "parser_batch": 900, "tagger_hidden": 48, "tagger_biaffine": True}
    plan = Bugliarello2020Plan({"studies": {"bugliarello2020": {"parser_train": train}}}, {})
    options = plan.parser_train_args()
    assert "--tagger-biaffine" in options and "True" in options  # YAML's true, as the rule writes it
    sizes = _stanza_train_sizes([option for option in options if option not in ("--device", "cpu")])
    assert (sizes.tagger_batch, sizes.parser_batch, sizes.tagger_hidden) == (7, 900, 48)
    assert sizes.tagger_biaffine is True

    common = ["--mode", "train", "--no_pretrain"]
    tagger = vars(stanza_tagger.build_argparse().parse_args([*common, *sizes.tagger_args()]))
    assert (tagger["batch_size"], tagger["hidden_dim"], tagger["share_hid"]) == (7, 48, False)
    parser = vars(stanza_parser.build_argparse().parse_args([*common, *sizes.parser_args()]))
    assert (parser["batch_size"], parser["num_layers"]) == (900, StanzaSizes().parser_layers)

    default = vars(
        stanza_tagger.build_argparse().parse_args([*common, *_stanza_train_sizes([]).tagger_args()])
    )
    assert default["share_hid"] is True and default["batch_size"] == StanzaSizes().tagger_batch
    assert _stanza_train_sizes(["--tagger-biaffine", "0"]).tagger_biaffine is False
    with pytest.raises(SystemExit) as exit_info:
        _stanza_train_sizes(["--tagger-biaffine", "maybe"])
    assert exit_info.value.code == 2


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
        tagger_batch=50,
        parser_batch=500,
        tagger_biaffine=True,  # Stanza's bilinear XPOS/UFeats classifiers (the GPU recipe)
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


# --- UAS / LAS ---------------------------------------------------------------------------------

GOLD = """# text = I don't like cats.
1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tAUX\t_\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\t_\t_\t4\tadvmod\t_\t_
4\tlike\tlike\tVERB\t_\t_\t0\troot\t_\t_
5\tcats\tcat\tNOUN\t_\t_\t4\tobj\t_\t_
6\t.\t.\tPUNCT\t_\t_\t4\tpunct\t_\t_

# text = Her cat sleeps.
1\tHer\ther\tPRON\t_\t_\t2\tnmod:poss\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsleeps\tsleep\tVERB\t_\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

"""
# do: wrong UPOS; n't: wrong head; cats: right head, wrong relation; '.': wrong head (punctuation
# counts); Her: `nmod` for `nmod:poss` (LAS compares the universal relation, so it is right).
PREDICTED = """# text = I don't like cats.
1\tI\tI\tPRON\t_\t_\t4\tnsubj\t_\t_
2-3\tdon't\t_\t_\t_\t_\t_\t_\t_\t_
2\tdo\tdo\tVERB\t_\t_\t4\taux\t_\t_
3\tn't\tnot\tPART\t_\t_\t2\tadvmod\t_\t_
4\tlike\tlike\tVERB\t_\t_\t0\troot\t_\t_
5\tcats\tcat\tNOUN\t_\t_\t4\tnsubj\t_\t_
6\t.\t.\tPUNCT\t_\t_\t5\tpunct\t_\t_

# text = Her cat sleeps.
1\tHer\ther\tPRON\t_\t_\t2\tnmod\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tsleeps\tsleep\tVERB\t_\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t_\t_\t3\tpunct\t_\t_

"""


def conll18_scores(gold_path, predicted_path) -> dict[str, float]:
    """The CoNLL 2018 shared task's scorer (udtools, as Stanza ships it), in percent."""
    from stanza.models.common.utils import ud_scores

    evaluation = ud_scores(str(gold_path), str(predicted_path))
    return {metric.lower(): 100 * evaluation[metric].f1 for metric in ("UPOS", "UAS", "LAS")}


def test_attachment_scores_by_hand_and_by_the_conll18_scorer(tmp_path):
    gold_path, predicted_path = tmp_path / "gold.conllu", tmp_path / "pred.conllu"
    gold_path.write_text(GOLD)
    predicted_path.write_text(PREDICTED)
    scores = attachment_scores(read_conllu(gold_path), read_conllu(predicted_path))
    # 10 words: UPOS 9 right, heads 8 (not n't, not '.'), head + universal relation 7 (not cats)
    assert scores == {"sentences": 2, "words": 10, "upos": 90.0, "uas": 80.0, "las": 70.0}
    assert conll18_scores(gold_path, predicted_path) == pytest.approx(
        {key: scores[key] for key in ("upos", "uas", "las")}
    )

    other = read_conllu(predicted_path)
    other[1].words[0].form = "His"
    with pytest.raises(InputError, match="sentence 2 has other words"):
        attachment_scores(read_conllu(gold_path), other)
    with pytest.raises(InputError, match="has 2 sentences, predicted 1"):
        attachment_scores(read_conllu(gold_path), other[:1])


@pytest.mark.slow
def test_tiny_parser_trained_offline_on_ewt_is_scored_and_parses(real_data, tmp_path):
    """The workflow's parser path on a small slice of UD English EWT: `stanza-train` (the CLI the rule
    runs, no downloaded models), `stanza-score` (UAS/LAS equal to the CoNLL 2018 scorer's), the parser
    table, and `parse` of Moses tokens with the same model folder."""
    folder = real_data(*(f"ud-ewt/en_ewt-ud-{split}.conllu.gz" for split in ("train", "dev", "test")))
    slices = {"train": 200, "dev": 30, "test": 60}
    for split, count in slices.items():
        write_conllu(
            tmp_path / f"{split}.conllu", read_conllu(folder / f"ud-ewt/en_ewt-ud-{split}.conllu.gz")[:count]
        )
    models = tmp_path / "models"
    # linear tagger classifiers (the default); the batch sizes in Stanza's units
    tiny = ["--tagger-hidden", "32", "--parser-hidden", "32", "--char-hidden", "16",
            "--biaffine-hidden", "32", "--composite-hidden", "16", "--parser-layers", "1",
            "--tagger-batch", "50", "--parser-batch", "500"]  # fmt: skip
    train = ["stanza-train", "--train", str(tmp_path / "train.conllu"), "--dev", str(tmp_path / "dev.conllu")]
    assert main([*train, "--lang", "en", "--model-dir", str(models), "--tagger-steps", "10",
                 "--parser-steps", "30", *tiny]) == 0  # fmt: skip
    record = json.loads((models / "en_training.json").read_text())
    assert record["train_sentences"] == 200 and record["parser_steps"] == 30
    assert record["sizes"]["parser_hidden"] == 32 and record["sizes"]["tagger_batch"] == 50
    assert record["sizes"]["tagger_biaffine"] is False
    tagger_args = torch.load(models / "en_tagger.pt", map_location="cpu", weights_only=False)["config"]
    assert tagger_args["share_hid"] and tagger_args["batch_size"] == 50  # what Stanza trained with

    gold, pred, scores_path = tmp_path / "test.conllu", tmp_path / "pred.conllu", tmp_path / "en.scores.json"
    argv = ["stanza-score", "--gold", str(gold), "--lang", "en", "--model-dir", str(models)]
    assert main([*argv, "--pred", str(pred), "--json", str(scores_path), "--device", "cpu"]) == 0
    scores = json.loads(scores_path.read_text())
    gold_sentences, predicted = read_conllu(gold), read_conllu(pred)
    assert [s.forms for s in predicted] == [s.forms for s in gold_sentences]
    assert [s.multiword for s in predicted] == [s.multiword for s in gold_sentences]
    assert scores["sentences"] == 60 and scores["words"] == sum(len(s.words) for s in gold_sentences)
    assert {key: scores[key] for key in ("upos", "uas", "las")} == pytest.approx(conll18_scores(gold, pred))
    assert 0 < scores["las"] <= scores["uas"] <= 100 and scores["training"] == record

    table = tmp_path / "parser.md"
    manifest = files_manifest(tmp_path / "parser.manifest.json", "scores", [scores_path], label="en")
    assert main(["bugliarello2020-parser-table", "--manifest", manifest, "--out", str(table)]) == 0
    row = pd.read_csv(table.with_suffix(".csv")).iloc[0]
    assert (row["lang"], row["train sentences"], row["parser steps"]) == ("en", 200, 30)
    assert row["LAS"] == round(scores["las"], 2) and "UAS" in table.read_text()

    corpus = tmp_path / "corpus.tok"
    lines = ["Tom &apos;s dog sleeps .", "I do n&apos;t know ."]
    write_lines(corpus, lines)
    out = tmp_path / "corpus.conllu"
    argv = ["parse", str(corpus), "-o", str(out), "--lang", "en", "--model-dir", str(models)]
    assert main([*argv, "--device", "cpu"]) == 0
    assert [" ".join(s.forms) for s in read_conllu(out)] == lines

    # The workflow's parse rule (real-data config) loads the models from `parser_models`; only that rule
    # may run, so the files upstream of its inputs stand as given.
    work = tmp_path / "wf"
    shutil.copytree(models, work / "elsewhere/stanza")
    write_lines(work / "data/multi30k/en-de/tc/test_2016_flickr.en", lines)
    target = "data/multi30k/en-de/parse/test_2016_flickr.en.conllu"
    result = snakemake(
        "--cores", "1", "-p", "--configfile", str(REPO / "experiments/multi30k_bugliarello2020.yaml"),
        "--config", "studies={bugliarello2020: {parser_models: elsewhere/stanza}}", "-s",
        str(REPO / "Snakefile"), "--directory", str(work), "--allowed-rules", "bugliarello2020_parse",
        "--", target,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--model-dir elsewhere/stanza" in result.stdout + result.stderr
    assert read_conllu(work / target) == read_conllu(out)  # the same models gave the same parse


def test_the_ewt_treebank_downloads_from_the_mirror_as_conllu(real_data, tmp_path):
    """`ud_ewt` (the parser's training data): the mirror's gzip files give train/dev/test.conllu with
    the treebank's sentence counts; upstream, dev and test are pinned to the same content."""
    names = [f"ud-ewt/en_ewt-ud-{split}.conllu.gz" for split in ("train", "dev", "test")]
    mirror = real_data(*names)
    dest = tmp_path / "ud_ewt"
    assert main(["download", "ud_ewt", "--dest", str(dest), "--mirror", str(mirror)]) == 0
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["recipe"] == "mirror-layout"
    counts = {split: len(read_conllu(dest / f"{split}.conllu")) for split in ("train", "dev", "test")}
    assert counts == {"train": 12544, "dev": 2001, "test": 2077}  # shared/data/README.md §9
    upstream = get_corpus("ud_ewt").recipe
    for split, name in zip(("train", "dev", "test"), names, strict=True):
        content = gzip.decompress((mirror / name).read_bytes())
        assert (dest / f"{split}.conllu").read_bytes() == content
        pin = upstream.file(f"en_ewt-ud-{split}.conllu").sha256
        assert pin == (None if split == "train" else hashlib.sha256(content).hexdigest())
