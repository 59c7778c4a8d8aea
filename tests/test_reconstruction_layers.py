"""Reconstruction probes per decoder layer and module (analysis/reconstruction_layers.py) on a tiny
trained model whose target is its source reversed: one row per (side, layer, module), modules a
layout lacks absent, the CSV equal to the one-probe path (`extract-states` + `probe`), the causal
target mask, and the command's exit codes."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import torch
from model_fixtures import REVERSE_VOCAB, single_thread, trained_reverse_model

from nmtvariants.analysis.extract import cap_pairs, extract_states
from nmtvariants.analysis.probe_data import sequence_pairs
from nmtvariants.analysis.reconstruction_layers import (
    DECODER_MODULES,
    ENCODER,
    ReconstructionLayerSettings,
    reconstruction_layers,
    representations,
)
from nmtvariants.analysis.reconstruction_probe import ReconstructionConfig, train_reconstruction_probe
from nmtvariants.analysis.splits import split_sentences
from nmtvariants.analysis.states import StateFile, TokenStates
from nmtvariants.cli import main
from nmtvariants.data.dataset import ParallelData, binarize
from nmtvariants.data.vocab import SPECIALS, Vocabulary
from nmtvariants.fileio import write_lines
from nmtvariants.models import build_model, model_config

WORDS = [f"w{i}" for i in range(REVERSE_VOCAB - len(SPECIALS))]
# a probe small and short enough for a table of 22 probes in a few seconds
TINY = ("--d-model", "16", "--heads", "2", "--d-ff", "32", "--max-epochs", "2", "--batch-sentences", "16")
SEED = "3"


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("reconstruction_layers")
    model = trained_reverse_model()
    torch.save(
        {"model_config": model.cfg.to_dict(), "vocab_size": REVERSE_VOCAB, "model": model.state_dict()},
        root / "model.pt",
    )
    Vocabulary([*SPECIALS, *WORDS]).save(root / "vocab.txt")
    rng = np.random.default_rng(0)
    sources = [
        [WORDS[k] for k in rng.integers(0, len(WORDS), size=int(n))] for n in rng.integers(3, 8, size=300)
    ]
    write_lines(root / "test.src", [" ".join(s) for s in sources])
    write_lines(root / "test.tgt", [" ".join(reversed(s)) for s in sources])
    write_lines(root / "held.src", [" ".join(s) for s in sources[250:290]])
    write_lines(root / "held.tgt", [" ".join(reversed(s)) for s in sources[250:290]])
    return root


def on_test_set(root, name: str, *args: str) -> list[str]:
    """``name`` run on the saved model and test set, with ``args``."""
    return [
        name,
        *("--checkpoint", str(root / "model.pt"), "--vocab", str(root / "vocab.txt")),
        *("--source", str(root / "test.src"), "--target", str(root / "test.tgt")),
        *args,
    ]


def pairs_of(root, stem: str) -> ParallelData:
    return binarize(root / f"{stem}.src", root / f"{stem}.tgt", Vocabulary.load(root / "vocab.txt"))


def pairs(root, count: int) -> ParallelData:
    return cap_pairs(pairs_of(root, "test"), count)


@pytest.fixture(scope="module")
def table(setup):
    """The whole table through the command: 60 sentences, a tiny probe."""
    with single_thread():
        code = main(
            [
                *on_test_set(setup, "reconstruction-probes", "--output", str(setup / "probes.csv")),
                *("--seed", SEED, "--max-sentences", "60", *TINY),
            ]
        )
    assert code == 0
    with open(setup / "probes.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_one_row_per_side_layer_and_module(setup, table):
    expected = [
        (side, layer, module)
        for side in ("source", "target")
        for layer, module in [(0, ENCODER)] + [(n, m) for n in (1, 2) for m in DECODER_MODULES]
    ]
    assert [(r["target_side"], int(r["layer"]), r["module"]) for r in table] == expected
    assert {r["variant"] for r in table} == {"model"}  # the checkpoint's stem
    names = {(int(r["layer"]), r["module"]): r["name"] for r in table}
    assert names[(0, ENCODER)] == "encoder.output"
    assert names[(2, "TEM")] == "decoder.layers.1.self.state" and names[(2, "IFM")] == "decoder.layers.1"
    # held-out tokens: the 12 test sentences' source (or target) ids, </s> included, counted by hand
    data = pairs(setup, 60)
    test = split_sentences(60, 0.1, 0.2, int(SEED)).test
    assert len(test) == 12
    source_tokens = sum(len(data.source(int(i))) for i in test)
    target_tokens = sum(len(data.target(int(i))) for i in test)
    for row in table:
        assert int(row["tokens"]) == (source_tokens if row["target_side"] == "source" else target_tokens)
        assert float(row["perplexity"]) == pytest.approx(np.exp(float(row["nll"])))
        assert float(row["perplexity"]) >= 1.0 and 0.0 <= float(row["accuracy"]) <= 1.0


def test_the_csv_equals_one_probe_run_on_the_extracted_states(setup, table):
    """The independent path: `extract-states`, then `probe --kind reconstruction` on one name, same seed.
    IFM of layer 2 is the same tensor as its Add-Norm, so the table reused that probe: still equal."""
    with single_thread():
        names = ("decoder.layers.0.cross.out", "decoder.layers.1", "encoder.output")
        extract = on_test_set(setup, "extract-states", "--output", str(setup / "s.npz"), "--names", *names)
        assert main([*extract, "--max-sentences", "60"]) == 0
        for (side, layer, module), name in {
            ("target", 1, "SEM"): names[0],
            ("target", 2, "IFM"): names[1],
            ("source", 2, "IFM"): names[1],
            ("source", 0, ENCODER): names[2],
        }.items():
            out = setup / "one.json"
            probe = ["probe", "--kind", "reconstruction", "--states", str(setup / "s.npz"), "--name", name]
            assert main([*probe, "--decode", side, "--output", str(out), "--seed", SEED, *TINY]) == 0
            report = json.loads(out.read_text())
            row = next(
                r for r in table if (r["target_side"], int(r["layer"]), r["module"]) == (side, layer, module)
            )
            assert row["name"] == name
            assert float(row["perplexity"]) == report["test"]["perplexity"]
            assert int(row["tokens"]) == report["test"]["tokens"]
            assert report["causal"] is (side == "target" and name.startswith("decoder"))


def test_a_separate_test_set_equals_probe_with_test_states(setup):
    """With --test-source/--test-target the split holds train and valid only and every held-out
    sentence comes from the test set: as `probe --test-states` does."""
    held = ("--test-source", str(setup / "held.src"), "--test-target", str(setup / "held.tgt"))
    output = ("--output", str(setup / "held.csv"), "--modules", "SEM", "Encoder", "--decode", "target")
    with single_thread():
        run = on_test_set(setup, "reconstruction-probes", *held, *output, "--max-sentences", "60")
        assert main([*run, "--seed", SEED, *TINY]) == 0
        with open(setup / "held.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert [(int(r["layer"]), r["module"]) for r in rows] == [(0, ENCODER), (1, "SEM"), (2, "SEM")]
        name = "decoder.layers.1.cross.out"
        for states, stem in (("train.npz", "test"), ("held.npz", "held")):
            extract = on_test_set(setup, "extract-states", "--output", str(setup / states), "--names", name)
            extract[extract.index("--source") + 1] = str(setup / f"{stem}.src")
            extract[extract.index("--target") + 1] = str(setup / f"{stem}.tgt")
            assert main([*extract, "--max-sentences", "60"]) == 0
        probe = ["probe", "--kind", "reconstruction", "--states", str(setup / "train.npz"), "--name", name]
        probe += ["--test-states", str(setup / "held.npz"), "--decode", "target", "--seed", SEED, *TINY]
        assert main([*probe, "--output", str(setup / "held.json")]) == 0
    report = json.loads((setup / "held.json").read_text())
    assert report["split"] == {"train": 54, "valid": 6, "test": 40}
    assert float(rows[2]["perplexity"]) == report["test"]["perplexity"]
    assert int(rows[2]["tokens"]) == report["test"]["tokens"] == len(pairs_of(setup, "held").tgt_tokens)


def test_modules_a_layout_lacks_are_absent():
    sizes = {"d_model": 16, "n_heads": 2, "d_ff": 32, "decoder_layers": 3}
    for layout, missing in (("sem_ifm", {"TEM"}), ("simplified", {"FF", "Add-Norm"}), ("sem_tem_ifm", set())):
        model = build_model(model_config("tiny", sizes, {"decoder_layout": layout}), REVERSE_VOCAB)
        reps = representations(model)
        assert reps[0].module == ENCODER and reps[0].layer == 0
        for layer in (1, 2, 3):
            present = [r.module for r in reps if r.layer == layer]
            assert present == [m for m in DECODER_MODULES if m not in missing], layout
    assert [r.name for r in representations(model, ("TEM", "SEM")) if r.layer == 1] == [
        "decoder.layers.0.self.out",  # sem_tem_ifm: TEM is the second attention's own output
        "decoder.layers.0.cross.state",
    ]


def test_sem_ifm_table_has_no_tem(setup):
    torch.manual_seed(0)
    model = build_model(
        model_config("tiny", {"d_model": 16, "n_heads": 2, "d_ff": 32}, {"decoder_layout": "sem_ifm"}),
        REVERSE_VOCAB,
    )
    config = ReconstructionConfig(d_model=16, n_heads=2, d_ff=32, max_epochs=1, batch_sentences=16)
    settings = ReconstructionLayerSettings(max_sentences=20, decode=("target",), probe=config)
    with single_thread():
        rows = reconstruction_layers(model, pairs(setup, 300), settings, "sem_ifm")
    expected = ["SEM", "Add-NormI", "FF", "Add-Norm", "IFM"]
    assert [(r["layer"], r["module"]) for r in rows] == [(0, ENCODER)] + [
        (n, m) for n in (1, 2) for m in expected
    ]
    assert {r["variant"] for r in rows} == {"sem_ifm"}


def test_the_target_mask_stops_the_probe_from_copying(setup):
    """Layer 1's TEM at position t holds the decoder input y_{t-1}: with the whole sequence visible a
    probe reads y_t off position t+1 (perplexity near 1); under the mask it sees y_{<t} only, and the
    next word of a random sentence is a guess among 10 (the table's own figure)."""
    config = ReconstructionConfig(
        d_model=32, n_heads=2, d_ff=64, dropout=0.0, lr=3e-3, batch_sentences=16, patience=5, max_epochs=60
    )
    settings = ReconstructionLayerSettings(decode=("target",), modules=("TEM",), probe=config)
    model, data = trained_reverse_model(), pairs(setup, 300)
    with single_thread():
        rows = reconstruction_layers(model, data, settings)
        masked = next(r for r in rows if r["layer"] == 1)
        name = "decoder.layers.0.self.state"
        indices, arrays = extract_states(model, data, [name])
        file = StateFile(setup, data, indices, [name], {"vocab_size": REVERSE_VOCAB})
        states = TokenStates(name, arrays[name], indices["decoder"])
        split = split_sentences(len(data), 0.1, 0.2, config.seed)
        parts = [
            sequence_pairs(file, states, part, "target") for part in (split.train, split.valid, split.test)
        ]
        copying = train_reconstruction_probe(*parts, REVERSE_VOCAB, False, config)["test"]
    assert masked["name"] == name
    # near 1 against the masked probe's > 6: under 1.4 on the Intel machine the test was written on,
    # 1.41 on an AMD EPYC (2026-11-25, the same code: its kernels sum in another order)
    assert copying["perplexity"] < 1.5 and copying["accuracy"] > 0.9
    assert masked["perplexity"] > 6.0 and masked["accuracy"] < 0.3


def test_exit_codes(setup, capsys):
    out = ["--output", str(setup / "bad.csv"), *TINY]
    assert main(on_test_set(setup, "reconstruction-probes", *out, "--test-fraction", "0")) == 2
    assert "test_fraction must be > 0" in capsys.readouterr().err
    assert main(on_test_set(setup, "reconstruction-probes", *out, "--max-sentences", "0")) == 2
    assert "--max-sentences must be positive" in capsys.readouterr().err
    assert main(on_test_set(setup, "reconstruction-probes", *out, "--max-sentences", "2")) == 2
    assert "cannot be split" in capsys.readouterr().err
    assert (
        main(on_test_set(setup, "reconstruction-probes", *out, "--test-source", str(setup / "held.src"))) == 2
    )
    assert "--test-source and --test-target go together" in capsys.readouterr().err
    bad = on_test_set(setup, "reconstruction-probes", *out)
    bad[bad.index("--checkpoint") + 1] = str(setup / "none.pt")
    assert main(bad) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(on_test_set(setup, "reconstruction-probes", *out, "--modules", "Bogus"))
    assert exit_info.value.code == 2
    assert not (setup / "bad.csv").exists()
