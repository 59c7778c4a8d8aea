"""Label-smoothed cross entropy, summed over real target tokens, with the plain NLL beside it.

The smoothed target ``q`` puts ``1 - ε`` on the gold token and ``ε / (V - 1)`` on every other
type, which is what both the lexical-shortcuts code (``MaskedCrossEntropy``) and fairseq's
``label_smoothed_cross_entropy`` compute. The loss is returned as a *sum*: the trainer divides by
the number of target tokens of the whole update (all delayed batches, all ranks), so gradient
accumulation and data parallelism give the same update as one big batch. The NLL (no smoothing)
is returned detached for logging and validation perplexity: smoothing must not leak into the
figures that are compared with the papers.

Speed: for a small model the ``[N, V]`` logits are the largest tensor of the step. Written out
with ``log_softmax``, ``gather`` and ``sum``, autograd makes several full passes over it (and a
zero-filled ``[N, V]`` for the gather's gradient). Since ``∂loss/∂logits = softmax - q`` exactly
(the smoothing weights add up to one), :class:`_SmoothedCrossEntropy` computes the forward from
``logsumexp`` and the backward as ``exp(logits - lse) - q`` in place: one ``[N, V]`` allocation.
"""

from __future__ import annotations

import torch

from nmtvariants.data.vocab import PAD_ID


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Sum over rows of ``-Σ_v q(v) log softmax(x)(v)`` and the summed NLL, for 2-D float logits."""

    @staticmethod
    def forward(ctx, logits: torch.Tensor, target: torch.Tensor, epsilon: float):
        vocab = logits.size(-1)
        eps_other = epsilon / (vocab - 1)
        lse = torch.logsumexp(logits, dim=-1)
        gold = logits.gather(1, target.unsqueeze(1)).squeeze(1)
        nll = (lse - gold).sum()
        loss = (
            nll
            if epsilon == 0.0
            else (1.0 - epsilon - eps_other) * nll + eps_other * (vocab * lse.sum() - logits.sum())
        )
        ctx.save_for_backward(logits, lse, target)
        ctx.epsilon = epsilon
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor, _grad_nll: torch.Tensor):
        logits, lse, target = ctx.saved_tensors
        epsilon = ctx.epsilon
        eps_other = epsilon / (logits.size(-1) - 1)
        grad = torch.sub(logits, lse.unsqueeze(1)).exp_()
        if eps_other:
            grad.sub_(eps_other)
        grad.scatter_add_(
            1, target.unsqueeze(1), torch.full_like(lse, -(1.0 - epsilon - eps_other)).unsqueeze(1)
        )
        grad.mul_(grad_loss)
        return grad, None, None


def label_smoothed_nll(
    logits: torch.Tensor,
    target: torch.Tensor,
    epsilon: float = 0.1,
    ignore_index: int | None = PAD_ID,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(smoothed loss sum, nll sum)`` over positions whose target is not ``ignore_index``.

    ``logits`` is ``[..., V]`` and ``target`` the matching ``[...]``; logits in half precision are
    promoted to float32 first. Passing only the non-pad rows (``ignore_index=None``) skips the
    masking work, which is what the trainer does.
    """
    vocab = logits.size(-1)
    logits = logits.reshape(-1, vocab)
    target = target.reshape(-1)
    if ignore_index is not None:
        keep = target.ne(ignore_index)
        logits, target = logits[keep], target[keep]
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    loss, nll = _SmoothedCrossEntropy.apply(logits, target, float(epsilon))
    return loss, nll.detach()
