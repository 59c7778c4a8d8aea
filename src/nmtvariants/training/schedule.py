"""The Noam learning-rate schedule (Vaswani et al. 2017), with the warm-up set per variant.

``lr(step) = scale · d_model^-0.5 · min(step^-0.5, step · warmup^-1.5)`` for 1-based ``step``
(the lexical-shortcuts code writes ``(s+1)`` with a 0-based ``s``: the same numbers). It rises
linearly to its peak ``scale · (d_model · warmup)^-0.5`` at ``step == warmup`` and then decays
with the inverse square root, so fairseq's ``inverse_sqrt`` with a given peak learning rate is the
same curve with ``scale = peak · sqrt(d_model · warmup)`` (see :func:`scale_for_peak`).
The warm-up differs per variant in Emelin et al. (4000 base, 6000 shortcuts, 8000 feature-fusion),
which is why it is an argument and not a constant.

An optional *cool-down* (``train.lr_cooldown``, a share of ``max_updates``) multiplies the curve over
the last ``cooldown_updates = round(share · max_updates)`` updates by a factor that falls linearly to
``1 / cooldown_updates`` at the last update (the trapezoidal or "warm-up, stable, decay" shape). Why:
a short run stopped on the inverse square root's tail still takes large steps, so its validation
perplexity wobbles from one checkpoint to the next and seeds end at different points of the wobble;
annealing the step towards zero settles every seed (measured in benchmarks/toy_convergence.py).
Without it (share 0, the default) the schedule is the papers' Noam curve.
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


def cooldown_factor(step: int, max_updates: int, cooldown_updates: int) -> float:
    """The cool-down's multiplier for the 1-based ``step``: 1 before the last ``cooldown_updates``
    updates, then ``(max_updates - step + 1) / cooldown_updates`` (1 at its first update, falling by
    the same amount every update to ``1 / cooldown_updates`` at ``max_updates``)."""
    if cooldown_updates <= 0:
        return 1.0
    return min(1.0, max(max_updates - step + 1, 1) / cooldown_updates)


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
    max_updates: int = 0
    cooldown_updates: int = 0  # 0: no cool-down (the Noam curve itself)

    def __call__(self, step: int) -> float:
        lr = noam_lr(step, self.d_model, self.warmup, self.scale)
        return lr * cooldown_factor(step, self.max_updates, self.cooldown_updates)

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
