"""AER (Och & Ney 2003) on hand examples and the real Hansards/KFTT gold; attention alignments; coverage."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.corpora.alignments import (
    GoldAlignment,
    parse_links,
    read_alignments,
    read_bar_bitext,
    read_snum_sentences,
    read_token_counts,
)
from nmtvariants.errors import InputError
from nmtvariants.evaluation.alignment import (
    alignment_error_rate,
    alignments_from_attention,
    cumulative_coverage,
    word_ids_from_subwords,
    write_pharaoh,
)
from nmtvariants.fileio import write_lines


def hansards(real_data: RealData) -> Path:
    folder = "alignments/en-fr-hansards-naacl2003"
    names = ("test.e", "test.f", "test.align", "trial.align", "crossalign.enfr.talp", "crossalign.test.en-fr")
    return real_data(*(f"{folder}/{name}" for name in names)) / folder


def test_aer_hand_example_follows_the_definition() -> None:
    gold = [
        GoldAlignment(frozenset({(0, 0), (1, 1)}), frozenset({(1, 2)})),
        GoldAlignment(frozenset({(0, 1)}), frozenset()),
    ]
    hyp = [{(0, 0), (1, 2), (2, 2)}, {(0, 0)}]
    # corpus sums: |A| = 4, |S| = 3, |A∩S| = 1, |A∩P| = 2
    result = alignment_error_rate(hyp, gold)
    assert result["aer"] == pytest.approx(1 - (1 + 2) / (4 + 3))
    assert result["precision"] == pytest.approx(2 / 4)
    assert result["recall"] == pytest.approx(1 / 3)
    assert gold[0].possible >= gold[0].sure  # S ⊆ P enforced


def test_aer_of_perfect_and_empty_hypotheses() -> None:
    gold = [GoldAlignment(frozenset({(0, 0)}), frozenset({(0, 1)}))]
    assert alignment_error_rate([{(0, 0)}], gold)["aer"] == 0.0
    assert alignment_error_rate([{(0, 0), (0, 1)}], gold)["aer"] == 0.0  # possible links cost nothing
    assert alignment_error_rate([set()], gold)["aer"] == 1.0


def test_link_formats() -> None:
    assert parse_links("0-1 2?3").sure == {(0, 1)} and parse_links("0-1 2?3").possible == {(0, 1), (2, 3)}
    talp = parse_links("1-2 3p4", "talp", one_based=True)
    assert talp.sure == {(0, 1)} and talp.possible == {(0, 1), (2, 3)}
    berkeley = parse_links("0-1 2-3-P", "berkeley", reverse=True)
    assert berkeley.sure == {(1, 0)} and (3, 2) in berkeley.possible
    with pytest.raises(InputError, match=r"x:7: bad link '1p2' for format 'pharaoh'"):
        parse_links("1p2", where="x:7")


def test_real_hansards_gold_counts_and_formats_agree(real_data: RealData) -> None:
    folder = hansards(real_data)
    # Berkeley copy: 0-based French-English; Cross-Align copy: 1-based English-French (talp)
    berkeley = read_alignments(folder / "test.align", "berkeley", reverse=True)
    talp = read_alignments(folder / "crossalign.enfr.talp", "talp", one_based=True)
    assert len(berkeley) == len(talp) == 447
    assert berkeley == talp
    # the published WPT 2003 English-French test counts: 4038 sure, 17438 possible (incl. sure)
    assert sum(len(g.sure) for g in talp) == 4038
    assert sum(len(g.possible) for g in talp) == 17438


def test_real_hansards_gold_against_itself_has_aer_zero(real_data: RealData, tmp_path: Path) -> None:
    gold = read_alignments(hansards(real_data) / "crossalign.enfr.talp", "talp", one_based=True)
    assert alignment_error_rate([g.sure for g in gold], gold)["aer"] == 0.0
    assert alignment_error_rate([g.possible for g in gold], gold)["aer"] == 0.0
    # dropping every other sure link: precision stays 1, recall falls, AER by the formula
    half = [set(sorted(g.sure)[::2]) for g in gold]
    a = sum(len(h) for h in half)
    s = sum(len(g.sure) for g in gold)
    assert alignment_error_rate(half, gold)["aer"] == pytest.approx(1 - (a + a) / (a + s))
    # through the CLI with a Pharaoh hypothesis file
    write_pharaoh(tmp_path / "hyp", [g.sure for g in gold])
    code = main(
        [
            "aer",
            "--gold",
            str(hansards(real_data) / "crossalign.enfr.talp"),
            "--format",
            "talp",
            "--one-based",
            "--hyp",
            str(tmp_path / "hyp"),
            "--json",
            str(tmp_path / "aer.json"),
        ]
    )
    assert code == 0
    assert json.loads((tmp_path / "aer.json").read_text())["aer"] == 0.0


def test_naacl_wpt_format(real_data: RealData, tmp_path: Path) -> None:
    """Write the gold in the original WPT layout (1-based, NULL = 0, S/P) and read it back."""
    gold = read_alignments(hansards(real_data) / "crossalign.enfr.talp", "talp", one_based=True)
    lines = []
    for k, g in enumerate(gold, start=1):
        lines.append(f"{k:04d} 0 1 S")  # a NULL link: must be ignored
        lines += [f"{k:04d} {i + 1} {j + 1} S" for i, j in sorted(g.sure)]
        lines += [f"{k:04d} {i + 1} {j + 1} P" for i, j in sorted(g.possible - g.sure)]
    write_lines(tmp_path / "test.wa.nonullalign", lines)
    assert read_alignments(tmp_path / "test.wa.nonullalign", "hansards") == gold
    write_lines(tmp_path / "bad.wa", ["0001 1 2 X"])
    with pytest.raises(InputError, match=r"bad.wa:1: link type must be S or P"):
        read_alignments(tmp_path / "bad.wa", "hansards")


def test_real_kftt_gold(real_data: RealData, caplog: pytest.LogCaptureFixture) -> None:
    folder = real_data("alignments/ja-en-kftt/jaen.talp", "alignments/ja-en-kftt/test.ja-en") / (
        "alignments/ja-en-kftt"
    )
    # KFTT's talp copy is 0-based (index 0 occurs): read as talp's defined 1-based it is refused
    with pytest.raises(InputError, match=r"jaen.talp:1: link '0-1' has index 0 .* pass --zero-based"):
        read_alignments(folder / "jaen.talp", "talp")
    gold = read_alignments(folder / "jaen.talp", "talp", one_based=False)
    assert len(gold) == 582
    assert sum(len(g.sure) for g in gold) == 13562  # README: 13,562 links, all sure
    assert all(g.possible == g.sure for g in gold)
    # with the sentence lengths known, the 6 links past the end of 4 Japanese sentences are refused
    # (README §4b: 0-based lines 350, 353-355), unless kept on purpose
    pairs = read_bar_bitext(folder / "test.ja-en")
    lengths = ([len(ja) for ja, _ in pairs], [len(en) for _, en in pairs])
    with pytest.raises(InputError, match=r"jaen.talp: sentence 351: link \(17, 24\) .* \(6 such links"):
        read_alignments(folder / "jaen.talp", "talp", one_based=False, lengths=lengths)
    kept = read_alignments(folder / "jaen.talp", "talp", False, lengths=lengths, keep_out_of_range=True)
    assert kept == gold and "6 such links" in caplog.text


def test_talp_implies_one_based_and_the_aer_command_agrees_with_the_berkeley_copy(
    real_data: RealData, tmp_path: Path
) -> None:
    """Issue 12: ``aer --format talp`` without --one-based read the 1-based file as 0-based."""
    folder = hansards(real_data)
    berkeley = read_alignments(folder / "test.align", "berkeley", reverse=True)  # (English, French)
    assert read_alignments(folder / "crossalign.enfr.talp", "talp") == berkeley
    assert parse_links("1-2 3p4", "talp") == parse_links("0-1 2?3")
    # a hypothesis: every other sure link plus one wrong link per sentence
    hyp = [set(sorted(g.sure)[::2]) | {(0, len(g.sure))} for g in berkeley]
    write_pharaoh(tmp_path / "hyp", hyp)
    expected = alignment_error_rate(hyp, berkeley)["aer"]

    def aer(*flags: str) -> float:
        out = tmp_path / "aer.json"
        args = ["aer", "--gold", str(folder / "crossalign.enfr.talp"), "--format", "talp"]
        assert main([*args, "--hyp", str(tmp_path / "hyp"), *flags, "--json", str(out)]) == 0
        return json.loads(out.read_text())["aer"]

    texts = ["--src", str(folder / "test.e"), "--tgt", str(folder / "test.f")]
    assert aer() == aer("--one-based") == aer(*texts) == pytest.approx(expected)
    assert abs(aer("--zero-based") - expected) > 0.1  # the old silent misreading
    # with the sentences given, the misread base puts links past the sentence ends: refused
    assert main(["aer", "--gold", str(folder / "crossalign.enfr.talp"), "--format", "talp",
                 "--hyp", str(tmp_path / "hyp"), "--zero-based", *texts]) == 2  # fmt: skip
    assert read_token_counts(folder / "test.e") == [len(s) for s in read_snum_sentences(folder / "test.e")]
    with pytest.raises(InputError, match="1-based by definition"):
        read_alignments(folder / "test.align", "hansards", one_based=False)


def test_alignments_from_attention_merges_heads_and_takes_argmax() -> None:
    head1 = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    head2 = np.array([[0.1, 0.8, 0.1], [0.2, 0.1, 0.7]])
    # mean: row 0 -> [0.4, 0.5, 0.1] -> source 1; row 1 -> [0.15, 0.1, 0.75] -> source 2
    assert alignments_from_attention(np.stack([head1, head2])) == {(1, 0), (2, 1)}
    assert alignments_from_attention(torch.tensor(np.stack([head1, head2]))) == {(1, 0), (2, 1)}
    # max over heads: row 0 -> [0.7, 0.8, 0.1] -> 1 as well; 2-D input needs no merge
    assert alignments_from_attention(head1) == {(0, 0), (2, 1)}


def test_alignments_from_attention_pools_subwords_and_drops_eos() -> None:
    src_tokens = ["new@@", "s", "are", "good", "</s>"]
    src_ids = [*word_ids_from_subwords(src_tokens[:-1]), None]
    assert src_ids == [0, 0, 1, 2, None]
    attn = np.array(
        [
            [0.30, 0.30, 0.35, 0.00, 0.05],  # summed over "new@@ s" 0.60 beats "are" 0.35 -> word 0
            [0.00, 0.00, 0.10, 0.20, 0.70],  # EOS is dropped, so "good" wins
            [0.00, 0.00, 0.40, 0.10, 0.50],  # with the next row: one target word, mean over its sub-words
            [0.00, 0.00, 0.00, 0.60, 0.40],  # mean "are" 0.20 vs "good" 0.35 -> word 2
        ]
    )
    tgt_ids = [0, 1, 2, 2]
    assert alignments_from_attention(attn, src_ids, tgt_ids) == {(0, 0), (2, 1), (2, 2)}
    with pytest.raises(InputError, match="word ids have length 3"):
        alignments_from_attention(attn, src_ids[:3])


def test_cumulative_coverage_by_hand() -> None:
    src_lengths = [3, 2]
    layer1 = [{(0, 0), (0, 1)}, {(1, 0)}]  # covers {0} and {1}: 2 of 5
    layer2 = [{(2, 0)}, {(1, 0), (1, 1)}]  # adds word 2 of sentence 1: 3 of 5
    layer3 = [{(1, 0), (2, 1)}, {(0, 0)}]  # adds word 1 and word 0: 5 of 5
    assert cumulative_coverage([layer1, layer2, layer3], src_lengths) == pytest.approx([0.4, 0.6, 1.0])
    with pytest.raises(InputError, match="layer 0 has 1 sentences"):
        cumulative_coverage([[set()]], src_lengths)
