"""Batch widths rounded up to a multiple of 8 where shapes cost (CUDA, bf16 and fp16), exact on CPU
in fp32, and the bounded oneDNN cache of ``nmtvariants train`` (issue 14: training memory grew with
the number of distinct batch shapes).

The padded batch is checked against naive per-sentence lists, and its loss and gradients against a
sum over the sentences run one at a time, with no padding at all (model in float64).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from nmtvariants.data.batching import WIDTH_MULTIPLE, collate, width_multiple
from nmtvariants.data.dataset import ParallelData
from nmtvariants.data.vocab import BOS_ID, EOS_ID, PAD_ID
from nmtvariants.models import build_model, model_config
from nmtvariants.training.trainer import LossModule

VOCAB = 30


def random_data(count: int, seed: int = 0) -> ParallelData:
    rng = np.random.default_rng(seed)
    pairs = [
        (
            [*rng.integers(4, VOCAB, size=int(rng.integers(1, 21))).tolist(), EOS_ID],
            [*rng.integers(4, VOCAB, size=int(rng.integers(1, 21))).tolist(), EOS_ID],
        )
        for _ in range(count)
    ]
    return ParallelData.from_sequences(pairs)


def test_widths_are_multiples_of_eight_and_the_extra_columns_are_padding():
    data = random_data(200)
    rng = np.random.default_rng(1)
    seen_widths = set()
    for _ in range(50):
        indices = rng.choice(len(data), size=int(rng.integers(1, 9)), replace=False)
        batch = collate(data, indices, WIDTH_MULTIPLE)
        src = [data.source(i).tolist() for i in indices]
        tgt = [data.target(i).tolist() for i in indices]
        for tensor, longest in ((batch.src, max(map(len, src))), (batch.tgt_out, max(map(len, tgt)))):
            width = tensor.size(1)
            assert width % 8 == 0 and longest <= width < longest + 8
            seen_widths.add(width)
        assert batch.tgt_in.shape == batch.tgt_out.shape
        for row, (s, t) in enumerate(zip(src, tgt, strict=True)):
            assert batch.src[row].tolist() == s + [PAD_ID] * (batch.src.size(1) - len(s))
            pad = [PAD_ID] * (batch.tgt_out.size(1) - len(t))
            assert batch.tgt_out[row].tolist() == t + pad
            assert batch.tgt_in[row].tolist() == [BOS_ID, *t[:-1], *pad]
        assert batch.num_tokens == sum(map(len, tgt))
    assert WIDTH_MULTIPLE == 8 and len(seen_widths) > 1


def test_widths_are_rounded_only_where_shapes_cost():
    """fp32 on CPU (MKL builds nothing per shape) pads to the longest sentence; CUDA and reduced
    precision (oneDNN's per-shape primitives, tensor cores) round up to WIDTH_MULTIPLE."""
    assert width_multiple("cpu", reduced_precision=False) == 1
    assert width_multiple(torch.device("cpu"), reduced_precision=True) == WIDTH_MULTIPLE
    assert width_multiple("cuda", reduced_precision=False) == WIDTH_MULTIPLE
    data = random_data(200)
    indices = np.array([0, 7, 19])
    longest = max(len(data.source(i)) for i in indices)
    assert collate(data, indices, width_multiple("cpu", False)).src.size(1) == longest


def test_loss_and_gradients_equal_a_per_sentence_run_without_padding():
    torch.manual_seed(0)
    cfg = model_config("tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32})
    model = build_model(cfg, VOCAB).double().eval()  # eval: no dropout, so both runs are deterministic
    step = LossModule(model, epsilon=0.1)
    data = random_data(40, seed=3)
    indices = np.array([5, 11, 2, 30, 17])
    batch = collate(data, indices, WIDTH_MULTIPLE)
    assert batch.src.size(1) > max(len(data.source(i)) for i in indices)  # padding was added

    def loss_and_grads(src, tgt_in, tgt_out):
        model.zero_grad()
        objective, _, nll, _ = step(src, tgt_in, tgt_out)
        objective.backward()
        return objective.detach(), nll, {n: p.grad.clone() for n, p in model.named_parameters()}

    loss, nll, grads = loss_and_grads(batch.src, batch.tgt_in, batch.tgt_out)
    ref_loss = ref_nll = 0.0
    ref_grads = {n: torch.zeros_like(p) for n, p in model.named_parameters()}
    for i in indices:
        src = torch.tensor([data.source(i).tolist()])
        tgt = data.target(i).tolist()
        one_loss, one_nll, one_grads = loss_and_grads(
            src, torch.tensor([[BOS_ID, *tgt[:-1]]]), torch.tensor([tgt])
        )
        ref_loss, ref_nll = ref_loss + one_loss, ref_nll + one_nll
        for name, grad in one_grads.items():
            ref_grads[name] += grad
    # the model runs in float64, but the fused output loss works in float32 by design (loss.py), so
    # the tolerances are float32's; a padded position that leaked in would change them by ~1e-2
    torch.testing.assert_close(loss, ref_loss, rtol=1e-6, atol=0)
    torch.testing.assert_close(nll, ref_nll, rtol=1e-6, atol=0)
    for name, grad in grads.items():
        torch.testing.assert_close(grad, ref_grads[name], rtol=1e-5, atol=1e-6, msg=name)


CHILD = (
    "import os, sys; from nmtvariants.cli import main; "
    "code = main(['train', '--config-json', {config!r}, '--outdir', {outdir!r}]); "
    "print(code, os.environ.get('ONEDNN_PRIMITIVE_CACHE_CAPACITY'), os.environ.get('LRU_CACHE_CAPACITY'))"
)
CACHES = ("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "LRU_CACHE_CAPACITY")


@pytest.mark.parametrize(
    ("user_values", "expected"),
    [
        ({}, ["64", "64"]),
        ({"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "5"}, ["5", "64"]),
        ({"LRU_CACHE_CAPACITY": "7"}, ["64", "7"]),
    ],
)
def test_train_bounds_the_kernel_caches_unless_the_user_set_them(tmp_path, user_values, expected):
    """The train command bounds oneDNN's and ideep's caches in its own process before training (each
    unbounded one grew RSS under varying batch shapes); a config with no data stops it right after
    (exit code 2), which keeps the check cheap."""
    env = {k: v for k, v in os.environ.items() if k not in CACHES}
    env.update(user_values)
    code = CHILD.format(config=json.dumps({"model": {"preset": "tiny"}}), outdir=str(tmp_path / "run"))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2", *expected], done.stderr
