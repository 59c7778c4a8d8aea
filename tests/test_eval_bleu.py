"""sacreBLEU scoring and the per-system JSON, checked against the sacreBLEU command line."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.bleu import default_tokenizer, sacrebleu_score
from nmtvariants.evaluation.evaluate import evaluate
from nmtvariants.evaluation.results import read_scores_json, write_scores_json
from nmtvariants.fileio import read_lines, write_lines


@pytest.fixture()
def newstest(tmp_path: Path, real_data: RealData) -> tuple[Path, Path, Path]:
    """150 real newstest2014 German references; a degraded 'system' and a second reference."""
    ref = list(read_lines(real_data.file("wmt/en-de/newstest2014.de.gz")))[:150]
    hyp = [" ".join(line.split()[:-2]) if i % 3 else line for i, line in enumerate(ref)]
    ref2 = [line.replace("die", "der") for line in ref]
    paths = tmp_path / "hyp.de", tmp_path / "ref.de", tmp_path / "ref2.de"
    for path, lines in zip(paths, (hyp, ref, ref2), strict=True):
        write_lines(path, lines)
    return paths


def sacrebleu_cli(ref_paths: list[Path], hyp: Path, *options: str) -> dict:
    """The real sacreBLEU command line (an independent run of the reference tool)."""
    exe = shutil.which("sacrebleu") or str(Path(sys.executable).parent / "sacrebleu")
    out = subprocess.run(
        [exe, *map(str, ref_paths), "-i", str(hyp), "-f", "json", "-w", "6", *options],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out)


def test_tokenizer_follows_target_language() -> None:
    assert default_tokenizer("de") == "13a"
    assert default_tokenizer("zh") == "zh"
    assert default_tokenizer("ja") == "ja-mecab"
    assert default_tokenizer("EN") == "13a"


def test_bleu_chrf_ter_match_the_sacrebleu_cli(newstest: tuple[Path, Path, Path]) -> None:
    hyp, ref, ref2 = newstest
    scores = evaluate(hyp, [ref, ref2], "de", metrics=("bleu", "chrf", "chrf++", "ter"))
    assert scores["n_lines"] == 150
    for name, options in (
        ("bleu", ["-m", "bleu"]),
        ("chrf", ["-m", "chrf"]),
        ("chrf++", ["-m", "chrf", "--chrf-word-order", "2"]),
        ("ter", ["-m", "ter"]),
    ):
        cli = sacrebleu_cli([ref, ref2], hyp, *options)
        assert scores["scores"][name]["score"] == pytest.approx(cli["score"], abs=1e-5), name
        assert scores["scores"][name]["signature"] == cli["signature"], name
    assert scores["scores"]["bleu"]["signature"].startswith("nrefs:2|case:mixed|eff:no|tok:13a")
    assert "nw:2" in scores["scores"]["chrf++"]["signature"]


def test_chinese_and_japanese_use_their_tokenizers(tmp_path: Path) -> None:
    ref = ["今天天气很好。", "我喜欢读书。"]
    hyp = ["今天天气很好。", "我喜欢看书。"]
    write_lines(tmp_path / "h", hyp)
    write_lines(tmp_path / "r", ref)
    zh = sacrebleu_score("bleu", hyp, [ref], "zh")
    assert "tok:zh" in zh["signature"]
    cli = sacrebleu_cli([tmp_path / "r"], tmp_path / "h", "-m", "bleu", "-tok", "zh")
    assert zh["score"] == pytest.approx(cli["score"], abs=1e-5)
    ja = sacrebleu_score("bleu", ["今日は良い天気です"], [["今日はいい天気です"]], "ja")
    assert "tok:ja-mecab" in ja["signature"]
    # MeCab splits the sentence into words, so BLEU is neither 0 nor 100
    assert 0 < ja["score"] < 100


def test_scores_json_records_signature_lines_and_hashes(
    newstest: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    hyp, ref, _ = newstest
    scores = evaluate(hyp, ref, "de")
    out = tmp_path / "scores" / "sys.newstest2014.json"
    write_scores_json(out, "baseline", "newstest2014", scores)
    record = read_scores_json(out)
    assert record["system"] == "baseline" and record["testset"] == "newstest2014"
    assert record["n_lines"] == 150
    assert record["hypothesis"]["sha256"] == hashlib.sha256(hyp.read_bytes()).hexdigest()
    assert record["references"][0]["path"] == str(ref)
    assert record["scores"]["bleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp")
    assert not list(out.parent.glob(".*.tmp")), "temporary file left behind"


def test_line_count_mismatch_names_both_files(tmp_path: Path) -> None:
    write_lines(tmp_path / "hyp", ["a b", "c d"])
    write_lines(tmp_path / "ref", ["a b"])
    with pytest.raises(InputError, match=r"hyp: 2 lines but reference .*ref has 1"):
        evaluate(tmp_path / "hyp", tmp_path / "ref", "en")


def test_unknown_metric_is_a_config_error(newstest: tuple[Path, Path, Path]) -> None:
    hyp, ref, _ = newstest
    with pytest.raises(ConfigError, match="bleurt"):
        evaluate(hyp, ref, "de", metrics=("bleu", "bleurt"))


def test_cli_evaluate_writes_json(
    newstest: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hyp, ref, _ = newstest
    out = tmp_path / "cli.json"
    code = main(
        [
            "evaluate",
            "--hyp",
            str(hyp),
            "--ref",
            str(ref),
            "-l",
            "de",
            "--metrics",
            "bleu,tok-bleu",
            "--system",
            "sys",
            "--testset",
            "nt14",
            "--json",
            str(out),
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert set(record["scores"]) == {"bleu", "tok-bleu"}
    assert "bleu=" in capsys.readouterr().out


def test_cli_reports_bad_input_as_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_lines(tmp_path / "hyp", ["a"])
    code = main(
        [
            "evaluate",
            "--hyp",
            str(tmp_path / "hyp"),
            "--ref",
            str(tmp_path / "missing"),
            "-l",
            "en",
            "--system",
            "s",
            "--testset",
            "t",
            "--json",
            str(tmp_path / "o.json"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert "file not found" in err and len(err.strip().splitlines()) == 1
