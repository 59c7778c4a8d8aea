"""`translate --dtype bfloat16` (and int8, whose tolerances tests/test_quantize.py explains): the
README promises the BLEU of float32 and the help text promises output scores computed in float32.
Checked on the small reverser of model_fixtures, saved as a checkpoint and translated by the real
command.

Tolerance: bfloat16 keeps 8 significant bits, so two beam candidates whose logits differ by less
than about 1% can swap places. On a trained model that changes few outputs; here at most 2% of the
sentences may differ from the float32 ones and corpus BLEU may move by at most 1 point.
"""

from __future__ import annotations

import pytest
import sacrebleu
import torch
from model_fixtures import (
    saved_reverse_model,
    single_thread,
    translate_saved,
)

SENTENCES = 200


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Checkpoint, vocabulary, source file and references (the reversed sources)."""
    folder = tmp_path_factory.mktemp("dtype")
    return folder, saved_reverse_model(folder, SENTENCES)


def translate(folder, dtype: str, output: str, *extra: str) -> list[str]:
    return translate_saved(folder, dtype, output, *extra)


@pytest.mark.parametrize(
    ("dtype", "bleu_moves", "sentences_differ"),
    [("bfloat16", 1.0, SENTENCES // 50), ("int8", 1.5, 4 * SENTENCES // 100)],  # int8: test_quantize.py
)
def test_reduced_precision_gives_the_bleu_of_float32(setup, dtype, bleu_moves, sentences_differ):
    folder, references = setup
    full = translate(folder, "float32", "float32.txt", "--device", "cpu")
    reduced = translate(folder, dtype, f"{dtype}.txt", "--device", "cpu")
    assert len(full) == len(reduced) == SENTENCES
    full_bleu = sacrebleu.corpus_bleu(full, [references]).score
    reduced_bleu = sacrebleu.corpus_bleu(reduced, [references]).score
    assert full_bleu > 90  # the model learned the task, so the comparison means something
    assert abs(full_bleu - reduced_bleu) <= bleu_moves, (full_bleu, reduced_bleu)
    assert sum(a != b for a, b in zip(full, reduced, strict=True)) <= sentences_differ


def test_bfloat16_nbest_scores_are_float32(setup):
    """A score summed in bfloat16 lies on bfloat16's grid (8 significant bits: steps of ~0.0005 near
    0.1); float32 scores almost never do. The n-best lists are also ordered by score, as in float32."""
    folder, _ = setup
    lines = translate(folder, "bfloat16", "nbest.txt", "--nbest", "3", "--beam", "3", "--length-norm", "none")
    scores = [float(line.split(" ||| ")[2]) for line in lines]
    assert len(scores) == 3 * SENTENCES
    on_grid = sum(abs(float(torch.tensor(s).bfloat16()) - s) < 5e-7 for s in scores)
    assert on_grid < len(scores) // 10, f"{on_grid} of {len(scores)} scores are bfloat16 numbers"
    for start in range(0, len(scores), 3):
        assert scores[start] >= scores[start + 1] >= scores[start + 2]
    # and they are near the float32 model's scores of the same lists (bf16 weights move them a little)
    full = translate(folder, "float32", "nbest32.txt", "--nbest", "3", "--beam", "3", "--length-norm", "none")
    best_half = [float(line.split(" ||| ")[2]) for line in lines[::3]]
    best_full = [float(line.split(" ||| ")[2]) for line in full[::3]]
    assert sum(abs(a - b) for a, b in zip(best_half, best_full, strict=True)) / SENTENCES < 0.05


def test_auto_device_decodes_on_the_gpu_when_torch_sees_one(monkeypatch):
    """`translate` and `score` default to --device auto: rule translate passes no device, so a job
    on a GPU node decodes there and one on a CPU node on the CPU."""
    import torch

    from nmtvariants.inference.cli import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu" and resolve_device("cuda:1") == "cuda:1"
