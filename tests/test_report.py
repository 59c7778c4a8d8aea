"""results/report.md: tables, figures and their provenance, checked against independent sources."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import sacrebleu
import torch
from PIL import Image

from nmtvariants.errors import InputError
from nmtvariants.reporting.report import (
    build_report,
    config_hash,
    git_commit,
    hardware_info,
    manifest_entries,
)
from nmtvariants.reporting.tables import write_table

REPO = Path(__file__).resolve().parents[1]
CONFIG = {"seed": 1, "toyworld": {"seed": 7, "sizes": {"train": 10, "valid": 2, "test": 2}}}


def git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A finished toy run: one score table, one figure, one score JSON, manifests, a git repo."""
    git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("x\n", encoding="utf-8")
    git(tmp_path, "add", "README")
    git(tmp_path, "commit", "-qm", "init")
    hypotheses, references = ["the cat sat on the mat"], [["the cat sat on a mat"]]
    bleu = sacrebleu.metrics.BLEU()
    score = bleu.corpus_score(hypotheses, references)
    results = tmp_path / "results"
    frame = pd.DataFrame(
        {"system": ["baseline"], "BLEU": [score.score], "signature": [str(bleu.get_signature())]}
    )
    write_table(frame, results / "tables" / "bleu.md", title="BLEU on toyworld")
    write_table(
        pd.DataFrame({"split": ["train"], "sentences": [10]}), results / "tables" / "stats.md", "Stats"
    )
    (results / "scores").mkdir()
    (results / "scores" / "baseline.json").write_text(
        json.dumps({"metric": "BLEU", "score": score.score, "signature": str(bleu.get_signature())}),
        encoding="utf-8",
    )
    (results / "figures").mkdir()
    Image.new("RGB", (4, 4)).save(results / "figures" / "bleu_by_length.png")
    (tmp_path / "models" / "baseline").mkdir(parents=True)
    (tmp_path / "models" / "baseline" / "train.json").write_text(
        json.dumps({"updates": 5, "hardware": {"cpu": "Test CPU", "cores": 3, "gpus": ["H100"]}}),
        encoding="utf-8",
    )
    corpus = tmp_path / "data" / "multi30k"
    corpus.mkdir(parents=True)
    (corpus / "train.en").write_text("a\n", encoding="utf-8")
    digest = hashlib.sha256(b"a\n").hexdigest()
    (corpus / "manifest.json").write_text(json.dumps({"train.en": digest}), encoding="utf-8")
    (corpus / "SHA256SUMS").write_text(f"{'0' * 64}  valid.en\n", encoding="utf-8")
    return tmp_path


def test_config_hash_is_sha256_of_canonical_json_and_ignores_key_order():
    expected = hashlib.sha256(
        b'{"seed":1,"toyworld":{"seed":7,"sizes":{"test":2,"train":10,"valid":2}}}'
    ).hexdigest()[:12]
    assert config_hash(CONFIG) == expected
    reordered = {"toyworld": {"sizes": {"valid": 2, "train": 10, "test": 2}, "seed": 7}, "seed": 1}
    assert config_hash(reordered) == expected
    assert config_hash({**CONFIG, "seed": 2}) != expected


def test_git_commit_matches_git_and_marks_local_edits(run_dir):
    head = git(run_dir, "rev-parse", "HEAD")
    assert git_commit(run_dir) == head
    (run_dir / "README").write_text("edited\n", encoding="utf-8")
    assert git_commit(run_dir) == head + "+dirty"
    assert git_commit(run_dir / "results").startswith(head)
    assert git_commit(Path("/")).startswith("unknown")


def test_hardware_info_reports_this_machine():
    info = hardware_info()
    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    model = next(
        line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")
    )
    assert info["cpu"] == model
    assert info["cores"] == os.cpu_count()
    assert info["torch"] == torch.__version__
    assert info["gpus"] == [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


def test_report_lists_every_table_and_figure_with_provenance(run_dir):
    text = build_report(
        results_dir=run_dir / "results",
        data_dir=run_dir / "data",
        config=CONFIG,
        repo=run_dir,
        models_dir=run_dir / "models",
    )
    head = git(run_dir, "rev-parse", "HEAD")
    bleu = sacrebleu.metrics.BLEU()
    bleu.corpus_score(["a b c d"], [["a b c d"]])
    signature = str(bleu.get_signature())
    assert signature.startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert "## BLEU on toyworld" in text and "## Stats" in text
    assert "](tables/bleu.md)" in text and "![bleu_by_length](figures/bleu_by_length.png)" in text
    assert f"- sacreBLEU signature: `{signature}`" in text
    assert "- sacreBLEU signature: none" in text  # the stats table has no scores
    assert text.count(f"config `{config_hash(CONFIG)}`") == 3  # two tables, one figure
    assert text.count(f"commit `{head}`") == 4  # the run line, two tables, one figure
    assert "| results/scores/baseline.json | BLEU |" in text
    digest = hashlib.sha256(b"a\n").hexdigest()
    assert f"| multi30k/manifest.json | train.en | `{digest}` |" in text
    assert f"| multi30k/SHA256SUMS | valid.en | `{'0' * 64}` |" in text
    assert "models/baseline/train.json: Test CPU (3 cores); GPU: H100" in text
    assert f"torch {torch.__version__}" in text


def test_manifest_errors_name_the_file_and_line(tmp_path):
    bad = tmp_path / "SHA256SUMS"
    bad.write_text(f"{'a' * 64}  ok.txt\nnot-a-digest file\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"SHA256SUMS:2: expected"):
        manifest_entries(bad)
    broken = tmp_path / "manifest.json"
    broken.write_text('{"a": ', encoding="utf-8")
    with pytest.raises(InputError, match=r"manifest.json:1: invalid JSON"):
        manifest_entries(broken)


def test_cli_writes_the_report_atomically(run_dir):
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    result = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "report", "--config-json", json.dumps(CONFIG)],
        cwd=run_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = (run_dir / "results" / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# nmtvariants report")
    assert config_hash(CONFIG) in report
    assert not list((run_dir / "results").glob(".report.md.*"))
    bad = subprocess.run(
        [sys.executable, "-m", "nmtvariants", "report", "--config-json", "[1"],
        cwd=run_dir,
        env=env,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("nmtvariants report: error:")
