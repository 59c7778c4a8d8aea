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


class _ProjectedSmoothedCrossEntropy(torch.autograd.Function):
    """Output projection and label-smoothed cross entropy, a block of rows at a time.

    ``∂loss/∂logits = softmax - q`` is known in the forward, so each block's gradients with respect
    to the states and the output weights are taken there and the block's logits are dropped: no
    ``[N, V]`` tensor is kept for the backward (the largest ones of a small model's step), and each
    block's logits stay in cache between the projection, the softmax and the gradient products.
    The backward only scales the stored gradients by the upstream gradient (the loss is linear in it).
    """

    @staticmethod
    def forward(ctx, states, weight, target, epsilon: float, dtype: torch.dtype, block: int):
        vocab = weight.size(0)
        eps_other = epsilon / (vocab - 1)
        gold_weight = 1.0 - epsilon - eps_other
        table = weight.detach().to(dtype)
        grad_states = torch.empty_like(states, dtype=torch.float32)
        grad_weight = torch.zeros_like(weight, dtype=torch.float32)
        loss = states.new_zeros((), dtype=torch.float32)
        nll = states.new_zeros((), dtype=torch.float32)
        for start in range(0, states.size(0), block):
            hidden = states[start : start + block].detach().to(dtype)
            gold_ids = target[start : start + block, None]
            logits = torch.mm(hidden, table.t()).float()
            top, top_id = logits.max(dim=1, keepdim=True)
            probs = torch.softmax(logits, dim=1)
            # log Σ exp(logits) from the largest probability (>= 1/V, so its log is exact to fp32)
            lse = top - probs.gather(1, top_id).log()
            block_nll = (lse - logits.gather(1, gold_ids)).sum()
            nll += block_nll
            loss += gold_weight * block_nll + eps_other * (vocab * lse.sum() - logits.sum())
            grad = probs.sub_(eps_other) if eps_other else probs
            grad.scatter_add_(1, gold_ids, torch.full_like(lse, -gold_weight))
            grad = grad.to(dtype)
            grad_states[start : start + block] = torch.mm(grad, table)
            grad_weight.add_(torch.mm(grad.t(), hidden))
        ctx.save_for_backward(grad_states, grad_weight)
        ctx.mark_non_differentiable(nll)
        ctx.state_dtype, ctx.weight_dtype = states.dtype, weight.dtype
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss: torch.Tensor, _grad_nll: torch.Tensor):
        grad_states, grad_weight = ctx.saved_tensors
        return (
            (grad_states * grad_loss).to(ctx.state_dtype),
            (grad_weight * grad_loss).to(ctx.weight_dtype),
            None,
            None,
            None,
            None,
        )


def projected_label_smoothed_nll(
    states: torch.Tensor,
    weight: torch.Tensor,
    target: torch.Tensor,
    epsilon: float = 0.1,
    block: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``label_smoothed_nll(states @ weight.T, target, epsilon, ignore_index=None)`` without the logits.

    ``states`` [N, d] are the decoder outputs of the N real target positions, ``weight`` [V, d] the
    output projection. Under autocast the products run in the autocast type and the softmax in fp32,
    as autocast would do; ``block`` rows at a time (default: ~32 MB of fp32 logits per block,
    which measured fastest on the benchmark model).
    """
    device = states.device.type
    dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else torch.float32
    if block is None:
        block = max(64, (1 << 23) // weight.size(0))
    with torch.autocast(device, enabled=False):
        loss, nll = _ProjectedSmoothedCrossEntropy.apply(states, weight, target, float(epsilon), dtype, block)
    return loss, nll
