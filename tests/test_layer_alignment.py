"""Yang et al. (2020): the study's model settings, the TEM/SEM/IFM names, and AER per decoder layer.

The per-layer AER is checked on a toy model whose encoder attention is set by hand (a test plug-in
replaces the attention scores through the ``score_transform`` seam), against alignments, AER and
coverage worked out by hand in the comments; and on an untrained model, against a per-sentence run
pooled by an independent loop.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import torch
from data_sources import RealData
from torch import nn

from nmtvariants.analysis.decoder_modules import decoder_module_names
from nmtvariants.cli import main
from nmtvariants.corpora.alignments import GoldAlignment, read_alignments, read_snum_sentences
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.alignment import format_links, word_ids_from_subwords
from nmtvariants.evaluation.layer_alignment import (
    AlignmentTestSet,
    layer_aer,
    read_alignment_set,
    sem_alignments,
)
from nmtvariants.fileio import write_lines
from nmtvariants.models import build_model, capture, count_parameters, model_config
from nmtvariants.models.config import study_overrides
from nmtvariants.models.variants import register_variant, unregister_variant

LAYOUTS = ("standard", "sem_ifm", "sem_tem_ifm", "simplified")


def yang_config(layout: str = "standard", layers: int = 2, variant: dict | None = None):
    """The study's post-norm settings at toy size (d 16, 4 heads, FFN 24, one encoder layer)."""
    overrides = {**study_overrides("yang2020", "tiny"), "d_model": 16, "n_heads": 4, "d_ff": 24}
    overrides.update(encoder_layers=1, decoder_layers=layers)
    return model_config("tiny", overrides, variant={"decoder_layout": layout, **(variant or {})})


# ---------------------------------------------------------------- study settings and module names
def test_study_overrides_are_post_norm_fairseq_and_leave_the_defaults_alone() -> None:
    cfg = model_config("tiny", study_overrides("yang2020", "tiny"))
    assert (cfg.norm, cfg.attention_bias, cfg.attention_dropout, cfg.relu_dropout) == ("post", True, 0.0, 0.0)
    model = build_model(cfg, 20)
    assert model.decoder_norm is None and model.encoder_norm is None  # post-norm: no final LayerNorm
    assert model.decoder_layers[0].cross_attn.attns[0].k_proj.bias is not None
    big = study_overrides("yang2020", "transformer_big")
    assert big["residual_dropout"] == big["embedding_dropout"] == 0.3
    default = model_config("tiny")
    assert (default.norm, default.attention_bias) == ("pre", False)  # other studies' defaults unchanged
    with pytest.raises(ConfigError, match="no model overrides for study 'nope'"):
        study_overrides("nope")


@pytest.mark.parametrize("layers", [1, 3])
def test_simplified_decoder_drops_exactly_the_ffn_and_its_layernorm(layers: int) -> None:
    d, d_ff = 16, 24
    standard = count_parameters(build_model(yang_config("standard", layers), 20))
    simplified = count_parameters(build_model(yang_config("simplified", layers), 20))
    # per layer: W1 (d x d_ff) + b1 (d_ff) + W2 (d_ff x d) + b2 (d) + the FFN's LayerNorm gain and bias (2d)
    per_layer = d * d_ff + d_ff + d_ff * d + d + 2 * d
    assert standard - simplified == layers * per_layer == layers * 840  # 384 + 24 + 384 + 16 + 32


def test_module_names_per_layout() -> None:
    p = "decoder.layers.1"
    assert decoder_module_names("standard", 1) == {
        "TEM": f"{p}.self.state",
        "SEM": f"{p}.cross.out",
        "SEM weights": f"{p}.cross.weights",
        "Add-NormI": f"{p}.cross.state",
        "FF": f"{p}.ffn.out",
        "Add-Norm": f"{p}.ffn.state",
        "IFM": p,
    }
    assert decoder_module_names("cross,self,ffn", 1) == {
        "TEM": f"{p}.self.out",
        "SEM": f"{p}.cross.state",
        "SEM weights": f"{p}.cross.weights",
        "Add-NormI": f"{p}.self.state",
        "FF": f"{p}.ffn.out",
        "Add-Norm": f"{p}.ffn.state",
        "IFM": p,
    }
    assert "TEM" not in decoder_module_names("sem_ifm", 0)
    assert set(decoder_module_names("simplified", 0)) == {"TEM", "SEM", "SEM weights", "Add-NormI", "IFM"}
    with pytest.raises(ConfigError, match="needs one or two attention sub-layers"):
        decoder_module_names("self,ffn,cross", 0)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_module_names_hold_the_papers_equations(layout: str) -> None:
    """Recompute each module from its inputs with the layer's own LayerNorms (post-norm, eval mode)."""
    torch.manual_seed(0)
    model = build_model(yang_config(layout), 20).eval()
    src = torch.randint(4, 20, (2, 5))
    tgt_in = torch.randint(4, 20, (2, 4))
    with torch.no_grad(), capture(model, attention=True) as rec:
        model(src, tgt_in)
    for n, layer in enumerate(model.decoder_layers):
        names = decoder_module_names(layout, n)
        got = {module: rec[name][0] for module, name in names.items()}
        x = rec[f"decoder.layers.{n - 1}"][0] if n else rec["decoder.embeddings"][0]
        cross, self_attn = layer.cross_attn, layer.self_attn
        if layout in ("standard", "simplified"):
            torch.testing.assert_close(got["TEM"], self_attn.norm(x + rec[f"decoder.layers.{n}.self.out"][0]))
            torch.testing.assert_close(got["Add-NormI"], cross.norm(got["TEM"] + got["SEM"]))
        elif layout == "sem_ifm":
            torch.testing.assert_close(got["Add-NormI"], cross.norm(x + got["SEM"]))
        else:  # SEM -> TEM -> IFM: SEM keeps its Add&Norm, TEM is the attention output over SEM
            torch.testing.assert_close(got["SEM"], cross.norm(x + rec[f"decoder.layers.{n}.cross.out"][0]))
            torch.testing.assert_close(got["Add-NormI"], self_attn.norm(got["SEM"] + got["TEM"]))
        if "FF" in got:
            torch.testing.assert_close(got["Add-Norm"], layer.ffn.norm(got["Add-NormI"] + got["FF"]))
            torch.testing.assert_close(got["IFM"], got["Add-Norm"])
        else:
            torch.testing.assert_close(got["IFM"], got["Add-NormI"])
        assert got["SEM weights"].shape == (2, 4, 4, 5)


# ---------------------------------------------------------------- AER per layer, attention set by hand
PEAK = 30.0
# per decoder layer, per head: (a, b) puts the peak of query row t on source column (a * t + b) mod 3
PATTERNS = [
    [[0, 0], [0, 0], [0, 0], [0, 0]],  # layer 1: every head on column 0
    [[1, 0], [1, 0], [1, 0], [1, 1]],  # layer 2: three heads on t mod 3, one on (t + 1) mod 3
]


class HandScores(nn.Module):
    """Replaces the attention scores: PEAK on one column per (head, query row), 0 elsewhere."""

    def __init__(self, heads: list[list[int]]):
        super().__init__()
        self.heads = heads

    def forward(self, scores: torch.Tensor, ctx: object, attn: nn.Module) -> torch.Tensor:
        out = torch.zeros_like(scores)
        rows = torch.arange(scores.size(-2))
        for head, (a, b) in enumerate(self.heads):
            out[:, head, rows, (a * rows + b) % 3] = PEAK
        return out


@pytest.fixture
def hand_cross():
    def install(model: nn.Module, options: dict) -> None:
        for layer, heads in zip(model.decoder_layers, options["patterns"], strict=True):
            layer.cross_attn.attns[0].score_transform = HandScores(heads)

    register_variant("hand_cross")(install)
    yield {"hand_cross": {"patterns": PATTERNS}}
    unregister_variant("hand_cross")


# Sentence A: source "a b@@ c d" (words a | bc | d), target "x y@@ z" (words x | yz);
# sentence B: source "e f g", target "u v w q". Gold (source word, target word):
#   A: sure (0,0) (1,1), possible (2,1);  B: sure (0,0) (1,1) (2,2), possible (2,3).
SRC = ["a b@@ c d", "e f g"]
TGT = ["x y@@ z", "u v w q"]
GOLD = [
    GoldAlignment(frozenset({(0, 0), (1, 1)}), frozenset({(2, 1)})),
    GoldAlignment(frozenset({(0, 0), (1, 1), (2, 2)}), frozenset({(2, 3)})),
]
# Layer 1: every row attends source sub-word 0 -> A {(0,0),(0,1)}, B {(0,0),(0,1),(0,2),(0,3)}.
#   |A| = 6, |S| = 5, |A∩S| = 1 + 1, |A∩P| = 1 + 1 -> AER = 1 - 4/11; covered A{0} B{0}: 2 of 6 words.
# Layer 2 (head mean: 3/4 on t mod 3, 1/4 on (t+1) mod 3), sentence A rows x, y@@, z = 0, 1, 2:
#   x: col 0 (.75) -> word 0;  yz: mean of rows 1, 2 = cols [.125, .375, .5, 0] -> words [.125, .875, 0]
#   -> word 1: {(0,0),(1,1)}.  B: rows 0..3 -> cols 0, 1, 2, 0: {(0,0),(1,1),(2,2),(0,3)}.
#   |A| = 6, |S| = 5, |A∩S| = 2 + 3, |A∩P| = 2 + 3 -> AER = 1 - 10/11; adds A{1} B{1,2}: 5 of 6.
EXPECTED_LINKS = [
    [{(0, 0), (0, 1)}, {(0, 0), (0, 1), (0, 2), (0, 3)}],
    [{(0, 0), (1, 1)}, {(0, 0), (1, 1), (2, 2), (0, 3)}],
]
EXPECTED = {"aer": [7 / 11, 1 / 11], "coverage": [2 / 6, 5 / 6], "layer_coverage": [2 / 6, 5 / 6]}


def toy_vocab() -> Vocabulary:
    return Vocabulary.build([*SRC, *TGT])


def toy_set() -> AlignmentTestSet:
    src = [line.split() for line in SRC]
    tgt = [line.split() for line in TGT]
    return AlignmentTestSet(src, tgt, [[0, 1, 1, 2], [0, 1, 2]], [[0, 1, 1], [0, 1, 2, 3]], GOLD)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch_size", [1, 2])
def test_layer_aer_on_hand_set_attention(hand_cross: dict, layout: str, batch_size: int) -> None:
    torch.manual_seed(0)
    vocab = toy_vocab()
    model = build_model(yang_config(layout, variant=hand_cross), len(vocab))
    assert sem_alignments(model, vocab, toy_set(), batch_size) == EXPECTED_LINKS
    rows = layer_aer(model, vocab, toy_set(), batch_size)
    assert [row["layer"] for row in rows] == [1, 2]
    for key, values in EXPECTED.items():
        assert [row[key] for row in rows] == pytest.approx(values)
    assert [row["capture_name"] for row in rows] == [f"decoder.layers.{n}.cross.weights" for n in (0, 1)]
    assert all((row["n_hyp_links"], row["n_sure"], row["n_possible"]) == (6, 5, 7) for row in rows)


def test_layer_aer_cli_round_trip(hand_cross: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    torch.manual_seed(0)
    vocab = toy_vocab()
    cfg = yang_config("standard", variant=hand_cross)
    model = build_model(cfg, len(vocab))
    checkpoint = tmp_path / "model.pt"
    torch.save(
        {"model_config": cfg.to_dict(), "vocab_size": len(vocab), "model": model.state_dict()}, checkpoint
    )
    vocab.save(tmp_path / "vocab")
    write_lines(tmp_path / "test.src", SRC)
    write_lines(tmp_path / "test.tgt", TGT)
    # the gold in talp, 1-based by definition and written target-first: no base flag, --reverse-gold
    talp = [
        " ".join(
            [f"{j + 1}-{i + 1}" for i, j in sorted(g.sure)]
            + [f"{j + 1}p{i + 1}" for i, j in sorted(g.possible - g.sure)]
        )
        for g in GOLD
    ]
    write_lines(tmp_path / "gold.talp", talp)
    write_lines(tmp_path / "words.src", ["a bc d", "e f g"])  # the gold's own tokens
    write_lines(tmp_path / "words.tgt", ["x yz", "u v w q"])
    args = [
        "layer-aer",
        "--checkpoint",
        str(checkpoint),
        "--vocab",
        str(tmp_path / "vocab"),
        "--src",
        str(tmp_path / "test.src"),
        "--tgt",
        str(tmp_path / "test.tgt"),
        "--gold",
        str(tmp_path / "gold.talp"),
        "--format",
        "talp",
        "--reverse-gold",
        "--batch-size",
        "2",
        "--src-words",
        str(tmp_path / "words.src"),
        "--tgt-words",
        str(tmp_path / "words.tgt"),
        "--output",
        str(tmp_path / "aer.csv"),
    ]
    assert main(args) == 0
    with open(tmp_path / "aer.csv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["layer"]) for row in rows] == [1, 2]
    for key, values in EXPECTED.items():
        assert [float(row[key]) for row in rows] == pytest.approx(values)
    # read as 0-based, the same file puts a link outside sentence A: rejected, exit code 2
    assert main([*args[:-2], "--zero-based", "--output", str(tmp_path / "bad.csv")]) == 2
    assert not (tmp_path / "bad.csv").exists()
    assert (
        "gold.talp: sentence 1: link (2, 2) (0-based, source-target) lies outside" in capsys.readouterr().err
    )
    # a gold file in Pharaoh (0-based) with a link past the end of sentence B's 4 target words
    write_lines(tmp_path / "gold.pharaoh", [format_links(GOLD[0].sure), "0-0 2-4"])
    bad = [a if a != str(tmp_path / "gold.talp") else str(tmp_path / "gold.pharaoh") for a in args]
    bad = [a for a in bad if a != "--reverse-gold"]
    bad[bad.index("talp")] = "pharaoh"
    assert main(bad) == 2
    assert "gold.pharaoh: sentence 2: link (2, 4)" in capsys.readouterr().err


# ---------------------------------------------------------------- batched path = per-sentence run
def naive_links(weights: np.ndarray, src_ids: list[int], tgt_ids: list[int]) -> set[tuple[int, int]]:
    """Mean over heads, mean over a target word's rows, sum over a source word's columns, arg-max."""
    merged = weights.mean(axis=0)
    links = set()
    for word in range(tgt_ids[-1] + 1):
        rows = [t for t, w in enumerate(tgt_ids) if w == word]
        totals = [
            sum(merged[t, s] for t in rows for s, v in enumerate(src_ids) if v == source) / len(rows)
            for source in range(src_ids[-1] + 1)
        ]
        links.add((int(np.argmax(totals)), word))
    return links


def test_batched_alignments_equal_a_per_sentence_run() -> None:
    torch.manual_seed(3)
    src = ["a b@@ c d", "e f", "g@@ h@@ i j k", "b d"]
    tgt = ["x y@@ z", "u v w q", "q@@ x", "y z u"]
    vocab = Vocabulary.build([*src, *tgt])
    model = build_model(yang_config("standard", layers=3), len(vocab)).eval()
    src_ids = [word_ids_from_subwords(s.split()) for s in src]
    tgt_ids = [word_ids_from_subwords(t.split()) for t in tgt]
    gold = [GoldAlignment(frozenset({(0, 0)})) for _ in src]
    test_set = AlignmentTestSet([s.split() for s in src], [t.split() for t in tgt], src_ids, tgt_ids, gold)
    batched = sem_alignments(model, vocab, test_set, batch_size=3)
    for k in range(len(src)):
        source = torch.tensor([vocab.encode(src[k])])
        target_in = torch.tensor([[1, *vocab.encode(tgt[k], add_eos=False)]])  # <s> + tokens
        with torch.no_grad(), capture(model, attention=True) as rec:
            model(source, target_in)
        for layer in range(3):
            weights = rec[f"decoder.layers.{layer}.cross.weights"][0][0].double().numpy()
            # drop the </s> column and the row predicting </s>
            weights = weights[:, : len(tgt_ids[k]), : len(src_ids[k])]
            assert batched[layer][k] == naive_links(weights, src_ids[k], tgt_ids[k])


# ---------------------------------------------------------------- the test set reader on real gold
def test_alignment_set_on_the_hansards_gold(real_data: RealData, tmp_path: Path) -> None:
    """English-French Hansards: BPE'd text (here: every word over 6 letters split once), talp gold."""
    hansards = "alignments/en-fr-hansards-naacl2003"
    names = ("test.e", "test.f", "test.align", "crossalign.enfr.talp")
    folder = real_data(*(f"{hansards}/{name}" for name in names)) / hansards
    english = read_snum_sentences(folder / "test.e")
    french = read_snum_sentences(folder / "test.f")

    def bpe(words: list[str]) -> str:
        return " ".join(f"{w[:3]}@@ {w[3:]}" if len(w) > 6 else w for w in words)

    write_lines(tmp_path / "test.bpe.en", [bpe(s) for s in english])
    write_lines(tmp_path / "test.bpe.fr", [bpe(s) for s in french])
    words = (folder / "test.e", folder / "test.f")
    test_set = read_alignment_set(
        tmp_path / "test.bpe.en",
        tmp_path / "test.bpe.fr",
        folder / "crossalign.enfr.talp",
        "talp",
        words=words,
    )
    assert test_set.src_word_counts == [len(s) for s in english]
    assert test_set.tgt_word_counts == [len(s) for s in french]
    assert sum(len(g.sure) for g in test_set.gold) == 4038
    assert test_set.gold == read_alignments(folder / "test.align", "berkeley", reverse=True)
    # a chain that re-tokenises (here: joins the first two French words of sentence 3) is caught
    french[2] = [french[2][0] + french[2][1], *french[2][2:]]
    write_lines(tmp_path / "test.bpe.fr", [bpe(s) for s in french])
    with pytest.raises(InputError, match=r"test.bpe.fr:3: \d+ words once the sub-words are joined"):
        read_alignment_set(
            tmp_path / "test.bpe.en",
            tmp_path / "test.bpe.fr",
            folder / "crossalign.enfr.talp",
            "talp",
            words=words,
        )
