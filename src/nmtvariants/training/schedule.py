"""The Noam learning-rate schedule (Vaswani et al. 2017), with the warm-up set per variant.

``lr(step) = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` for 1-based ``step``
(the lexical-shortcuts code writes ``(s+1)`` with a 0-based ``s``: the same numbers). It rises
linearly to its peak ``scale · (d_model · warmup)^-0.5`` at ``step == warmup`` and then decays
with the inverse square root, so fairseq's ``inverse_sqrt`` with a given peak learning rate is the
same curve with ``scale = peak · sqrt(d_model · warmup)`` (see :func:`scale_for_peak`).
The warm-up differs per variant in Emelin et al. (4000 base, 6000 shortcuts, 8000 feature-fusion),
which is why it is an argument and not a constant.

An optional *cool-down* (``train.lr_cooldown: {start, end, floor}``, shares of ``max_updates``)
multiplies the curve by a factor that falls linearly from 1 at update ``start · max_updates`` to
``floor`` at ``end · max_updates`` and stays there (the "warm-up, stable, decay" shape; ``end`` 1 and
``floor`` 0 anneal to zero at the last update). Why: a short run stopped on the inverse square root's
tail still takes large steps, so its validation perplexity wobbles from one checkpoint to the next
and seeds end at different points of the wobble; annealing settles every seed. Ending the decay
before the run does, at a small floor, leaves the last updates to show that training on at the
final learning rate no longer moves the model: the plateau record (training/plateau.py) reads the
last fifth. Measured in benchmarks/toy_convergence.py. Without it the schedule is the papers' Noam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


def noam_lr(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Learning rate for the 1-based update ``step``."""
    if step < 1:
        raise ValueError(f"steps are 1-based, got {step}")
    if warmup < 1:
        raise ValueError(f"warmup must be >= 1, got {warmup}")
    return scale * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


@dataclass(frozen=True)
class Cooldown:
    """The linear fall of the learning rate's factor from 1 at update ``start`` to ``floor`` at ``end``."""

    start: int
    end: int
    floor: float = 0.0

    def __call__(self, step: int) -> float:
        if step <= self.start:
            return 1.0
        if step >= self.end:
            return self.floor
        return 1.0 - (1.0 - self.floor) * (step - self.start) / (self.end - self.start)

    @classmethod
    def from_shares(cls, shares: dict[str, float], max_updates: int) -> Cooldown:
        """From ``{start, end (default 1), floor (default 0)}`` as shares of ``max_updates``."""
        end = round(shares.get("end", 1.0) * max_updates)
        start = min(round(shares["start"] * max_updates), end - 1)
        return cls(start, end, shares.get("floor", 0.0))


def scale_for_peak(peak_lr: float, d_model: int, warmup: int) -> float:
    """The ``scale`` that makes the Noam curve peak at ``peak_lr`` (fairseq ``--lr`` equivalent)."""
    return peak_lr * math.sqrt(d_model * warmup)


@dataclass(frozen=True)
class NoamSchedule:
    """Stateless: the learning rate is a function of the update number, so resuming needs nothing
    but the update counter (stored in the checkpoint)."""

    d_model: int
    warmup: int
    scale: float = 1.0
    cooldown: Cooldown | None = None  # None: the Noam curve itself

    def __call__(self, step: int) -> float:
        lr = noam_lr(step, self.d_model, self.warmup, self.scale)
        return lr * self.cooldown(step) if self.cooldown else lr

    @property
    def peak(self) -> float:
        """The Noam curve's peak (at ``warmup``; a cool-down that starts earlier lowers it there)."""
        return noam_lr(self.warmup, self.d_model, self.warmup, self.scale)

    def apply(self, optimizer, step: int) -> float:
        """Set the learning rate of every parameter group for update ``step``; return it."""
        lr = self(step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        return lr
