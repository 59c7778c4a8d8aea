"""`extract-states` and `probe` through the command line, on a tiny trained model (target = source
reversed), whose embeddings and encoder states certainly hold the source words."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from model_fixtures import REVERSE_VOCAB, single_thread, trained_reverse_model

from nmtvariants.analysis.states import read_state_file
from nmtvariants.cli import main
from nmtvariants.data.vocab import SPECIALS, Vocabulary
from nmtvariants.fileio import write_lines

WORDS = [f"w{i}" for i in range(REVERSE_VOCAB - len(SPECIALS))]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("probes_cli")
    model = trained_reverse_model()
    torch.save(
        {"model_config": model.cfg.to_dict(), "vocab_size": REVERSE_VOCAB, "model": model.state_dict()},
        root / "model.pt",
    )
    Vocabulary([*SPECIALS, *WORDS]).save(root / "vocab.txt")
    rng = np.random.default_rng(0)
    sources = [
        [WORDS[k] for k in rng.integers(0, len(WORDS), size=int(n))] for n in rng.integers(3, 8, size=420)
    ]
    write_lines(root / "test.src", [" ".join(s) for s in sources])
    write_lines(root / "test.tgt", [" ".join(reversed(s)) for s in sources])
    # a grouping: one label per BPE token ("low" for w0-w4, "high" for w5-w9)
    write_lines(
        root / "test.parity", [" ".join("low" if int(w[1:]) < 5 else "high" for w in s) for s in sources]
    )
    write_lines(root / "bad.parity", ["low"] * 420)
    with single_thread():
        code = main(
            [
                "extract-states",
                "--checkpoint",
                str(root / "model.pt"),
                "--vocab",
                str(root / "vocab.txt"),
                "--source",
                str(root / "test.src"),
                "--target",
                str(root / "test.tgt"),
                "--output",
                str(root / "states.npz"),
                "--names",
                "encoder.embeddings",
                "encoder.output",
                "decoder.layers.[0-9]",
                "--max-sentences",
                "400",
            ]
        )
    assert code == 0
    return root


def probe(root, *args: str) -> dict:
    with single_thread():
        code = main(
            ["probe", "--states", str(root / "states.npz"), "--output", str(root / "out.json"), *args]
        )
    assert code == 0
    return json.loads((root / "out.json").read_text())


def test_extract_states_writes_the_requested_names(setup):
    file = read_state_file(setup / "states.npz")
    assert file.names == ["decoder.layers.0", "decoder.layers.1", "encoder.embeddings", "encoder.output"]
    assert len(file.sentences) == 400 and file.vocab_size == REVERSE_VOCAB
    assert file.meta["max_sentences"] == 400
    assert file.load("encoder.output").states.shape == (int(file.sentences.src_lengths.sum()), 32)


def test_lexical_probe_on_embeddings_with_groups(setup):
    report = probe(
        setup,
        *(
            "--kind",
            "mlp",
            "--name",
            "encoder.embeddings",
            "--hidden",
            "64",
            "--lr",
            "5e-3",
            "--batch-size",
            "64",
        ),
        *("--group", f"parity={setup / 'test.parity'}", "--frequency-bins", str(setup / "test.src")),
        *("--vocab", str(setup / "vocab.txt"), "--bins", "5", "--max-epochs", "30"),
    )
    assert report["name"] == "encoder.embeddings" and report["side"] == "encoder" and report["kind"] == "mlp"
    assert report["split"] == {"train": 280, "valid": 40, "test": 80}
    assert report["test"]["accuracy"] > 0.95  # the embedding of a word names the word
    assert set(report["test"]["groups"]["parity"]) == {"low", "high"}  # </s> dropped: no "<special>"
    assert set(report["test"]["groups"]["frequency_bin"]) <= {str(b) for b in range(1, 6)}
    counts = sum(group["tokens"] for group in report["test"]["groups"]["parity"].values())
    assert counts == report["test"]["tokens"]


def test_reconstruction_probe_of_the_source_from_encoder_states(setup):
    args = ("--kind", "reconstruction", "--name", "encoder.output", "--decode", "source")
    sizes = ("--d-model", "32", "--heads", "2", "--d-ff", "64", "--dropout", "0", "--lr", "3e-3")
    report = probe(setup, *args, *sizes, "--batch-sentences", "16", "--max-epochs", "40", "--patience", "5")
    assert report["kind"] == "reconstruction" and report["causal"] is False and report["decode"] == "source"
    assert report["test"]["perplexity"] < 1.5, report["test"]  # uniform guessing: 10
    target = probe(
        setup,
        "--kind",
        "reconstruction",
        "--name",
        "decoder.layers.1",
        "--decode",
        "target",
        *sizes,
        "--max-epochs",
        "2",
    )
    assert target["causal"] is True  # decoder states -> target: the memory mask is on by default


def test_bad_input_exits_with_code_2(setup, capsys):
    base = [
        "probe",
        "--states",
        str(setup / "states.npz"),
        "--output",
        str(setup / "x.json"),
        "--kind",
        "mlp",
    ]
    assert main([*base, "--name", "encoder.layers.7"]) == 2
    assert "no states named 'encoder.layers.7'" in capsys.readouterr().err
    assert main([*base, "--name", "encoder.output", "--group", f"p={setup / 'bad.parity'}"]) == 2
    assert "bad.parity:1: 1 labels but the BPE line has" in capsys.readouterr().err
    assert main([*base[:-2], "--kind", "reconstruction", "--name", "encoder.output"]) == 2
    assert "needs --decode" in capsys.readouterr().err
    assert main(["extract-states", "--checkpoint", str(setup / "none.pt"), "--vocab", "v", "--source", "s",
                 "--target", "t", "--output", "o", "--names", "x"]) == 2  # fmt: skip
    assert "checkpoint not found" in capsys.readouterr().err
