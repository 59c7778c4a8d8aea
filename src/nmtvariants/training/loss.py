"""Label-smoothed cross entropy, summed over real target tokens, with the plain NLL beside it.

The smoothed target puts ``1 - ε`` on the gold token and ``ε / (V - 1)`` on every other type,
which is what both the lexical-shortcuts code (``MaskedCrossEntropy``) and fairseq's
``label_smoothed_cross_entropy`` compute. The loss is returned as a *sum*: the trainer divides by
the number of target tokens of the whole update (all delayed batches, all ranks), so gradient
accumulation and data parallelism give the same update as one big batch. The NLL (no smoothing)
is returned detached for logging and validation perplexity: smoothing must not leak into the
figures that are compared with the papers.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from nmtvariants.data.vocab import PAD_ID


def label_smoothed_nll(
    logits: torch.Tensor,
    target: torch.Tensor,
    epsilon: float = 0.1,
    ignore_index: int | None = PAD_ID,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(smoothed loss sum, nll sum)`` over positions whose target is not ``ignore_index``.

    ``logits`` is ``[..., V]`` and ``target`` the matching ``[...]``; logits in half precision are
    promoted to float32 before the softmax. Passing only the non-pad rows (``ignore_index=None``)
    skips the masking work, which is what the trainer does.
    """
    vocab = logits.size(-1)
    logits = logits.reshape(-1, vocab)
    target = target.reshape(-1)
    if ignore_index is not None:
        keep = target.ne(ignore_index)
        logits, target = logits[keep], target[keep]
    lprobs = F.log_softmax(logits.float(), dim=-1)
    nll = -lprobs.gather(1, target.unsqueeze(1)).squeeze(1)
    nll_sum = nll.sum()
    if epsilon == 0.0:
        return nll_sum, nll_sum.detach()
    smooth = -lprobs.sum(-1)
    eps_other = epsilon / (vocab - 1)
    loss = (1.0 - epsilon - eps_other) * nll_sum + eps_other * smooth.sum()
    return loss, nll_sum.detach()
