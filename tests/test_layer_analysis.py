"""Per-layer analyses of Emelin et al. 2019 (analysis/similarity.py, gates.py, layer_probes.py and their
commands), each against an independent computation: per-sentence `capture` runs and float64 loops."""

from __future__ import annotations

import csv
import math
from collections import Counter

import numpy as np
import pytest
import torch
from model_fixtures import REVERSE_VOCAB, single_thread, trained_reverse_model

from nmtvariants.analysis.extract import extract_states, side_index
from nmtvariants.analysis.gates import gate_statistics
from nmtvariants.analysis.mlp_probe import train_mlp_probe
from nmtvariants.analysis.similarity import layer_similarity
from nmtvariants.analysis.states import read_state_file, write_state_file
from nmtvariants.cli import main
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID, EOS_ID, SPECIALS, Vocabulary
from nmtvariants.errors import ConfigError
from nmtvariants.fileio import write_lines
from nmtvariants.models import build_model, capture, model_config

VOCAB = 20
WORDS = [f"w{i}" for i in range(REVERSE_VOCAB - len(SPECIALS))]
STACK = ["*.embeddings", "*.layers.[0-9]", "*.output"]


def random_pairs(count: int, seed: int = 0) -> ParallelData:
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        src = [*rng.integers(4, VOCAB, size=int(rng.integers(1, 9))).tolist(), EOS_ID]
        tgt = [*rng.integers(4, VOCAB, size=int(rng.integers(1, 9))).tolist(), EOS_ID]
        pairs.append((src, tgt))
    return ParallelData.from_sequences(pairs, np.arange(1, count + 1))


def per_sentence_capture(model, data: ParallelData, i: int) -> dict[str, torch.Tensor]:
    """Every record of one pair run alone (no padding), [T, d] each."""
    target = data.target(i).tolist()
    src = torch.tensor([data.source(i).tolist()])
    tgt_in = torch.tensor([[BOS_ID, *target[:-1]]])
    with torch.no_grad(), capture(model) as recorder:
        model.decode(tgt_in, model.encode(src))
    return {name: recorder[name][0][0].double() for name in recorder.records}


def tiny_model(variant: dict | None = None):
    torch.manual_seed(5)
    cfg = model_config("tiny", overrides={"d_model": 32, "n_heads": 4, "d_ff": 48}, variant=variant or {})
    return build_model(cfg, VOCAB).eval()


def test_similarity_equals_a_per_sentence_float64_loop(tmp_path):
    model, data = tiny_model(), random_pairs(11)
    with single_thread():
        indices, states = extract_states(model, data, STACK, batch_size=4)
    write_state_file(tmp_path / "s.npz", data, indices, states, {"vocab_size": VOCAB})
    rows = layer_similarity(read_state_file(tmp_path / "s.npz"), "base")
    top = {"encoder": "encoder.output", "decoder": "decoder.output"}  # the authors' top layer: final LN in
    layers = {side: [f"{side}.embeddings", f"{side}.layers.0", top[side]] for side in ("encoder", "decoder")}
    assert [(r["side"], r["layer"], r["name"]) for r in rows] == [
        (side, k, name) for side in ("encoder", "decoder") for k, name in enumerate(layers[side])
    ]
    with single_thread():
        captured = [per_sentence_capture(model, data, i) for i in range(len(data))]
    for row in rows:
        sentence_cosines, token_cosines = [], []
        for records in captured:
            e, h = records[f"{row['side']}.embeddings"], records[row["name"]]
            # encoder: drop the final </s>; decoder: drop the leading <s>
            e, h = (e[:-1], h[:-1]) if row["side"] == "encoder" else (e[1:], h[1:])
            dot = sum(float(a) * float(b) for a, b in zip(e.flatten(), h.flatten(), strict=True))
            norm_e = math.sqrt(sum(float(a) ** 2 for a in e.flatten()))
            norm_h = math.sqrt(sum(float(b) ** 2 for b in h.flatten()))
            sentence_cosines.append(dot / (norm_e * norm_h))
            token_cosines += [
                float(torch.dot(a, b) / (a.norm() * b.norm())) for a, b in zip(e, h, strict=True)
            ]
        assert row["cosine"] == pytest.approx(np.mean(sentence_cosines), abs=1e-6)
        assert row["token_cosine"] == pytest.approx(np.mean(token_cosines), abs=1e-6)
        assert row["sentences"] == len(data) and row["tokens"] == len(token_cosines)
    assert all(row["cosine"] == pytest.approx(1.0) for row in rows if row["layer"] == 0)


GATES = {
    "self": [(side, "self") for side in ("encoder", "decoder")],
    "both": [("encoder", "self"), ("decoder", "self"), ("decoder", "cross")],
    "cross": [("decoder", "cross")],
}


@pytest.mark.parametrize(
    ("options", "attentions"),
    [
        ({"kind": "lexical"}, "self"),
        ({"kind": "lexical", "cross_attention": True}, "both"),
        ({"kind": "feature_fusion", "self_attention": "none", "cross_attention": True}, "cross"),
    ],
)
def test_gate_statistics_equal_a_naive_loop_without_padding(options, attentions):
    model, data = tiny_model({"shortcuts": options}), random_pairs(9, seed=2)
    with single_thread():
        rows = gate_statistics(model, data, "sc", batch_size=4)  # batches of 4: padding to exclude
        captured = [per_sentence_capture(model, data, i) for i in range(len(data))]
    expected = [
        f"{side}.layers.{i}.{attention}.{gate}_gate"
        for side in ("encoder", "decoder")
        for i in range(2)
        for attention in ("self", "cross")
        if (side, attention) in GATES[attentions]
        for gate in ("key", "value")
    ]
    assert [row["name"] for row in rows] == expected
    for row in rows:
        total = squares = above = elements = positions = 0
        for records in captured:
            gates = records[row["name"]]
            positions += gates.shape[0]
            for value in gates.flatten().tolist():
                total, squares = total + value, squares + value**2
                above, elements = above + (value > 0.5), elements + 1
        mean = total / elements
        assert row["mean"] == pytest.approx(mean, abs=1e-6)
        assert row["std"] == pytest.approx(math.sqrt(squares / elements - mean**2), abs=1e-5)
        assert row["above_half"] == pytest.approx(above / elements, abs=1e-9)
        assert (row["positions"], row["elements"]) == (positions, elements)
        assert row["layer"] == int(row["name"].split(".")[2]) + 1 and row["variant"] == "sc"
        # every real position (</s> and <s> included), no padding; cross-attention gates the source
        side = "encoder" if row["side"] == "encoder" or row["attention"] == "cross" else "decoder"
        assert positions == int((data.src_lengths if side == "encoder" else data.tgt_lengths).sum())


def test_gate_statistics_need_a_shortcut_model():
    with pytest.raises(ConfigError, match="no shortcut gates"):
        gate_statistics(tiny_model(), random_pairs(2))


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A trained reversal model's checkpoint, its vocabulary, a train, a valid and a test text with
    per-token parity labels, and the extracted states of every layer of the three files."""
    root = tmp_path_factory.mktemp("layer_analysis")
    model = trained_reverse_model()
    torch.save(
        {"model_config": model.cfg.to_dict(), "vocab_size": REVERSE_VOCAB, "model": model.state_dict()},
        root / "model.pt",
    )
    Vocabulary([*SPECIALS, *WORDS]).save(root / "vocab.txt")
    rng = np.random.default_rng(0)
    for part, count in (("train", 300), ("valid", 40), ("test", 60)):
        # skewed word frequencies so that the frequency bins differ in size
        sentences = [
            [WORDS[k] for k in rng.choice(len(WORDS), size=int(n), p=np.arange(1, 11) / 55)]
            for n in rng.integers(3, 8, size=count)
        ]
        write_lines(root / f"{part}.src", [" ".join(s) for s in sentences])
        write_lines(root / f"{part}.tgt", [" ".join(reversed(s)) for s in sentences])
        write_lines(
            root / f"{part}.parity",
            [" ".join("low" if int(w[1:]) < 5 else "high" for w in s) for s in sentences],
        )
        args = ["--checkpoint", str(root / "model.pt"), "--vocab", str(root / "vocab.txt")]
        args += ["--source", str(root / f"{part}.src"), "--target", str(root / f"{part}.tgt")]
        with single_thread():
            assert (
                main(["extract-states", *args, "--output", str(root / f"{part}.npz"), "--names", *STACK]) == 0
            )
    return root


def read_csv(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def probe_files(root) -> list[str]:
    """The layer-probes arguments of the three states files: train, early-stop, test."""
    return [f"--{part}-states={root / part}.npz" for part in ("train", "valid", "test")]


def test_layer_probes_per_layer_and_group(setup):
    args = ["layer-probes", *probe_files(setup)]
    args += [
        "--output",
        str(setup / "probes.csv"),
        "--label",
        "base",
        "--source-group",
        f"parity={setup / 'test.parity'}",
    ]
    args += ["--source-frequency", str(setup / "train.src"), "--vocab", str(setup / "vocab.txt")]
    args += ["--hidden", "64", "--lr", "5e-3", "--batch-size", "64", "--max-epochs", "15", "--patience", "3"]
    with single_thread():
        assert main(args) == 0
    rows = read_csv(setup / "probes.csv")
    assert list(rows[0]) == ["variant", "side", "layer", "name", "group_kind", "group", "accuracy", "count"]
    assert {row["variant"] for row in rows} == {"base"}
    test_words = Counter((setup / "test.src").read_text().split())
    train_words = Counter((setup / "train.src").read_text().split())
    # ten word types, ten bins: bin b holds the b-th rarest training type (ties by id)
    ranked = sorted(WORDS, key=lambda w: (train_words[w], len(SPECIALS) + WORDS.index(w)))
    for side in ("encoder", "decoder"):
        side_rows = [row for row in rows if row["side"] == side]
        assert sorted({int(row["layer"]) for row in side_rows}) == [0, 1, 2]
        for layer in range(3):
            layer_rows = [row for row in side_rows if int(row["layer"]) == layer]
            kinds = Counter(row["group_kind"] for row in layer_rows)
            overall = [row for row in layer_rows if row["group_kind"] == "all"]
            assert len(overall) == 1 and len(layer_rows) == len(
                {(r["group_kind"], r["group"]) for r in layer_rows}
            )
            assert int(overall[0]["count"]) == sum(test_words.values())  # one per word, </s>/<s> dropped
            assert all(0.0 <= float(row["accuracy"]) <= 1.0 for row in layer_rows)
            bins = {
                row["group"]: int(row["count"]) for row in layer_rows if row["group_kind"] == "frequency_bin"
            }
            assert sum(bins.values()) == int(overall[0]["count"])  # the bins partition the held-out tokens
            if side == "encoder":
                assert bins == {str(b): test_words[w] for b, w in enumerate(ranked, start=1) if test_words[w]}
                parity = {
                    row["group"]: int(row["count"]) for row in layer_rows if row["group_kind"] == "parity"
                }
                assert parity == {
                    "low": sum(n for w, n in test_words.items() if int(w[1:]) < 5),
                    "high": sum(n for w, n in test_words.items() if int(w[1:]) >= 5),
                }
            else:
                assert "parity" not in kinds  # no target grouping given
            if layer == 0:
                assert float(overall[0]["accuracy"]) > 0.95  # the embedding names its own token


def test_layer_probes_default_bins_and_caps(setup):
    out = setup / "capped.csv"
    args = ["layer-probes", *probe_files(setup), "--output", str(out), "--sides", "decoder"]
    args += [
        "--max-sentences",
        "50",
        "--hidden",
        "32",
        "--lr",
        "5e-3",
        "--batch-size",
        "64",
        "--max-epochs",
        "3",
    ]
    with single_thread():
        assert main(args) == 0
    rows = read_csv(out)
    assert {row["side"] for row in rows} == {"decoder"} and {row["variant"] for row in rows} == {"test"}
    overall = [row for row in rows if row["group_kind"] == "all"]
    assert len(overall) == 3 and len({row["count"] for row in overall}) == 1
    tested = int(overall[0]["count"])
    for layer in ("0", "1", "2"):
        bins = [int(r["count"]) for r in rows if r["layer"] == layer and r["group_kind"] == "frequency_bin"]
        assert sum(bins) == tested
    # the words of the test file's first 50 sentences (decoder: </s> is no input)
    assert tested == sum(len(line.split()) for line in (setup / "test.tgt").read_text().splitlines()[:50])


def one_hot_states(path, sentences: list[list[int]], code: dict[int, int]) -> None:
    """An encoder-only states file of ``sentences`` (+ </s>) whose two layers hold, at each token t,
    the one-hot vector of ``code[t]`` (x 4)."""
    data = ParallelData.from_sequences(
        [([*s, EOS_ID], [*s, EOS_ID]) for s in sentences], np.arange(1, len(sentences) + 1)
    )
    index = side_index(data, "encoder")
    states = 4 * np.eye(VOCAB, dtype=np.float32)[[code.get(int(t), int(t)) for t in index.tokens]]
    names = ("encoder.embeddings", "encoder.layers.0")
    write_state_file(path, data, {"encoder": index}, dict.fromkeys(names, states), {"vocab_size": VOCAB})


def test_layer_probes_train_on_the_training_states_stop_on_dev_and_report_on_test(tmp_path, monkeypatch):
    """The paper's protocol (seed brief §1.7): the probe learns on training-corpus states, early-stops on
    the dev set's and is scored on the test set's. The test set codes half the word types as another
    type, which no training state does: a probe that learned from the training states gets exactly the
    other half right (counted here from the sentences), one that learned from the test states nearly all."""
    import nmtvariants.analysis.layer_probes as layer_probes

    rng = np.random.default_rng(3)
    words = list(range(len(SPECIALS), VOCAB))  # 16 types; the upper half is recoded in the test set
    sentences = {
        part: [rng.choice(words, size=int(n)).tolist() for n in rng.integers(2, 7, size=count)]
        for part, count in (("train", 200), ("valid", 30), ("test", 40))
    }
    upper = words[len(words) // 2 :]
    recoded = {t: upper[(i + 1) % len(upper)] for i, t in enumerate(upper)}
    for part, tokens in sentences.items():
        one_hot_states(tmp_path / f"{part}.npz", tokens, recoded if part == "test" else {})
    seen = []

    def recording(train, valid, test, n_classes, config):
        seen.append((train, valid, test))
        return train_mlp_probe(train, valid, test, n_classes, config)

    monkeypatch.setattr(layer_probes, "train_mlp_probe", recording)
    args = ["layer-probes", *probe_files(tmp_path), "--output", str(tmp_path / "p.csv")]
    args += ["--hidden", "32", "--dropout", "0", "--lr", "1e-2", "--batch-size", "64", "--max-epochs", "30"]
    with single_thread():
        assert main(args) == 0
    assert len(seen) == 2  # embeddings and layer 1
    for train, valid, test in seen:
        for part, data in (("train", train), ("valid", valid), ("test", test)):
            flat = [t for sentence in sentences[part] for t in sentence]  # </s> dropped
            assert data.labels.tolist() == flat, part
            coded = [recoded.get(t, t) for t in flat] if part == "test" else flat
            assert data.features.argmax(1).tolist() == coded, part
    test_tokens = [t for sentence in sentences["test"] for t in sentence]
    expected = sum(t not in recoded for t in test_tokens) / len(test_tokens)
    overall = [row for row in read_csv(tmp_path / "p.csv") if row["group_kind"] == "all"]
    assert [int(row["count"]) for row in overall] == [len(test_tokens)] * 2
    assert [float(row["accuracy"]) for row in overall] == [pytest.approx(expected)] * 2


def test_similarity_and_gate_stats_commands(setup, tmp_path):
    out = tmp_path / "sim.csv"
    args = [
        "similarity",
        "--states",
        f"base={setup / 'train.npz'}",
        str(setup / "test.npz"),
        "--output",
        str(out),
    ]
    assert main(args) == 0
    rows = read_csv(out)
    assert list(rows[0]) == [
        "variant",
        "side",
        "layer",
        "name",
        "cosine",
        "token_cosine",
        "sentences",
        "tokens",
    ]
    assert [(r["variant"], r["side"], r["layer"]) for r in rows] == [
        (variant, side, str(layer))
        for variant in ("base", "test")
        for side in ("encoder", "decoder")
        for layer in range(3)
    ]
    # a shortcut model's checkpoint (untrained) through gate-stats
    model = tiny_model({"shortcuts": {"kind": "feature_fusion"}})
    vocab = Vocabulary([*SPECIALS, *(f"v{i}" for i in range(VOCAB - len(SPECIALS)))])
    vocab.save(tmp_path / "vocab.txt")
    torch.save(
        {"model_config": model.cfg.to_dict(), "vocab_size": VOCAB, "model": model.state_dict()},
        tmp_path / "ff.pt",
    )
    write_lines(tmp_path / "t.src", ["v1 v2 v3", "v4 v5"])
    write_lines(tmp_path / "t.tgt", ["v3 v2", "v5 v4 v6 v7"])
    args = ["gate-stats", "--checkpoint", str(tmp_path / "ff.pt"), "--vocab", str(tmp_path / "vocab.txt")]
    args += [
        "--source",
        str(tmp_path / "t.src"),
        "--target",
        str(tmp_path / "t.tgt"),
        "--output",
        str(tmp_path / "g.csv"),
    ]
    with single_thread():
        assert main(args) == 0
    gates = read_csv(tmp_path / "g.csv")
    assert len(gates) == 8 and {row["variant"] for row in gates} == {"ff"}
    assert list(gates[0]) == [
        *("variant", "side", "layer", "attention", "gate", "name"),
        *("mean", "std", "above_half", "positions", "elements"),
    ]
    assert [int(r["positions"]) for r in gates] == [7] * 4 + [8] * 4  # (3 + 2) + 2 </s>; (2 + 4) + 2 <s>


def test_bad_input_is_one_line_and_exit_code_2(setup, tmp_path, capsys):
    partial = tmp_path / "partial.npz"
    file = read_state_file(setup / "test.npz")
    names = ["encoder.embeddings", "encoder.layers.1"]  # layers.0 not extracted
    write_state_file(
        partial,
        file.sentences,
        {"encoder": file.indices["encoder"]},
        {n: file.load(n).states for n in names},
        file.meta,
    )
    capsys.readouterr()
    assert main(["similarity", "--states", str(partial), "--output", str(tmp_path / "x.csv")]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "encoder.layers.0" in error and "partial.npz" in error
    assert not (tmp_path / "x.csv").exists()

    write_lines(tmp_path / "bad.parity", ["low"] * 60)
    args = ["layer-probes", *probe_files(setup)]
    args += ["--output", str(tmp_path / "p.csv"), "--source-group", f"pos={tmp_path / 'bad.parity'}"]
    assert main(args) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "bad.parity:1" in error and "one label per BPE token" in error
    for flags, message in (
        (["--target-frequency", str(setup / "train.tgt")], "--target-frequency needs --vocab"),
        (["--source-group", "pos"], "--source-group 'pos': expected NAME=FILE"),
    ):
        assert main([*args[:4], "--output", str(tmp_path / "p.csv"), *flags]) == 2
        assert message in capsys.readouterr().err.strip()
    assert not (tmp_path / "p.csv").exists()

    args = ["gate-stats", "--checkpoint", str(setup / "model.pt"), "--vocab", str(setup / "vocab.txt")]
    args += [
        "--source",
        str(setup / "test.src"),
        "--target",
        str(setup / "test.tgt"),
        "--output",
        str(tmp_path / "g.csv"),
    ]
    with single_thread():
        assert main(args) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "no shortcut gates" in error
