"""Extra inputs (integer streams, further sources, feature grids): binarize, the .npz, collate, errors.

Every stored or batched value is compared with a naive per-line reading of the text files.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nmtvariants.cli import main
from nmtvariants.data.batching import WIDTH_MULTIPLE, collate
from nmtvariants.data.dataset import ParallelData, binarize
from nmtvariants.data.extra_inputs import ExtraInputFiles
from nmtvariants.data.vocab import BOS_ID, PAD_ID, Vocabulary
from nmtvariants.errors import InputError
from nmtvariants.fileio import write_lines
from nmtvariants.models.interfaces import AUX_PAD

SRC = ["a b c", "b", "c c a b", "", "a a a a a a a", "b c"]
TGT = ["x y", "y", "x x y", "x", "y", "y x y"]
SRC2 = ["q r", "r", "q", "r q", "q", "r r r"]
LABELS = 5


def parents_of(line: str) -> list[int]:
    n = len(line.split())
    return [(i + 1) % n for i in range(n)]


def labels_of(line: str) -> list[int]:
    return [(3 * i + len(line)) % LABELS for i in range(len(line.split()))]


@pytest.fixture
def corpus(tmp_path):
    write_lines(tmp_path / "src", SRC)
    write_lines(tmp_path / "tgt", TGT)
    write_lines(tmp_path / "src2", SRC2)
    write_lines(tmp_path / "parents", [" ".join(map(str, parents_of(s))) for s in SRC])
    write_lines(tmp_path / "labels", [" ".join(map(str, labels_of(s))) for s in SRC])
    grid = np.random.default_rng(0).standard_normal((len(SRC), 3, 4)).astype(np.float16)
    np.save(tmp_path / "feats.npy", grid)
    vocab = Vocabulary.build(SRC + TGT + SRC2)
    return tmp_path, vocab, grid


def files(root, **changes) -> ExtraInputFiles:
    spec = dict(
        aux={"parents": root / "parents", "labels": root / "labels"},
        aux_labels={"labels": LABELS},
        sources=[root / "src2"],
        features=root / "feats.npy",
    )
    spec.update(changes)
    return ExtraInputFiles(**spec)


def expected_stream(name: str, line: str) -> list[int]:
    """The documented </s> rule: a position points to itself, a label gets its own id LABELS."""
    values = parents_of(line) if name == "parents" else labels_of(line)
    return [*values, len(line.split()) if name == "parents" else LABELS]


def test_binarize_stores_extras_for_the_kept_lines_and_round_trips(corpus):
    root, vocab, grid = corpus
    data = binarize(root / "src", root / "tgt", vocab, max_len=5, extras=files(root))
    assert data.line_numbers.tolist() == [1, 2, 3, 6]  # line 4 empty, line 5 too long
    data.save(root / "d.npz")
    back = ParallelData.load(root / "d.npz")
    back.use_features(root / "feats.npy")
    for stored in (data, back):
        for i, number in enumerate(stored.line_numbers):
            line = SRC[number - 1]
            start, end = stored.src_offsets[i], stored.src_offsets[i + 1]
            for name in ("parents", "labels"):
                assert stored.aux[name][start:end].tolist() == expected_stream(name, line)
            tokens, offsets = stored.sources[0]
            assert tokens[offsets[i] : offsets[i + 1]].tolist() == vocab.encode(SRC2[number - 1])
            assert stored.feature_rows[i] == number - 1
        assert np.array_equal(stored.features[stored.feature_rows], grid[stored.line_numbers - 1])


def test_collate_matches_a_naive_per_sentence_loop(corpus):
    root, vocab, grid = corpus
    data = binarize(root / "src", root / "tgt", vocab, extras=files(root))
    indices = np.array([4, 0, 2, 1])
    batch = collate(data, indices, WIDTH_MULTIPLE)
    inputs = batch.inputs
    assert batch.src is inputs.sources[0] and len(inputs.sources) == 2
    # widths are rounded up to a multiple of 8 (batching.WIDTH_MULTIPLE, as on CUDA and in bf16)
    width = 8 * math.ceil(max(len(SRC[data.line_numbers[i] - 1].split()) + 1 for i in indices) / 8)
    width2 = 8 * math.ceil(max(len(SRC2[data.line_numbers[i] - 1].split()) + 1 for i in indices) / 8)
    for row, i in enumerate(indices):
        line = SRC[data.line_numbers[i] - 1]
        ids = vocab.encode(line)
        assert inputs.sources[0][row].tolist() == ids + [PAD_ID] * (width - len(ids))
        ids2 = vocab.encode(SRC2[data.line_numbers[i] - 1])
        assert inputs.sources[1][row].tolist() == ids2 + [PAD_ID] * (width2 - len(ids2))
        for name in ("parents", "labels"):
            stream = expected_stream(name, line)
            assert inputs.aux[name][row].tolist() == stream + [AUX_PAD] * (width - len(stream))
        assert torch.equal(
            inputs.features[row], torch.from_numpy(grid[data.line_numbers[i] - 1].astype(np.float32))
        )
    assert inputs.features.dtype == torch.float32 and inputs.aux["parents"].dtype == torch.int64
    assert batch.tgt_in[:, 0].tolist() == [BOS_ID] * 4
    moved = batch.to("cpu")
    assert torch.equal(moved.inputs.aux["labels"], inputs.aux["labels"])


def test_feature_index_follows_the_kept_lines(corpus):
    root, vocab, grid = corpus
    big = np.concatenate([grid, grid[::-1]]).astype(np.float16)  # 12 rows: an uncleaned corpus
    np.save(root / "big.npy", big)
    write_lines(root / "src.kept", ["2", "3", "5", "7", "8", "12"])
    data = binarize(
        root / "src",
        root / "tgt",
        vocab,
        extras=files(root, features=root / "big.npy", feature_index=root / "src.kept"),
    )
    rows = np.array([1, 2, 4, 6, 7, 11])[data.line_numbers - 1]
    assert data.feature_rows.tolist() == rows.tolist()
    assert torch.equal(
        collate(data, np.arange(len(data))).inputs.features, torch.from_numpy(big[rows].astype(np.float32))
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: write_lines(r / "parents", ["1 2 0", "0", "1 2 3 0", "", "0 0 0 0 0 0 0", "1"]),
            r"parents:6: stream 'parents' has 1 values but .*src:6 has 2 BPE tokens",
        ),
        (
            lambda r: write_lines(r / "parents", ["1 2 3", "0", "1 2 3 0", "", "0 0 0 0 0 0 0", "1 0"]),
            r"parents:1: .*position 3 at token 2, outside \[0, 3\) \(sentence length 3\)",
        ),
        (
            lambda r: write_lines(r / "labels", ["1 2 3", "0", "1 2 4 0", "", "0 0 0 0 0 0 5", "1 0"]),
            r"labels:5: .*label id 5 at token 6, outside \[0, 5\) \(label count 5\)",
        ),
        (
            lambda r: write_lines(r / "labels", ["1 2 x"] * 6),
            r"labels:1: stream 'labels' must hold whitespace-separated integers",
        ),
        (lambda r: write_lines(r / "src2", SRC2[:4]), r"src2 has 4 lines but .*src has 6"),
        (
            lambda r: np.save(r / "feats.npy", np.zeros((5, 3, 4), np.float16)),
            r"feats\.npy: 5 feature rows but .*src has 6 lines",
        ),
        (
            lambda r: np.save(r / "feats.npy", np.zeros((6, 3, 4, 1), np.float16)),
            r"feats\.npy: expected a float array \[sentences, regions, channels\]",
        ),
    ],
)
def test_bad_extra_inputs_name_the_file_and_line(corpus, edit, message):
    root, vocab, _ = corpus
    edit(root)
    with pytest.raises(InputError, match=message):
        binarize(root / "src", root / "tgt", vocab, extras=files(root))


def test_feature_errors_name_the_channels_and_the_missing_index(corpus):
    root, vocab, _ = corpus
    with pytest.raises(
        InputError, match=r"feats\.npy: 4 channels per region, but the model's feature encoder reads 8"
    ):
        binarize(root / "src", root / "tgt", vocab, extras=files(root, feature_channels=8))
    write_lines(root / "index", ["1", "2", "3", "4", "9", "6"])
    with pytest.raises(
        InputError, match=r"index:5: feature index 9 \(row 8\) is missing from .*feats\.npy, which has 6 rows"
    ):
        binarize(root / "src", root / "tgt", vocab, extras=files(root, feature_index=root / "index"))
    data = binarize(root / "src", root / "tgt", vocab, extras=files(root))
    data.save(root / "d.npz")
    np.save(root / "small.npy", np.zeros((3, 3, 4), np.float16))
    with pytest.raises(InputError, match=r"small\.npy: feature row 4 \(line 5 of .*src\) is missing"):
        ParallelData.load(root / "d.npz").use_features(root / "small.npy")


def test_binarize_cli_takes_the_extra_inputs(corpus, capsys):
    root, vocab, _ = corpus
    vocab.save(root / "vocab")
    argv = [
        "binarize",
        "--src",
        str(root / "src"),
        "--tgt",
        str(root / "tgt"),
        "--vocab",
        str(root / "vocab"),
        "--output",
        str(root / "d.npz"),
        "--aux",
        f"parents={root / 'parents'}",
        "--aux",
        f"labels={root / 'labels'}",
        "--aux-labels",
        f"labels={LABELS}",
        "--extra-source",
        str(root / "src2"),
        "--features",
        str(root / "feats.npy"),
    ]
    assert main(argv) == 0
    data = ParallelData.load(root / "d.npz")
    assert (
        sorted(data.aux) == ["labels", "parents"] and len(data.sources) == 1 and data.feature_rows is not None
    )
    expected = binarize(root / "src", root / "tgt", vocab, extras=files(root))
    assert np.array_equal(data.aux["labels"], expected.aux["labels"])
    write_lines(root / "parents", ["0 0"] * 6)
    assert main(argv) == 2
    assert "parents:1: stream 'parents' has 2 values" in capsys.readouterr().err


PARSE = [
    "# text = big dogs bark",
    "1\tbig\tbig\tADJ\t_\t_\t2\tamod\t_\t_",
    "2\tdogs\tdog\tNOUN\t_\t_\t3\tnsubj\t_\t_",
    "3\tbark\tbark\tVERB\t_\t_\t0\troot\t_\t_",
    "",
]


def test_pascal_parents_file_is_read_as_a_doubled_position_stream(tmp_path):
    """`nmtvariants parents` writes middle positions with halves; the data path carries them doubled
    (``parents_x2``) with ``</s>`` at 2n: the stream the syntax module derives on its own."""
    from nmtvariants.data.extra_inputs import read_stream
    from nmtvariants.syntax.parents import MIDDLE, MIDDLE_STREAM, iter_parents_x2, stream_values

    conllu, bpe, parents = tmp_path / "s.conllu", tmp_path / "s.bpe", tmp_path / "s.parents"
    write_lines(conllu, PARSE)
    write_lines(bpe, ["big do@@ gs b@@ ar@@ k"])  # dogs -> tokens 1-2, bark -> tokens 3-5
    assert main(["parents", "--conllu", str(conllu), "--bpe", str(bpe), "-o", str(parents)]) == 0
    assert parents.read_text(encoding="utf-8").split() == ["1.5", "4", "4", "4", "4", "4"]
    (row,) = read_stream(MIDDLE_STREAM, parents, ["big do@@ gs b@@ ar@@ k"], bpe, {})
    assert row.tolist() == [3, 8, 8, 8, 8, 8, 12]
    (expected,) = (stream_values(v, MIDDLE) for v in iter_parents_x2(conllu, bpe, MIDDLE))
    assert row.tolist() == expected
    write_lines(parents, ["1.5 4 4 4 4 6"])
    with pytest.raises(InputError, match=r"s.parents:1: stream 'parents_x2' has position 6 at token 5"):
        read_stream(MIDDLE_STREAM, parents, ["big do@@ gs b@@ ar@@ k"], bpe, {})
    write_lines(parents, ["1.25 4 4 4 4 4"])
    with pytest.raises(InputError, match="not a whole or half number"):
        read_stream(MIDDLE_STREAM, parents, ["big do@@ gs b@@ ar@@ k"], bpe, {})
