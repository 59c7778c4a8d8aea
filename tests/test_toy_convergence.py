"""benchmarks/toy_convergence.py decides which toy training setting is good enough from three numbers
per seed: the last-fifth change of the validation perplexity, whether that is under 2%, and the
BLEU spread over the seeds. Those computations are checked here against values worked out by hand,
on a hand-written training log; nothing is trained."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from benchmark_loader import load_benchmark

REPO = Path(__file__).resolve().parents[1]
toy = load_benchmark("toy_convergence")

HEADER = (
    "update,epoch,split,loss,nll,ppl,lr,tokens,tok_per_s,elapsed_s,"
    "valid_loss,valid_nll,valid_ppl,valid_tokens\n"
)


def write_log(path: Path, curve: list[tuple[int, float]]) -> Path:
    """A train_log.csv with one train row and the given validation rows, as the trainer writes it."""
    rows = [HEADER, "50,0,train,5.0,4.9,134.0,0.001,2048,12000.0,1.0,,,,\n"]
    rows += [f"{u},0,valid,,,,,,,{u / 10},1.0,{math.log(p)},{p},7770\n" for u, p in curve]
    path.write_text("".join(rows), encoding="utf-8")
    return path


def test_last_fifth_change_runs_from_the_last_validation_at_or_before_80_percent(tmp_path):
    # 1000 updates: the boundary is update 800 (ppl 2.00), the last validation 1000 (ppl 1.97)
    log = write_log(tmp_path / "a.csv", [(200, 9.0), (400, 4.0), (600, 2.5), (800, 2.0), (1000, 1.97)])
    record = toy.curve_record(log)
    assert record["curve"] == [[200, 9.0], [400, 4.0], [600, 2.5], [800, 2.0], [1000, 1.97]]
    assert record["last_fifth_change"] == pytest.approx(0.015)  # |1.97 - 2.00| / 2.00
    assert record["at_plateau"] is True


def test_a_curve_still_falling_is_not_at_plateau_and_sparse_validations_widen_the_span(tmp_path):
    # validations every 300 of 1000 updates: the last one at or before 800 is 600 (ppl 4.0)
    log = write_log(tmp_path / "b.csv", [(300, 8.0), (600, 4.0), (900, 3.0), (1000, 2.9)])
    record = toy.curve_record(log)
    assert record["last_fifth_change"] == pytest.approx(0.275)  # |2.9 - 4.0| / 4.0
    assert record["at_plateau"] is False
    assert toy.curve_record(write_log(tmp_path / "c.csv", [(1000, 2.0)]))["at_plateau"] is None


def test_spread_is_max_minus_min_with_the_sample_standard_deviation():
    stats = toy.spread([70.0, 71.5, 70.5])
    assert stats["n"] == 3 and stats["spread"] == pytest.approx(1.5)
    assert stats["mean"] == pytest.approx(70.6666667)
    # deviations 0.6667, 0.8333, 0.1667: sum of squares 1.1667 over n - 1 = 2
    assert stats["sd"] == pytest.approx(math.sqrt(1.1666667 / 2))
    assert toy.spread([5.0])["sd"] is None and toy.spread([5.0])["spread"] == 0
    assert toy.spread([])["mean"] is None


def test_a_setting_meets_the_issue_only_with_every_seed_at_plateau_and_bleu_within_one_point():
    good = [{"at_plateau": True, "bleu": b} for b in (70.0, 70.6, 71.0)]
    assert toy.verdict(good)["meets_both"] is True
    wide = [{"at_plateau": True, "bleu": b} for b in (70.0, 70.6, 71.2)]
    assert toy.verdict(wide) == {"all_at_plateau": True, "spread_within_limit": False, "meets_both": False}
    one_falling = [*good[:2], {"at_plateau": False, "bleu": 70.5}]
    assert toy.verdict(one_falling)["all_at_plateau"] is False
    assert toy.verdict(good[:1])["spread_within_limit"] is False  # one seed says nothing of the spread


def test_settings_parse_to_typed_overrides_and_reject_unknown_levers():
    setting = toy.parse_setting("b1024:batch_tokens=1024,lr_scale=3,warmup=100,average_last=5", 3)
    assert setting.name == "b1024" and setting.average_last == 5
    assert setting.overrides == {"batch_tokens": 1024, "lr_scale": 3.0, "warmup": 100}
    assert isinstance(setting.overrides["batch_tokens"], int)
    assert toy.parse_setting("demo:", 3) == toy.Setting("demo", {}, 3)
    with pytest.raises(ValueError, match="dropout"):
        toy.parse_setting("x:dropout=0.1", 3)
    with pytest.raises(ValueError):
        toy.parse_setting(":warmup=10", 3)


def test_the_recorded_command_leaves_out_the_notes():
    argv = ["--setting", "demo:", "--note", "a long paragraph", "--note=another", "--seeds", "1"]
    assert toy.recorded_command(argv) == "python benchmarks/toy_convergence.py --setting demo: --seeds 1"


def test_a_cooldown_parses_to_train_lr_cooldown_and_none_to_the_trainers_default():
    floor = toy.parse_setting("f:lr_cooldown=0.4/0.8/0.1", 3)
    assert floor.overrides == {"lr_cooldown": {"start": 0.4, "end": 0.8, "floor": 0.1}}
    assert toy.parse_setting("z:lr_cooldown=0.7", 3).overrides == {"lr_cooldown": {"start": 0.7}}
    assert toy.parse_setting("n:lr_cooldown=none", 3).overrides == {"lr_cooldown": None}
    assert toy.cooldown_text({"start": 0.4, "end": 0.8, "floor": 0.1}) == "0.4-0.8 → 0.1"
    assert toy.cooldown_text(None) == "–"


def test_a_system_that_the_config_lacks_is_refused_before_anything_trains(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    with pytest.raises(SystemExit) as stop:
        toy.main(["--setting", "demo:", "--system", "bugliarello2020/nope", "--workdir", str(tmp_path)])
    assert stop.value.code == 2
    assert not any(tmp_path.iterdir())


def test_a_run_the_workflow_finished_is_adopted_with_the_train_time_its_log_recorded(tmp_path):
    """--reuse: the workflow's run folder (same id, same settings) is scored, not trained again;
    a second pass finds the adopted run finished and does not train either."""
    finished = tmp_path / "work" / "models" / "runs" / "abc123"
    (finished / "checkpoints").mkdir(parents=True)
    (finished / "checkpoints" / "checkpoint_100.pt").write_bytes(b"weights")
    write_log(finished / "train_log.csv", [(500, 2.0), (1000, 1.97)])
    (finished / "run.json").write_text('{"plateau": {}}\n', encoding="utf-8")
    (finished / "final.pt").write_bytes(b"final")
    settings = {"train": {"max_updates": 1000, "seed": 2}}
    run = tmp_path / "conv" / "abc123"
    timing = toy.adopt(settings, run, finished)
    assert timing["train_s"] == pytest.approx(100.0)  # the last row's elapsed_s (1000 / 10)
    assert timing["reused"] is True
    assert (run / "checkpoints" / "checkpoint_100.pt").read_bytes() == b"weights"
    assert toy.curve_record(run / "train_log.csv")["last_fifth_change"] == pytest.approx(0.015)
    again = toy.train(settings, run, tmp_path, 1, ["false"])  # would fail if it trained
    assert again["reused"] is True and again["train_s"] == pytest.approx(100.0)
