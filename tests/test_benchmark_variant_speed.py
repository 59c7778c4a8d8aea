"""benchmarks/variant_speed.py: the studies' speed comparisons run end to end (smoke runs; the figures
themselves come from a quiet machine) and compute their ratios from the runs they record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import variant_speed  # noqa: E402


def test_random_parents_are_one_position_inside_the_sentence_per_token(tmp_path):
    source = tmp_path / "train.src"
    source.write_text("w1 w2 w3\n\nw4\nw5 w6 w7 w8 w9 w10 w11\n", encoding="utf-8")
    variant_speed.write_parents(source, tmp_path / "train.parents")
    rows = (tmp_path / "train.parents").read_text(encoding="utf-8").splitlines()
    assert len(rows) == 4
    for line, row in zip(source.read_text(encoding="utf-8").splitlines(), rows, strict=True):
        values = [int(x) for x in row.split()]
        assert len(values) == len(line.split())
        assert all(0 <= v < len(values) for v in values)


@pytest.mark.slow
@pytest.mark.parametrize("study", sorted(variant_speed.COMPARISONS))
def test_the_smoke_run_records_every_variant_and_its_ratios(tmp_path, study):
    """`--quick`: one round of every variant on the same batch stream, training and decoding; the
    ratios are the per-round speeds divided by hand, the paper's figure beside them."""
    comparison = variant_speed.COMPARISONS[study]
    out = tmp_path / "speed"
    command = [sys.executable, str(REPO / "benchmarks" / "variant_speed.py"), study, "--quick"]
    command += [
        "--preset",
        "tiny",
        "--threads",
        "1",
        "--scratch",
        str(tmp_path / "scratch"),
        "--out",
        str(out),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    (runs,) = record["rounds"]
    assert set(runs["train"]) == set(runs["decode"]) == set(comparison.variants)
    assert len({run["tgt_tokens"] for run in runs["train"].values()}) == 1  # the same batches for all
    assert all(run["updates_measured"] == 2 for run in runs["train"].values())
    assert all(run["sentences"] == 8 for run in runs["decode"].values())
    params = record["summary"]["parameters"]
    reference = comparison.reference
    if study == "emelin2019":
        assert params["baseline"] < params["lexical"] < params["feature_fusion"]
    elif study == "yang2020":
        assert params["simplified"] < params["standard"]
    else:  # PASCAL adds no parameters
        assert params["pascal"] == params["baseline"]
    for variant, ratio in record["summary"]["ratios"].items():
        assert ratio["paper"] == comparison.paper[variant]
        for task, key in (("train", "train_tok_per_s"), ("decode", "sent_per_s")):
            expected = runs[task][variant][key] / runs[task][reference][key]
            assert ratio[key]["median"] == pytest.approx(expected)
    text = out.with_suffix(".md").read_text(encoding="utf-8")
    assert "Smoke run" in text
    assert all(f"| {variant} |" in text for variant in comparison.variants)
