"""Label-smoothed cross entropy, summed over real target tokens, with the plain NLL beside it.

The smoothed target ``q`` puts ``1 - ε`` on the gold token and ``ε / (V - 1)`` on every other
type, which is what both the lexical-shortcuts code (``MaskedCrossEntropy``) and fairseq's
``label_smoothed_cross_entropy`` compute. The loss is returned as a *sum*: the trainer divides by
the number of target tokens of the whole update (all delayed batches, all ranks), so gradient
accumulation and data parallelism give the same update as one big batch. The NLL (no smoothing)
is returned detached for logging and validation perplexity: smoothing must not leak into the
figures that are compared with the papers.

Two entry points: :func:`label_smoothed_nll` takes logits (auxiliary losses, analyses) and is
written out plainly; :func:`projected_label_smoothed_nll` takes the decoder states and the output
weights, and is what the trainer uses: for a small model the ``[N, V]`` logits are the largest
tensors of a step, and it never keeps them (see :class:`_ProjectedSmoothedCrossEntropy`).
"""

from __future__ import annotations

import torch

from nmtvariants.data.vocab import PAD_ID

# Below this a float32 probability loses precision (subnormal) and its log is no longer exact.
_NORMAL_PROBABILITY = 1e-30


def label_smoothed_nll(
    logits: torch.Tensor,
    target: torch.Tensor,
    epsilon: float = 0.1,
    ignore_index: int | None = PAD_ID,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(smoothed loss sum, nll sum)`` over positions whose target is not ``ignore_index``.

    ``logits`` is ``[..., V]`` and ``target`` the matching ``[...]``; logits in half precision are
    promoted to float32 first. Passing only the non-pad rows (``ignore_index=None``) skips the
    masking work.
    """
    vocab = logits.size(-1)
    logits = logits.reshape(-1, vocab)
    target = target.reshape(-1)
    if ignore_index is not None:
        keep = target.ne(ignore_index)
        logits, target = logits[keep], target[keep]
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    eps_other = epsilon / (vocab - 1)
    log_probs = torch.log_softmax(logits, dim=-1)
    nll = -log_probs.gather(1, target.unsqueeze(1)).sum()
    # Σ_v q(v) log p(v) = (1 - ε - ε/(V-1)) log p(gold) + ε/(V-1) Σ_v log p(v)
    loss = (1.0 - epsilon - eps_other) * nll - eps_other * log_probs.sum() if epsilon else nll
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
            probs = torch.softmax(logits, dim=1)
            gold_logits, gold_probs = logits.gather(1, gold_ids), probs.gather(1, gold_ids)
            if bool(gold_probs.min() >= _NORMAL_PROBABILITY):
                # log Σ exp(logits) from the gold token's probability: its log is exact to fp32
                # while it is a normal float, which saves a pass over the block for the maximum
                lse = gold_logits - gold_probs.log()
            else:  # a gold token ~70 nats below the best: from the largest probability (>= 1/V)
                top, top_id = logits.max(dim=1, keepdim=True)
                lse = top - probs.gather(1, top_id).log()
            block_nll = (lse - gold_logits).sum()
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
