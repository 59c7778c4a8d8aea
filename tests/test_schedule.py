"""The Noam schedule against its equation and against fairseq's inverse_sqrt formulation."""

from __future__ import annotations

import math

import pytest
import torch

from nmtvariants.training.schedule import Cooldown, NoamSchedule, noam_lr, scale_for_peak


@pytest.mark.parametrize("step", [1, 2, 100, 3999, 4000, 4001, 150_000])
def test_noam_equation(step):
    d, warmup, scale = 512, 4000, 2.0
    expected = scale * (1 / math.sqrt(d)) * min(1 / math.sqrt(step), step / warmup**1.5)
    assert noam_lr(step, d, warmup, scale) == pytest.approx(expected, rel=1e-12)


def test_emelin_zero_based_formula_is_the_same_curve():
    # Emelin et al.'s code: d^-0.5 * min((s+1)^-0.5, (s+1) * w^-1.5) for 0-based s
    for s in range(0, 20_000, 997):
        emelin = 512**-0.5 * min((s + 1) ** -0.5, (s + 1) * 6000**-1.5)
        assert noam_lr(s + 1, 512, 6000) == pytest.approx(emelin, rel=1e-12)


def test_peak_matches_fairseq_inverse_sqrt():
    peak, warmup, d = 7e-4, 8000, 512
    schedule = NoamSchedule(d, warmup, scale_for_peak(peak, d, warmup))
    assert schedule.peak == pytest.approx(peak, rel=1e-12)
    for step in (1, 10, 4000, 8000, 8001, 20_000, 100_000):
        # fairseq inverse_sqrt with warmup_init_lr 0: linear to peak, then peak * sqrt(warmup / step)
        fairseq = peak * step / warmup if step < warmup else peak * math.sqrt(warmup / step)
        assert schedule(step) == pytest.approx(fairseq, rel=1e-12)


def test_per_variant_warmup_moves_the_peak():
    lrs = {w: [noam_lr(s, 512, w) for s in range(1, 12_000)] for w in (4000, 6000, 8000)}
    for warmup, curve in lrs.items():
        assert max(range(len(curve)), key=curve.__getitem__) + 1 == warmup


def test_apply_sets_every_group():
    params = [torch.nn.Parameter(torch.zeros(1)), torch.nn.Parameter(torch.zeros(1))]
    optimizer = torch.optim.Adam([{"params": params[:1]}, {"params": params[1:]}])
    lr = NoamSchedule(256, 100).apply(optimizer, 50)
    assert [g["lr"] for g in optimizer.param_groups] == [lr, lr]


def test_rejects_zero_step():
    with pytest.raises(ValueError):
        noam_lr(0, 512, 4000)


def _naive_cooldown_lrs(d, warmup, scale, max_updates, start, end, floor):
    """The cool-down as a loop that lowers the factor by one fixed step per update (no formula)."""
    factor, step_down, lrs = 1.0, (1.0 - floor) / (end - start), []
    for step in range(1, max_updates + 1):
        if start < step <= end:
            factor -= step_down
        lrs.append(noam_lr(step, d, warmup, scale) * max(factor, floor))
    return lrs


@pytest.mark.parametrize(("shares", "bounds"), [
    ({"start": 0.7}, (700, 1000, 0.0)),
    ({"start": 0.4, "end": 0.8, "floor": 0.1}, (400, 800, 0.1)),
])  # fmt: skip
def test_cooldown_against_a_loop(shares, bounds):
    d, warmup, scale, max_updates = 64, 100, 2.0, 1000
    cooldown = Cooldown.from_shares(shares, max_updates)
    assert (cooldown.start, cooldown.end, cooldown.floor) == bounds
    schedule = NoamSchedule(d, warmup, scale, cooldown)
    expected = _naive_cooldown_lrs(d, warmup, scale, max_updates, *bounds)
    got = [schedule(step) for step in range(1, max_updates + 1)]
    assert got == pytest.approx(expected, rel=1e-9, abs=1e-15)
    assert schedule.peak == pytest.approx(noam_lr(warmup, d, warmup, scale), rel=1e-12)
    assert schedule(max_updates + 50) == pytest.approx(
        noam_lr(max_updates + 50, d, warmup, scale) * bounds[2]
    )


def test_no_cooldown_is_noam():
    assert NoamSchedule(64, 10, 1.0)(40) == noam_lr(40, 64, 10)
