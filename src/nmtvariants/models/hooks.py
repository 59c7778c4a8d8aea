"""Recording sub-layer outputs and attention maps on request, at no cost when nobody asks.

Every analysis of the four studies (lexical probes, reconstruction probes, alignment from attention,
gate statistics) needs internal states. PyTorch forward hooks would see module *outputs* only and would
force the attention weights to be materialised always; instead every sub-layer holds a reference to one
shared :class:`HookState` and checks a single attribute (``recorder is None``) per call. While a
:func:`capture` block is active, tensors are recorded under stable dotted names:

``{side}.embeddings``                     embedding-layer output E (after scaling, positions, dropout)
``{side}.layers.{i}.{sub}.out``           a sub-layer's own output, before dropout and residual
``{side}.layers.{i}.{sub}.state``         the running state after that sub-layer's residual (and norm)
``{side}.layers.{i}.{sub}.weights``       attention probabilities [B, H, Tq, Tk] (only with attention=True)
``{side}.layers.{i}``                     the layer output
``{side}.output``                         the stack output (after the final LayerNorm, if any)

with ``side`` in {encoder, decoder} and ``sub`` in {self, cross, ffn} (cross with several memories:
``cross.{k}``). A multi-source model records its further text sources under ``encoder{k}`` (k >= 1;
with shared encoders the sub-layer names stay ``encoder.layers...``, one entry per source in order) and
its feature encoder's projection as ``features.output``. Each name maps to a list with one tensor per
call (incremental decoding calls once per step). Plug-ins may record more under their own names (e.g.
shortcut gates).
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterator

import torch
from torch import nn


class Recorder:
    """Collects detached tensors by name; ``attention=True`` also asks for attention probabilities."""

    def __init__(self, attention: bool = False, include: tuple[str, ...] | None = None, detach: bool = True):
        self.attention = attention
        self.include = include
        self.detach = detach
        self.records: dict[str, list[torch.Tensor]] = {}

    def wants(self, name: str) -> bool:
        return self.include is None or any(fnmatch.fnmatchcase(name, pattern) for pattern in self.include)

    def put(self, name: str, tensor: torch.Tensor) -> None:
        if self.wants(name):
            self.records.setdefault(name, []).append(tensor.detach() if self.detach else tensor)

    def __getitem__(self, name: str) -> list[torch.Tensor]:
        return self.records[name]

    def __contains__(self, name: str) -> bool:
        return name in self.records

    def keys(self) -> list[str]:
        return list(self.records)

    def cat(self, name: str, dim: int = 1) -> torch.Tensor:
        """All calls of ``name`` joined along ``dim`` (time for states recorded step by step)."""
        return torch.cat(self.records[name], dim=dim)


class HookState:
    """The one mutable object every sub-layer of a model shares; ``recorder`` is None when unused."""

    __slots__ = ("recorder",)

    def __init__(self) -> None:
        self.recorder: Recorder | None = None


@contextlib.contextmanager
def capture(
    model: nn.Module,
    attention: bool = False,
    include: tuple[str, ...] | list[str] | None = None,
    detach: bool = True,
) -> Iterator[Recorder]:
    """Record internal states of ``model`` (a Transformer) for the duration of the block.

    ``include``: glob patterns of names to keep (default all). ``attention=True`` makes attention
    layers compute explicit probabilities (slower) and record them.
    """
    hooks: HookState = model.hooks  # type: ignore[assignment]
    if hooks.recorder is not None:
        raise RuntimeError("capture() blocks cannot be nested on the same model")
    recorder = Recorder(
        attention=attention, include=tuple(include) if include is not None else None, detach=detach
    )
    hooks.recorder = recorder
    try:
        yield recorder
    finally:
        hooks.recorder = None
