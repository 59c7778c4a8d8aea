"""The training objective as one module: model, fused output loss and auxiliary terms, and the
autocast context it runs under (shared by training updates and validation)."""

from __future__ import annotations

import contextlib

import torch
from torch import nn

from nmtvariants.data.vocab import PAD_ID
from nmtvariants.models.interfaces import SourceInputs
from nmtvariants.training.loss import projected_label_smoothed_nll


class LossModule(nn.Module):
    """Model + loss in one ``forward`` so that DDP sees every parameter used inside its forward.

    The output projection (the costliest matmul for small models) runs only on the non-pad target
    positions, fused with the loss (``projected_label_smoothed_nll``): no ``[tokens, V]`` logits
    are kept for the backward. Plug-ins' auxiliary terms are collected during the same forward.

    Returns ``(objective, loss, nll, aux)``: the summed objective to back-propagate (the smoothed
    loss plus every ``weight * term``), the smoothed loss alone, the NLL (both detached), and the
    weighted auxiliary terms by name (detached), all sums over the batch.
    """

    def __init__(self, model: nn.Module, epsilon: float):
        super().__init__()
        self.model = model
        self.epsilon = epsilon

    def forward(
        self, inputs: SourceInputs | torch.Tensor, tgt_in: torch.Tensor, tgt_out: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        inputs = SourceInputs.of(inputs)
        recorder = self.model.aux_losses
        recorder.take()  # nothing left over from an interrupted forward
        recorder.active = True
        try:
            memories = self.model.encode_inputs(inputs)
            states = self.model.decode_states(tgt_in, memories, aux=inputs.aux)
            keep = tgt_out.ne(PAD_ID)
            loss, nll = projected_label_smoothed_nll(
                states[keep], self.model.output_weight, tgt_out[keep], self.epsilon
            )
        finally:
            recorder.active = False
        objective = loss
        aux: dict[str, torch.Tensor] = {}
        for name, (total, weight) in sorted(recorder.take().items()):
            term = weight * total.float()
            objective = objective + term
            aux[name] = term.detach()
        return objective, loss.detach(), nll, aux


def autocast_context(amp: str, device: torch.device):
    """``train.amp`` as a context: none, or autocast to bf16/fp16 on ``device``'s type."""
    if amp == "none":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if amp == "bf16" else torch.float16
    return torch.autocast(device_type=device.type, dtype=dtype)
