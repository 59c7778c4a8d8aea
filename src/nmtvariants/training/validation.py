"""Validation loss over ranks, and the sums of auxiliary terms that training logs and validation
report alike (every rank must reduce the same names, so the helpers live beside each other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from nmtvariants.data.batching import collate, epoch_batches, width_multiple
from nmtvariants.data.dataset import ParallelData
from nmtvariants.training.distributed import DistInfo, all_reduce_sum
from nmtvariants.training.logging_utils import perplexity
from nmtvariants.training.objective import LossModule, autocast_context

# A hook the lead can wire for validation BLEU: (model in eval mode, update) -> {"bleu": 27.3, ...}.
# Called on rank 0 only; its numbers are logged and "bleu" can drive early stopping.
ValidationHook = Callable[[nn.Module, int], dict[str, float]]


@torch.no_grad()
def evaluate(
    model: nn.Module,
    data: ParallelData,
    batch_tokens: int,
    epsilon: float,
    info: DistInfo,
    amp: str = "none",
) -> dict[str, float]:
    """Per-token NLL (no smoothing), label-smoothed loss and auxiliary terms on ``data``, sharded
    over ranks."""
    loss_module = LossModule(model, epsilon)
    was_training = model.training
    model.eval()
    batches = epoch_batches(
        data.src_lengths, data.tgt_lengths, batch_tokens, 0, 0, maxi_batch=0, shuffle=False
    )
    multiple = width_multiple(info.device, amp != "none")
    totals = torch.zeros(3, dtype=torch.float64, device=info.device)
    aux_sums: dict[str, torch.Tensor] = {}
    for indices in batches[info.rank :: info.world_size]:
        batch = collate(data, indices, multiple).to(info.device)
        with autocast_context(amp, info.device):
            _, loss, nll, aux = loss_module(batch.inputs, batch.tgt_in, batch.tgt_out)
        add_terms(aux_sums, aux)
        totals += torch.stack(
            [
                loss.double(),
                nll.double(),
                torch.tensor(batch.num_tokens, device=info.device, dtype=torch.float64),
            ]
        )
    totals = all_reduce_sum(totals, info).tolist()
    terms = reduce_terms(aux_sums, info)
    model.train(was_training)
    tokens = max(totals[2], 1.0)
    metrics = {
        "valid_loss": totals[0] / tokens,
        "valid_nll": totals[1] / tokens,
        "valid_ppl": perplexity(totals[1] / tokens),
        "valid_tokens": int(totals[2]),
    }
    metrics.update({f"valid_aux_{name}": total / tokens for name, total in terms.items()})
    return metrics


def add_terms(sums: dict[str, torch.Tensor], terms: dict[str, torch.Tensor]) -> None:
    """Accumulate auxiliary terms by name (in float64)."""
    for name, value in terms.items():
        sums[name] = sums[name] + value.double() if name in sums else value.double()


def reduce_terms(sums: dict[str, torch.Tensor], info: DistInfo) -> dict[str, float]:
    """Sum auxiliary terms over ranks; a term some rank never saw counts 0 there (the names are
    gathered first, so that every rank reduces a tensor of the same size)."""
    names = sorted(sums)
    if info.distributed:
        everyone: list[Any] = [None] * info.world_size
        dist.all_gather_object(everyone, names)
        names = sorted(set().union(*everyone))
    if not names:
        return {}
    stacked = torch.stack(
        [sums.get(name, torch.zeros((), dtype=torch.float64, device=info.device)) for name in names]
    )
    return dict(zip(names, all_reduce_sum(stacked, info).tolist(), strict=True))
