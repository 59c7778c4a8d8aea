"""ContraWSD scoring against hand-computed answers and a naive transcription of upstream evaluate.py."""

from __future__ import annotations

import csv as csv_module
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from data_sources import RealData

from nmtvariants.cli import main
from nmtvariants.errors import InputError
from nmtvariants.evaluation.contrawsd import (
    evaluate_contrawsd,
    expand,
    frequency_bin,
    load_testset,
    score_testset,
    write_expansion,
)
from nmtvariants.fileio import read_lines

FREQ_KEY = "frequency of sense/ambig word in wmt16"


def item(source: str, reference: str, contrastives: list[str], word: str, sense: str, freq: str) -> dict:
    return {
        "source": source,
        "reference": reference,
        "errors": [{"contrastive": c} for c in contrastives],
        "ambig word": word,
        "sense": sense,
        "original translation": sense.split("|")[0],
        FREQ_KEY: freq,
    }


HAND = [
    item(
        "Die Schlange zischt.",
        "The snake hisses.",
        ["The queue hisses."],
        "Schlange",
        "snake|serpent",
        "15/40",
    ),
    item(
        "Eine lange Schlange.",
        "A long queue.",
        ["A long snake.", "A long serpent."],
        "Schlange",
        "queue|line",
        "25/40",
    ),
    item(
        "Der Absatz bricht.",
        "The heel breaks.",
        ["The paragraph breaks.", "The sales break."],
        "Absatz",
        "heel",
        "600/2000",
    ),
    item(
        "Der Absatz ist lang.",
        "The paragraph is long.",
        ["The heel is long."],
        "Absatz",
        "paragraph",
        "12000/20000",
    ),
]
# per line: reference then contrastives; lower is better
HAND_SCORES = [
    1.0,
    2.0,  # correct
    3.0,
    1.0,
    4.0,  # wrong: a contrastive scores better
    2.0,
    3.0,
    2.0,  # wrong: a tie is not "strictly better"
    0.5,
    0.7,  # correct
]


def naive_upstream(data: list[dict], scores: list[float], maximize: bool) -> tuple[dict, dict, list[str]]:
    """Upstream evaluate.py's logic, transcribed loop for loop (bins built from ranges, dicts)."""
    bins = {
        ">5k": range(5001, 10001),
        ">2k": range(2001, 5001),
        ">1k": range(1001, 2001),
        ">500": range(501, 1001),
        ">200": range(201, 501),
        ">100": range(101, 201),
        ">50": range(51, 101),
        ">20": range(21, 51),
        "0-20": range(0, 21),
    }
    to_bin = {f: name for name, rng in bins.items() for f in rng}
    by_cat: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    by_freq: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    it = iter(scores)
    for sentence in data:
        score = float(next(it))
        category = sentence["ambig word"] + ":" + sentence["sense"]
        by_cat[category]["total"] += 1
        absfreq, total = sentence[FREQ_KEY].split("/")
        by_cat[category]["absfreq"] = int(absfreq)
        by_cat[category]["totalfreq"] = int(total)
        frequency = to_bin.get(int(absfreq), ">10k")
        by_freq[frequency]["total"] += 1
        all_better = True
        for _ in sentence["errors"]:
            error_score = float(next(it))
            better = score > error_score if maximize else score < error_score
            if not better:
                all_better = False
        if all_better:
            by_cat[category]["correct"] += 1
            by_freq[frequency]["correct"] += 1
    csv = ["category,absfrequency,relfrequency,accuracy"]
    for category in sorted(by_cat):
        c = by_cat[category]
        csv.append(f"{category},{c['absfreq']},{c['absfreq'] / c['totalfreq']},{c['correct'] / c['total']}")
    return by_cat, by_freq, csv


def write_json(path: Path, data: list[dict]) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_hand_built_testset(tmp_path: Path) -> None:
    result = score_testset(load_testset(write_json(tmp_path / "t.json", HAND)), HAND_SCORES)
    assert result["correct"] == 2 and result["accuracy"] == 0.5
    cats = {row["category"]: row for row in result["by_category"]}
    assert cats["Schlange:snake|serpent"]["accuracy"] == 1.0
    assert cats["Schlange:queue|line"]["accuracy"] == 0.0
    assert cats["Absatz:heel"]["accuracy"] == 0.0
    assert cats["Absatz:paragraph"]["rel_freq"] == 0.6
    bins = {row["bin"]: (row["correct"], row["total"]) for row in result["by_frequency"]}
    assert bins == {"0-20": (1, 1), ">20": (0, 1), ">500": (0, 1), ">10k": (1, 1)}
    flipped = score_testset(load_testset(tmp_path / "t.json"), [-s for s in HAND_SCORES], maximize=True)
    assert flipped["correct"] == 2


def test_frequency_bins_edges() -> None:
    expected = {
        0: "0-20",
        20: "0-20",
        21: ">20",
        50: ">20",
        51: ">50",
        100: ">50",
        101: ">100",
        200: ">100",
        201: ">200",
        500: ">200",
        501: ">500",
        1000: ">500",
        1001: ">1k",
        2000: ">1k",
        2001: ">2k",
        5000: ">2k",
        5001: ">5k",
        10000: ">5k",
        10001: ">10k",
        10**7: ">10k",
    }
    assert {f: frequency_bin(f) for f in expected} == expected


def test_expansion_order_matches_upstream_json_to_plaintext(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", HAND)
    sources, candidates = expand(load_testset(path))
    upstream_src, upstream_tgt = [], []
    for sentence in HAND:  # json_to_plaintext.py
        upstream_src.append(sentence["source"])
        upstream_tgt.append(sentence["reference"])
        for error in sentence["errors"]:
            upstream_src.append(sentence["source"])
            upstream_tgt.append(error["contrastive"])
    assert (sources, candidates) == (upstream_src, upstream_tgt)
    count = write_expansion(path, tmp_path / "exp.de", tmp_path / "exp.en")
    assert count == len(HAND_SCORES)
    assert list(read_lines(tmp_path / "exp.en")) == upstream_tgt


@pytest.fixture(scope="module")
def real_testset(real_data: RealData, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """A ContraWSD-layout file built from the real WMT18 test-suite sources and references.

    The upstream contrastive JSON is not mirrored, so contrastives are the reference with one word
    replaced, the category is the sentence's origin corpus, and frequencies are synthetic; the point
    is real text (quotes, umlauts, long lines) and a realistic size going through the whole path.
    """
    folder = (
        real_data(
            *(
                f"contrawsd/testsuite_wmt18/de-en.wsd.task.{name}.gz"
                for name in ("de", "en", "en.detok", "doc_ids.de")
            )
        )
        / "contrawsd/testsuite_wmt18"
    )
    sources = list(read_lines(folder / "de-en.wsd.task.de.gz"))
    refs = list(read_lines(folder / "de-en.wsd.task.en.gz"))
    origins = [
        line.split("\t")[0].split("/")[0][:12] for line in read_lines(folder / "de-en.wsd.task.doc_ids.de.gz")
    ]
    assert len(sources) == len(refs) == len(origins) == 3249
    rng = random.Random(3)
    data = []
    for k, (src, ref, origin) in enumerate(zip(sources, refs, origins, strict=True)):
        words = ref.split()
        contrastives = []
        for _ in range(1 + k % 3):
            copy = list(words)
            copy[rng.randrange(len(copy))] = rng.choice(["tail", "bank", "line", "heel"])
            contrastives.append(" ".join(copy))
        freq = rng.choice([3, 20, 21, 77, 150, 300, 800, 1500, 4000, 9000, 50000])
        data.append(item(src, ref, contrastives, origin, words[0].lower(), f"{freq}/{freq * 2 + k % 5}"))
    path = tmp_path_factory.mktemp("contrawsd") / "de-en.suite.json"
    return write_json(path, data), data


@pytest.mark.parametrize("maximize", [False, True])
def test_real_testsuite_against_naive_upstream(
    real_testset: tuple[Path, list[dict]], tmp_path: Path, maximize: bool
) -> None:
    path, data = real_testset
    n_lines = sum(1 + len(d["errors"]) for d in data)
    rng = random.Random(11)
    scores = [round(rng.uniform(0, 3), 1) for _ in range(n_lines)]  # coarse values: ties happen
    (tmp_path / "scores").write_text("".join(f"{s}\n" for s in scores))
    result = evaluate_contrawsd(path, tmp_path / "scores", tmp_path / "o.json", tmp_path / "o.csv", maximize)
    by_cat, by_freq, csv = naive_upstream(data, scores, maximize)
    assert result["correct"] == sum(c["correct"] for c in by_cat.values())
    assert result["n_elements"] == 3249
    assert {r["category"]: (r["correct"], r["total"]) for r in result["by_category"]} == {
        k: (v["correct"], v["total"]) for k, v in by_cat.items()
    }
    assert {r["bin"]: (r["correct"], r["total"]) for r in result["by_frequency"]} == {
        k: (v["correct"], v["total"]) for k, v in by_freq.items()
    }
    # same rows as upstream; fields with a quote or comma are CSV-quoted (upstream prints them raw)
    written = (tmp_path / "o.csv").read_text().splitlines()
    parsed = [",".join(row) for row in csv_module.reader(written)]
    assert parsed == csv
    plain = [line for line in csv if '"' not in line and line.count(",") == 3]
    assert plain and all(line in written for line in plain)
    assert json.loads((tmp_path / "o.json").read_text())["accuracy"] == result["accuracy"]
    sources, candidates = expand(load_testset(path))
    assert len(sources) == len(candidates) == n_lines


def test_score_count_mismatch_and_bad_lines(tmp_path: Path) -> None:
    path = write_json(tmp_path / "t.json", HAND)
    (tmp_path / "short").write_text("1\n2\n")
    with pytest.raises(InputError, match="2 scores but the test set expands to 10"):
        evaluate_contrawsd(path, tmp_path / "short")
    (tmp_path / "bad").write_text("1\nnan-ish\n")
    with pytest.raises(InputError, match=r"bad:2: expected one number"):
        evaluate_contrawsd(path, tmp_path / "bad")
    broken = [dict(HAND[0])]
    del broken[0]["sense"]
    with pytest.raises(InputError, match="element 0: missing key 'sense'"):
        load_testset(write_json(tmp_path / "broken.json", broken))


def test_cli_expand_and_score(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_json(tmp_path / "t.json", HAND)
    code = main(
        [
            "contrawsd-expand",
            "--json",
            str(path),
            "--source-out",
            str(tmp_path / "s"),
            "--candidate-out",
            str(tmp_path / "c"),
        ]
    )
    assert code == 0
    (tmp_path / "scores").write_text("".join(f"{s}\n" for s in HAND_SCORES))
    code = main(
        [
            "contrawsd",
            "--json",
            str(path),
            "--scores",
            str(tmp_path / "scores"),
            "--out-json",
            str(tmp_path / "r.json"),
            "--out-csv",
            str(tmp_path / "r.csv"),
        ]
    )
    assert code == 0
    assert "total : 2 4 0.5" in capsys.readouterr().out
    assert (tmp_path / "r.csv").read_text().startswith("category,absfrequency,relfrequency,accuracy\n")
