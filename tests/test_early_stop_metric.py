"""`early_stop_metric: bleu` is refused at start-up (no validation BLEU is wired), with its key path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from nmtvariants.cli import main
from nmtvariants.config import check_experiments
from nmtvariants.errors import ConfigError


def test_workflow_start_up_check_names_the_experiment_key(repo_root: Path) -> None:
    config = yaml.safe_load((repo_root / "config.yaml").read_text(encoding="utf-8"))
    config["experiments"]["baseline"]["train"]["early_stop_metric"] = "bleu"
    with pytest.raises(ConfigError) as error:
        check_experiments(config["experiments"])
    message = str(error.value)
    assert "experiments.baseline.train.early_stop_metric: 'bleu' is not available" in message
    assert "valid_nll" in message


def test_train_command_refuses_before_reading_any_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "data": {"train_src": str(tmp_path / "absent.src"), "train_tgt": "-", "vocab": "-"},
        "model": {"preset": "tiny"},
        "variant": {},
        "train": {"early_stop_metric": "bleu"},
    }
    code = main(["train", "--config-json", json.dumps(config), "--outdir", str(tmp_path / "run")])
    assert code == 2
    err = capsys.readouterr().err
    assert "train.early_stop_metric: 'bleu' is not available" in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_the_metrics_that_validation_produces_are_accepted(repo_root: Path) -> None:
    config = yaml.safe_load((repo_root / "config.yaml").read_text(encoding="utf-8"))
    for metric in ("valid_nll", "valid_loss"):
        config["experiments"]["baseline"]["train"]["early_stop_metric"] = metric
        check_experiments(config["experiments"])
