"""Sennrich & Haddow input features ("TagEmb", seed brief §2.6) and the dep_labels stream that feeds them.

The embedder output is compared with the combination written out by hand in float64 (scaled word
embedding with its last ``dim`` dimensions replaced by the unscaled label embedding, plus the T2T
sinusoid computed here from its formula); the label stream with hand-labelled trees.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch
from model_fixtures import single_thread
from training_fixtures import cli_env, make_corpus, run_config, run_train_cli

from nmtvariants.cli import main
from nmtvariants.data.vocab import EOS_ID, PAD_ID, Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.models import build_model, capture, count_parameters, load_model, model_config
from nmtvariants.models.interfaces import AUX_PAD, SourceInputs
from nmtvariants.syntax.conllu import make_sentence, parse_conllu
from nmtvariants.syntax.dep_labels import LABEL_IDS, STREAM, UD_RELATIONS, subword_labels

VOCAB = 30
D = 32
NO_DROPOUT = {"embedding_dropout": 0, "residual_dropout": 0, "attention_dropout": 0, "relu_dropout": 0}


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def tiny(variant: dict, **overrides):
    cfg = model_config("tiny", {"d_model": D, "n_heads": 4, "d_ff": 48, **NO_DROPOUT, **overrides}, variant)
    return build_model(cfg, VOCAB)


def batch(lengths: list[int], labels: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths) + 1
    src = torch.full((len(lengths), width), PAD_ID, dtype=torch.long)
    tags = torch.full((len(lengths), width), AUX_PAD, dtype=torch.long)
    for row, n in enumerate(lengths):
        src[row, :n] = torch.randint(4, VOCAB, (n,), generator=generator)
        src[row, n] = EOS_ID
        tags[row, :n] = torch.randint(0, labels, (n,), generator=generator)
        tags[row, n] = labels  # the </s> label of a label stream
    return src, tags


def t2t_signal(length: int, dim: int) -> torch.Tensor:
    half = dim // 2
    out = torch.zeros(length, dim, dtype=torch.float64)
    for pos in range(length):
        for i in range(half):
            angle = pos * math.exp(-i * math.log(1.0e4) / (half - 1))
            out[pos, i], out[pos, half + i] = math.sin(angle), math.cos(angle)
    return out


@pytest.mark.parametrize("share", ["all", "none"])
def test_the_embedder_overwrites_the_last_dims_with_the_label_embedding(share):
    torch.manual_seed(0)
    model = tiny({"sennrich_haddow": {"labels": 5, "dim": 6}}, share_embeddings=share).double()
    src, tags = batch([4, 1, 6], labels=5, seed=1)
    out = model.src_embed(src, aux={STREAM: tags})
    words = model.src_embed.table.weight
    labels = model.src_embed.feature_transform.table.weight
    assert tuple(labels.shape) == (6, 6)  # 5 labels + </s>
    positions = t2t_signal(src.size(1), D)
    for b in range(src.size(0)):
        for t in range(int(src[b].ne(PAD_ID).sum())):
            expected = (
                torch.cat([math.sqrt(D) * words[src[b, t], : D - 6], labels[tags[b, t]]]) + positions[t]
            )
            torch.testing.assert_close(out[b, t], expected, rtol=0, atol=1e-6)  # float32 positions
    with capture(model, include=["encoder.embeddings"]) as rec:
        model.encode(src, {STREAM: tags})
    torch.testing.assert_close(rec["encoder.embeddings"][0], out)
    # the target side is untouched (with a shared table too)
    plain = tiny({}, share_embeddings=share).double()
    plain.load_state_dict(model.state_dict(), strict=False)
    torch.testing.assert_close(model.tgt_embed(src), plain.tgt_embed(src))


def test_the_new_parameters_are_the_label_table():
    plain, tagged = tiny({}), tiny({"sennrich_haddow": {"labels": 11, "dim": 4}})
    assert count_parameters(tagged) - count_parameters(plain) == (11 + 1) * 4
    new = set(tagged.state_dict()) - set(plain.state_dict())
    assert new == {"src_embed.feature_transform.table.weight"}
    defaults = tiny({"sennrich_haddow": {}})
    assert count_parameters(defaults) - count_parameters(plain) == (len(UD_RELATIONS) + 1) * 10


def test_missing_or_out_of_range_labels_are_input_errors():
    model = tiny({"sennrich_haddow": {"labels": 5, "dim": 6}})
    src, tags = batch([3, 2], labels=5, seed=2)
    with pytest.raises(
        InputError, match=r"needs the label stream 'dep_labels'.*aux_labels \{dep_labels: 5\}"
    ):
        model.encode(src)
    with pytest.raises(InputError, match=r"label id 6 > 5"):
        model.encode(src, {STREAM: tags.masked_fill(tags.eq(5), 6)})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("x", r"model\.variant\.sennrich_haddow: expected a mapping"),
        ({"size": 3}, r"model\.variant\.sennrich_haddow: unknown option\(s\) size"),
        ({"labels": 0}, r"model\.variant\.sennrich_haddow\.labels: "),
        ({"labels": 2.5}, r"model\.variant\.sennrich_haddow\.labels: "),
        ({"dim": 32}, r"model\.variant\.sennrich_haddow\.dim: an integer in \[1, 32\)"),
        ({"dim": 0}, r"model\.variant\.sennrich_haddow\.dim: "),
    ],
)
def test_option_errors_name_the_key(options, message):
    with pytest.raises(ConfigError, match=message):
        tiny({"sennrich_haddow": options})


# ---------------------------------------------------------------- the dep_labels stream

CONLLU = """\
# text = The cats didn't sit .
1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tcats\tcat\tNOUN\t_\t_\t5\tnsubj\t_\t_
3-4\tdidn't\t_\t_\t_\t_\t_\t_\t_\t_
3\tdid\tdo\tAUX\t_\t_\t5\taux\t_\t_
4\tn't\tnot\tPART\t_\t_\t5\tadvmod\t_\t_
5\tsit\tsit\tVERB\t_\t_\t0\troot\t_\t_
6\t.\t.\tPUNCT\t_\t_\t5\tpunct\t_\t_

1\tHer\ther\tPRON\t_\t_\t2\tnmod:poss\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tslept\tsleep\tVERB\t_\t_\t0\troot\t_\t_
"""
BPE = ["The c@@ ats did@@ n't s@@ i@@ t .", "Her cat sle@@ pt"]


def test_every_subword_gets_its_words_universal_relation():
    first, second = parse_conllu(CONLLU.splitlines())
    ids = LABEL_IDS
    # "didn't" is one surface token over words 3-4: it takes its head word's label (both hang from 5,
    # outside the range, so the first: aux)
    assert subword_labels(first, BPE[0], "x") == [
        ids["det"], ids["nsubj"], ids["nsubj"], ids["aux"], ids["aux"], ids["root"], ids["root"], ids["root"],
        ids["punct"],
    ]  # fmt: skip
    assert subword_labels(second, BPE[1], "x") == [ids["nmod"], ids["nsubj"], ids["root"], ids["root"]]


def test_dep_labels_cli_writes_the_stream_and_names_a_mismatched_line(tmp_path, capsys):
    conllu, bpe, out = tmp_path / "s.conllu", tmp_path / "s.bpe", tmp_path / "s.labels"
    conllu.write_text(CONLLU)
    write_lines(bpe, BPE)
    assert main(["dep-labels", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 0
    lines = list(read_lines(out))
    assert lines[1] == " ".join(str(LABEL_IDS[x]) for x in ("nmod", "nsubj", "root", "root"))
    write_lines(bpe, [BPE[0], "Her dog sle@@ pt"])
    assert main(["dep-labels", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "s.bpe:2 vs " in err and "word 2 is 'dog' in the BPE line but 'cat' in the parse" in err


def test_a_relation_outside_ud_v2_is_an_error_naming_the_word():
    old = make_sentence(["It", "was", "eaten"], [3, 3, 0], ["nsubjpass", "auxpass", "root"])  # UD v1
    with pytest.raises(InputError, match=r"here: word 1 has relation 'nsubjpass', not a UD v2 universal"):
        subword_labels(old, "It was eaten", "here")


@pytest.mark.slow
def test_tagemb_trains_and_translates_with_its_stream_through_the_cli(tmp_path):
    data = make_corpus(tmp_path / "corpus", pairs=120)
    rng = np.random.default_rng(0)
    for split in ("train", "valid"):
        path = tmp_path / f"{split}.dep_labels"
        write_lines(path, [" ".join(str(v) for v in rng.integers(0, 37, len(line.split())))
                           for line in read_lines(data[f"{split}_src"])])  # fmt: skip
        data[f"{split}_aux"] = {STREAM: str(path)}
    config = run_config(data, max_updates=10)
    config["data"]["aux_labels"] = {STREAM: len(UD_RELATIONS)}
    config["variant"] = {"sennrich_haddow": {"dim": 8}}
    run_train_cli(config, tmp_path / "run")
    checkpoint, hyp = str(tmp_path / "run" / "final.pt"), tmp_path / "hyp"
    command = [sys.executable, "-m", "nmtvariants", "translate", "--checkpoint", checkpoint, "--vocab",
               data["vocab"], "--input", data["valid_src"], "--output", str(hyp), "--beam", "2"]  # fmt: skip
    result = subprocess.run([*command, "--aux", f"{STREAM}={data['valid_aux'][STREAM]}"],
                            env=cli_env(), capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    model = load_model(checkpoint).eval()
    vocab = Vocabulary.load(data["vocab"])
    for src, labels, out in zip(read_lines(data["valid_src"]), read_lines(data["valid_aux"][STREAM]),
                                read_lines(hyp), strict=True):  # fmt: skip
        tags = torch.tensor([[*map(int, labels.split()), len(UD_RELATIONS)]])
        ((best, *_),) = beam_search(
            model, SourceInputs([torch.tensor([vocab.encode(src)])], {STREAM: tags}), 2
        )
        assert out == vocab.decode(best.tokens)
    result = subprocess.run(command, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 2 and "needs the label stream 'dep_labels'" in result.stderr
