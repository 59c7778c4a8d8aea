"""What a resumed run restores besides tensors: the trainer's progress and every RNG stream.

Kept apart from the trainer so that the checkpoint manager (which writes and restores them) and
the training loop (which advances them) share one definition without importing each other.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from nmtvariants.data.batching import DataPosition


@dataclass
class TrainerState:
    """Everything besides tensors that a resumed run needs to continue exactly."""

    update: int = 0
    position: DataPosition = field(default_factory=DataPosition)
    best: float | None = None
    bad_validations: int = 0
    stop_reason: str | None = None
    tokens_seen: int = 0
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "update": self.update,
            "position": self.position.as_dict(),
            "best": self.best,
            "bad_validations": self.bad_validations,
            "stop_reason": self.stop_reason,
            "tokens_seen": self.tokens_seen,
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TrainerState:
        return cls(
            update=int(state["update"]),
            position=DataPosition.from_dict(state["position"]),
            best=state.get("best"),
            bad_validations=int(state.get("bad_validations", 0)),
            stop_reason=state.get("stop_reason"),
            tokens_seen=int(state.get("tokens_seen", 0)),
            elapsed_s=float(state.get("elapsed_s", 0.0)),
        )


def rng_state() -> dict[str, Any]:
    """This process's generators in a weights_only-loadable form (tensors, ints, lists)."""
    np_state = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": random.getstate(),
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), *np_state[2:]],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` captured (dropout then continues with the same masks)."""
    random.setstate(_as_tuple(state["python"]))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), int(pos), int(has_gauss), float(cached)))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list | tuple) else value


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's generators alike (initial weights, dropout masks)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
