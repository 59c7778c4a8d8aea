"""The plateau record: the change of the validation perplexity over the last fifth of a run, against
the issue's definition worked by hand on a written training log."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from nmtvariants.errors import InputError
from nmtvariants.training.logging_utils import TrainLogger
from nmtvariants.training.plateau import last_fifth_change, plateau_record, valid_curve


def write_log(path: Path, valid: list[tuple[int, float]]) -> Path:
    """A train_log.csv as the trainer writes it: a training row, then a validation row."""
    logger = TrainLogger(path, tensorboard=False, progress=False)
    for update, ppl in valid:
        logger.record({"update": update, "epoch": 1, "split": "train", "loss": 3.0, "ppl": 9.0})
        logger.record({"update": update, "epoch": 1, "split": "valid", "valid_ppl": ppl})
    logger.close()
    return path / "train_log.csv"


def test_the_change_is_measured_from_the_last_validation_before_the_last_fifth(tmp_path):
    # 400 updates: the last fifth starts at 320; the validation at 320 is its start
    log = write_log(tmp_path, [(80, 9.0), (160, 4.0), (240, 2.5), (320, 2.0), (400, 1.97)])
    assert valid_curve(log) == [(80, 9.0), (160, 4.0), (240, 2.5), (320, 2.0), (400, 1.97)]
    assert last_fifth_change(valid_curve(log)) == pytest.approx(0.03 / 2.0)
    record = plateau_record(log)
    assert record == {
        "validations": 5,
        "last_valid_ppl": 1.97,
        "last_fifth_change": pytest.approx(0.015),
        "at_plateau": True,
    }


def test_rarer_validations_measure_a_longer_span_and_can_only_overstate_the_change(tmp_path):
    # validations every 200 of 400 updates: from 200 (before 320) to 400, 3.83 -> 1.97
    record = plateau_record(write_log(tmp_path, [(200, 3.83), (400, 1.97)]))
    assert record["last_fifth_change"] == pytest.approx((3.83 - 1.97) / 3.83)
    assert record["at_plateau"] is False


def test_without_a_validation_before_the_last_fifth_the_plateau_is_unknown(tmp_path):
    record = plateau_record(write_log(tmp_path, [(400, 1.5)]))
    assert record["last_fifth_change"] is None and record["at_plateau"] is None
    assert last_fifth_change([]) is None


def test_a_missing_or_damaged_log_names_the_file_and_what_to_do(tmp_path):
    with pytest.raises(InputError, match="no training log; train the run first"):
        valid_curve(tmp_path / "train_log.csv")
    log = write_log(tmp_path, [(100, 2.0), (200, 1.9)])
    rows = list(csv.reader(log.open(encoding="utf-8")))
    column = rows[0].index("valid_ppl")
    damaged = next(i for i, row in enumerate(rows) if i and row[column])
    rows[damaged][column] = "n/a"
    with log.open("w", encoding="utf-8", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(rows)
    with pytest.raises(InputError, match=rf"train_log.csv:{damaged + 1}: update/valid_ppl are not numbers"):
        valid_curve(log)


def test_each_table_in_the_report_says_how_many_of_its_models_reached_their_plateau(tmp_path):
    from nmtvariants.reporting.report import plateau_line

    def run(name: str, valid: list[tuple[int, float]] | None) -> dict:
        folder = tmp_path / name
        folder.mkdir()
        if valid is not None:
            write_log(folder, valid)
        return {"path": folder / "run.json"}  # run.json without a plateau record: read from the log

    runs = {
        "toy/en-de/baseline": run("a", [(320, 2.0), (400, 1.99)]),
        "toy/en-de/pascal": run("b", [(320, 3.0), (400, 2.0)]),
        "toy/en-de/lisa": run("c", None),
    }
    sources = [{"system": system} for system in [*runs, "toy/en-de/baseline", "untrained"]]
    line = plateau_line(sources, runs)
    assert line is not None and line.startswith("- **training: 1 of 3 models at their plateau**")
    assert line.endswith("; still learning: toy/en-de/pascal; not known: toy/en-de/lisa")
    assert plateau_line(sources[:1], runs) == (
        "- training: every model of the table (1) at its plateau (Training runs)"
    )
    assert plateau_line([{"system": "untrained"}], runs) is None
