"""Label-smoothed cross entropy against an explicit float64 target distribution."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.training.loss import label_smoothed_nll, projected_label_smoothed_nll


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


@pytest.mark.parametrize("epsilon", [0.0, 0.1])
@pytest.mark.parametrize("block", [1, 4, 64])
def test_projected_loss_and_its_gradients_match_float64_reference(epsilon: float, block: int) -> None:
    """The fused projection + loss (blocks of rows, gradients taken in the forward) against the
    explicit float64 distribution of ``reference`` through autograd, for values and both gradients."""
    generator = torch.Generator().manual_seed(1)
    states = torch.randn(9, 6, generator=generator, requires_grad=True)
    weight = torch.randn(13, 6, generator=generator, requires_grad=True)
    target = torch.randint(1, 13, (9,), generator=generator)
    loss, nll = projected_label_smoothed_nll(states, weight, target, epsilon, block=block)
    (loss * 0.5).backward()

    states64 = states.detach().double().requires_grad_()
    weight64 = weight.detach().double().requires_grad_()
    ref_loss, ref_nll = reference(states64 @ weight64.T, target, epsilon)
    (ref_loss * 0.5).backward()
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-5)
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-5)
    assert not nll.requires_grad
    torch.testing.assert_close(states.grad, states64.grad.float(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(weight.grad, weight64.grad.float(), rtol=1e-4, atol=1e-5)


def test_projected_loss_is_stable_for_very_unlikely_gold_tokens() -> None:
    """Logit gaps far beyond float32's exp range: the gold token's probability underflows, so the
    log-sum-exp is taken from the largest probability instead, and the loss stays finite and equal
    to the float64 value."""
    states = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    weight = torch.tensor([[200.0, 0.0], [0.0, 0.0], [-200.0, 300.0]])
    target = torch.tensor([2, 1])
    loss, nll = projected_label_smoothed_nll(states, weight, target, 0.1)
    ref_loss, ref_nll = reference((states @ weight.T).double(), target, 0.1)
    assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-6)
    assert nll.item() == pytest.approx(ref_nll.item(), rel=1e-6)


def test_projected_loss_under_bf16_autocast_is_close_to_fp32() -> None:
    generator = torch.Generator().manual_seed(2)
    states = torch.randn(40, 32, generator=generator, requires_grad=True)
    weight = (torch.randn(50, 32, generator=generator) * 0.2).requires_grad_()
    target = torch.randint(1, 50, (40,), generator=generator)
    full, _ = projected_label_smoothed_nll(states, weight, target, 0.1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        half, _ = projected_label_smoothed_nll(states, weight, target, 0.1)
    half.backward()
    assert half.dtype == torch.float32 and weight.grad.dtype == torch.float32
    assert half.item() == pytest.approx(full.item(), rel=2e-2)
