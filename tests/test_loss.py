"""Label-smoothed cross entropy against an explicit float64 target distribution."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.training.loss import label_smoothed_nll


def reference(logits: torch.Tensor, target: torch.Tensor, epsilon: float):
    """sum over non-pad positions of -sum_v q(v) log p(v), q = 1-eps on gold, eps/(V-1) elsewhere."""
    logits = logits.double().reshape(-1, logits.size(-1))
    target = target.reshape(-1)
    vocab = logits.size(-1)
    total, nll = torch.zeros((), dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    for row, gold in zip(logits, target.tolist(), strict=True):
        if gold == PAD_ID:
            continue
        q = torch.full((vocab,), epsilon / (vocab - 1), dtype=torch.float64)
        q[gold] = 1.0 - epsilon
        logp = torch.log_softmax(row, -1)
        total = total - (q * logp).sum()
        nll = nll - logp[gold]
    return total, nll


@pytest.fixture
def example():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 5, 11, generator=generator) * 3
    target = torch.randint(1, 11, (3, 5), generator=generator)
    target[0, 3:] = PAD_ID
    target[2, 1:] = PAD_ID
    return logits, target


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.3])
def test_matches_explicit_distribution(example, epsilon):
    logits, target = example
    loss, nll = label_smoothed_nll(logits, target, epsilon)
    ref_loss, ref_nll = reference(logits, target, epsilon)
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-5)
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-5)
    assert not nll.requires_grad


def test_gradient_matches_float64_reference(example):
    logits, target = example
    ours = logits.clone().requires_grad_()
    label_smoothed_nll(ours, target, 0.1)[0].backward()
    ref = logits.double().clone().requires_grad_()
    reference(ref, target, 0.1)[0].backward()
    torch.testing.assert_close(ours.grad.double(), ref.grad, rtol=1e-5, atol=1e-7)
    assert torch.all(ours.grad[target.eq(PAD_ID)] == 0)


def test_equals_torch_label_smoothing_rescaled(example):
    # torch spreads eps over all V classes; eps*V/(V-1) in torch's convention is eps/(V-1) per other class
    logits, target = example
    vocab = logits.size(-1)
    torch_loss = F.cross_entropy(
        logits.reshape(-1, vocab),
        target.reshape(-1),
        ignore_index=PAD_ID,
        label_smoothing=0.1 * vocab / (vocab - 1),
        reduction="sum",
    )
    assert label_smoothed_nll(logits, target, 0.1)[0].item() == pytest.approx(torch_loss.item(), rel=1e-5)


def test_pre_masked_rows_give_the_same_sums(example):
    logits, target = example
    keep = target.ne(PAD_ID)
    masked = label_smoothed_nll(logits[keep], target[keep], 0.1, ignore_index=None)
    full = label_smoothed_nll(logits, target, 0.1)
    torch.testing.assert_close(masked[0], full[0])
    torch.testing.assert_close(masked[1], full[1])


def test_bf16_logits_are_promoted(example):
    logits, target = example
    loss, _ = label_smoothed_nll(logits.bfloat16(), target, 0.1)
    assert loss.dtype == torch.float32
    assert loss.item() == pytest.approx(reference(logits.bfloat16().float(), target, 0.1)[0].item(), rel=1e-4)
