"""Adversarial inputs (seeded derangements), their summary over seeds, and the Multi30k scoring mode.

Derangements are checked by naive loops; the feature index is resolved with the same function
``translate`` uses; the summary against numpy; the multi30k mode against sacreBLEU and NLTK's
``meteor_score`` called by hand on the upstream Multi30k ``lc.norm.tok`` files (made by the Moses perl
scripts, so independent of our tokeniser).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest
import torch
from data_sources import RealData
from sacrebleu.metrics import BLEU

from nmtvariants.cli import main
from nmtvariants.data.batching import collate
from nmtvariants.data.extra_inputs import ExtraInputFiles, feature_rows
from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.evaluation.adversarial import (
    derange_features,
    derange_text_file,
    derangement,
    identical_copies,
    summarize_adversarial,
)
from nmtvariants.evaluation.evaluate import evaluate
from nmtvariants.evaluation.meteor_ribes import load_wordnet, prepare_wordnet
from nmtvariants.evaluation.results import write_scores_json
from nmtvariants.fileio import read_lines, write_lines
from nmtvariants.inference.examples import read_examples


def is_derangement(perm: np.ndarray, n: int) -> bool:
    return sorted(int(p) for p in perm) == list(range(n)) and all(int(p) != i for i, p in enumerate(perm))


@pytest.mark.parametrize("n", [2, 3, 7, 100])
def test_derangement_is_a_fixed_point_free_permutation_deterministic_per_seed(n: int) -> None:
    perms = [derangement(n, seed) for seed in range(6)]
    for seed, perm in enumerate(perms):
        assert is_derangement(perm, n)
        assert np.array_equal(perm, derangement(n, seed))
    if n > 3:  # 2 and 3 items have only 1 and 2 derangements
        assert len({tuple(p) for p in perms}) == len(perms)


def test_derangement_avoids_identical_items_or_leaves_the_minimum() -> None:
    avoidable = ["a"] * 5 + ["b"] * 3 + ["c", "d"]  # largest group 5 <= 10 / 2
    heavy = ["a"] * 8 + ["b", "c"]  # 8 of 10 equal: at least 2 * 8 - 10 = 6 equal pairs are forced
    for seed in range(5):
        perm = derangement(len(avoidable), seed, avoidable)
        assert is_derangement(perm, 10)
        assert sum(avoidable[p] == avoidable[i] for i, p in enumerate(perm)) == 0
        perm = derangement(len(heavy), seed, heavy)
        assert is_derangement(perm, 10)
        assert identical_copies(perm, heavy) == sum(heavy[p] == heavy[i] for i, p in enumerate(perm)) == 6
        assert is_derangement(derangement(4, seed, ["x"] * 4), 4)


def test_derangement_rejects_one_item_and_bad_seeds() -> None:
    with pytest.raises(InputError, match=r"one\.txt: 1 item\(s\); a derangement needs at least 2"):
        derangement(1, 0, where="one.txt")
    with pytest.raises(ConfigError, match="non-negative"):
        derangement(5, -1)


def test_deranged_text_file_keeps_the_lines_and_moves_every_one(tmp_path: Path) -> None:
    lines = [f"sentence {i % 17}" for i in range(40)]  # duplicates: 17 distinct texts
    write_lines(tmp_path / "test.de", lines)
    outputs = []
    for seed in (1, 2):
        report = derange_text_file(tmp_path / "test.de", tmp_path / f"adv{seed}.de", seed)
        out = list(read_lines(tmp_path / f"adv{seed}.de"))
        perm = derangement(len(lines), seed, lines)
        assert out == [lines[p] for p in perm]
        assert Counter(out) == Counter(lines)
        assert all(a != b for a, b in zip(out, lines, strict=True))  # no line keeps its own text
        assert report["identical_copies"] == 0 and report["items"] == 40
        outputs.append(out)
    assert outputs[0] != outputs[1]


def make_features(
    folder: Path, ids: list[str], regions: int = 3, channels: int = 4
) -> tuple[Path, np.ndarray]:
    grid = np.random.default_rng(0).standard_normal((len(ids), regions, channels)).astype(np.float16)
    np.save(folder / "test.npy", grid)
    write_lines(folder / "test.ids.txt", ids)
    return folder / "test.npy", grid


def test_feature_derangement_moves_whole_rows_and_keeps_ids_consistent(tmp_path: Path) -> None:
    # MSCOCO-style ids: the same image under two caption ids must not count as a different image
    ids = [f"{i}.jpg" for i in range(8)] + ["cat.jpg#1", "cat.jpg#2"]
    features, grid = make_features(tmp_path, ids)
    report = derange_features(features, tmp_path / "adv.index", 3, ids_output=tmp_path / "adv.ids.txt")
    rows = feature_rows(
        grid, features, len(ids), tmp_path / "test.en", tmp_path / "adv.index"
    )  # as translate
    received = list(read_lines(tmp_path / "adv.ids.txt"))
    assert sorted(rows.tolist()) == list(range(len(ids)))
    for line, row in enumerate(rows):
        assert row != line and ids[row].split("#")[0] != ids[line].split("#")[0]
        assert np.array_equal(grid[rows][line], grid[row])  # whole rows move
        assert received[line] == ids[row]
    assert report["identical_copies"] == 0


def test_deranged_index_feeds_translate_what_a_permuted_copy_would(tmp_path: Path) -> None:
    """The cheap index (a few bytes per line) and a permuted copy of the array are the same input."""
    ids = [f"{i}.jpg" for i in range(10)]
    features, grid = make_features(tmp_path, ids)
    src = [f"w{i} x" for i in range(10)]
    write_lines(tmp_path / "test.en", src)
    vocab = Vocabulary.build(src)
    derange_features(features, tmp_path / "adv.index", 5)
    np.save(tmp_path / "copy.npy", grid[derangement(10, 5, ids)])
    batches = []
    for extras in (
        ExtraInputFiles(features=features, feature_index=tmp_path / "adv.index"),
        ExtraInputFiles(features=tmp_path / "copy.npy"),
    ):
        data = read_examples(vocab, tmp_path / "test.en", src, extras=extras)  # what translate reads
        batches.append(collate(data, np.arange(len(data))).inputs.features)
    assert torch.equal(batches[0], batches[1])
    assert not torch.equal(batches[0], torch.from_numpy(grid.astype(np.float32)))


def test_feature_derangement_through_an_existing_index(tmp_path: Path) -> None:
    ids = [f"{i}.jpg" for i in range(12)]
    features, grid = make_features(tmp_path, ids)
    kept = [2, 3, 5, 8, 9, 12]  # the .kept file of a cleaned test set (1-based rows)
    write_lines(tmp_path / "test.kept", map(str, kept))
    derange_features(features, tmp_path / "adv.index", 0, feature_index=tmp_path / "test.kept")
    deranged = [int(v) for v in read_lines(tmp_path / "adv.index")]
    assert sorted(deranged) == kept and all(a != b for a, b in zip(deranged, kept, strict=True))
    rows = feature_rows(grid, features, len(kept), tmp_path / "test.en", tmp_path / "adv.index")
    assert rows.tolist() == [v - 1 for v in deranged]


def score_file(path: Path, refs: Path, scores: dict[str, float], signature: str = "sig") -> Path:
    body = {
        "n_lines": 3,
        "scores": {
            name: {"score": value, "signature": f"{name}|{signature}"} for name, value in scores.items()
        },
    }
    write_scores_json(path, "serial", "test2016", body, hyp_path=refs, ref_paths=[refs])
    return path


@pytest.fixture()
def score_files(tmp_path: Path) -> dict[str, object]:
    refs = tmp_path / "ref.de"
    write_lines(refs, ["a", "b", "c"])
    values = {"image": [(30.1, 50.2), (28.7, 49.0), (31.4, 51.9)], "en": [(5.5, 20.0)]}
    runs = {
        name: [
            score_file(tmp_path / f"{name}{i}.json", refs, {"bleu": b, "meteor": m})
            for i, (b, m) in enumerate(vs)
        ]
        for name, vs in values.items()
    }
    clean = score_file(tmp_path / "clean.json", refs, {"bleu": 38.7, "meteor": 57.2})
    return {"clean": clean, "runs": runs, "values": values, "refs": refs}


def test_summary_mean_and_std_equal_numpy(score_files: dict, tmp_path: Path) -> None:
    summary = summarize_adversarial(score_files["clean"], score_files["runs"])
    rows = {row["randomised"]: row for row in summary["rows"]}
    image = np.array(score_files["values"]["image"])
    assert rows["image"]["bleu_adv_mean"] == pytest.approx(np.mean(image[:, 0]))
    assert rows["image"]["bleu_adv_std"] == pytest.approx(np.std(image[:, 0], ddof=1))
    assert rows["image"]["meteor_adv_mean"] == pytest.approx(np.mean(image[:, 1]))
    assert rows["image"]["meteor_adv_std"] == pytest.approx(np.std(image[:, 1], ddof=1))
    assert rows["image"]["bleu_clean"] == 38.7 and rows["image"]["runs"] == 3
    assert rows["en"]["bleu_adv_mean"] == 5.5 and rows["en"]["bleu_adv_std"] is None  # one seed: no spread


def test_summary_refuses_scores_made_another_way(score_files: dict, tmp_path: Path) -> None:
    other = score_file(tmp_path / "other.json", score_files["refs"], {"bleu": 1.0, "meteor": 2.0}, "tok:13a")
    with pytest.raises(InputError, match=r"other\.json: bleu signature"):
        summarize_adversarial(score_files["clean"], {"image": [other]})
    with pytest.raises(InputError, match="no 'chrf' score"):
        summarize_adversarial(score_files["clean"], score_files["runs"], ["chrf"])


def test_cli_summary_writes_csv_and_json(score_files: dict, tmp_path: Path) -> None:
    runs = [f"{name}={path}" for name, paths in score_files["runs"].items() for path in paths]
    args = ["adversarial-summary", "--clean", str(score_files["clean"]), "--json", str(tmp_path / "s.json")]
    assert main([*args, "--csv", str(tmp_path / "s.csv"), *[a for r in runs for a in ("--run", r)]]) == 0
    with open(tmp_path / "s.csv", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [row["randomised"] for row in table] == ["image", "en"]
    assert float(table[0]["bleu_adv_mean"]) == pytest.approx(np.mean([30.1, 28.7, 31.4]))
    assert table[1]["bleu_adv_std"] == ""
    record = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert record["std_ddof"] == 1 and "provenance" in record
    assert main(["adversarial-summary", "--clean", str(score_files["clean"]), "--run", "image"]) == 2


def test_cli_derange_text_and_features(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_lines(tmp_path / "test.fr", [f"phrase {i}" for i in range(6)])
    out = tmp_path / "adv.fr"
    assert main(["derange", "--input", str(tmp_path / "test.fr"), "--output", str(out), "--seed", "4"]) == 0
    assert sorted(read_lines(out)) == sorted(read_lines(tmp_path / "test.fr"))
    features, _ = make_features(tmp_path, [f"{i}.jpg" for i in range(5)])
    args = [
        "derange",
        "--kind",
        "features",
        "--input",
        str(features),
        "--output",
        str(tmp_path / "adv.index"),
    ]
    assert main([*args, "--seed", "1"]) == 0
    assert sorted(int(v) for v in read_lines(tmp_path / "adv.index")) == [1, 2, 3, 4, 5]


def test_cli_one_line_file_cannot_be_deranged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_lines(tmp_path / "one.en", ["a single sentence"])
    args = ["derange", "--input", str(tmp_path / "one.en"), "--output", str(tmp_path / "o.en"), "--seed", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "one.en: 1 item(s); a derangement needs at least 2" in err[0]
    assert not (tmp_path / "o.en").exists()
    assert (
        main(
            ["derange", "--input", str(tmp_path / "missing"), "--output", str(tmp_path / "o"), "--seed", "0"]
        )
        == 2
    )


N_LINES = 80


@pytest.fixture(scope="module")
def multi30k(real_data: RealData, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """80 raw English test_2016 references and a 'system' (every third line another reference), each
    with its upstream lowercased, normalised, Moses-tokenised counterpart."""
    folder = real_data(
        "multi30k/task1/raw/test_2016_flickr.en.gz", "multi30k/task1/tok/test_2016_flickr.lc.norm.tok.en.gz"
    )
    raw = list(read_lines(folder / "multi30k/task1/raw/test_2016_flickr.en.gz"))[:N_LINES]
    tok = list(read_lines(folder / "multi30k/task1/tok/test_2016_flickr.lc.norm.tok.en.gz"))[:N_LINES]
    pick = [i + 1 if i % 3 == 0 else i for i in range(N_LINES - 1)] + [N_LINES - 1]
    out = tmp_path_factory.mktemp("multi30k")
    files = {"ref": raw, "ref.tok": tok, "hyp": [raw[i] for i in pick], "hyp.tok": [tok[i] for i in pick]}
    for name, lines in files.items():
        write_lines(out / name, lines)
    return {name: out / name for name in files} | {"nltk": prepare_wordnet(out / "nltk_data")}


def test_multi30k_mode_bleu_and_meteor_equal_hand_computation(multi30k: dict[str, Path]) -> None:
    from nltk.translate.meteor_score import meteor_score

    result = evaluate(
        multi30k["hyp"],
        multi30k["ref"],
        "en",
        ["bleu", "meteor"],
        nltk_data=multi30k["nltk"],
        preprocess="multi30k",
    )
    hyp_tok, ref_tok = list(read_lines(multi30k["hyp.tok"])), list(read_lines(multi30k["ref.tok"]))
    bleu = BLEU(tokenize="none", smooth_method="none").corpus_score(hyp_tok, [ref_tok]).score
    assert result["scores"]["bleu"]["score"] == pytest.approx(bleu, abs=1e-9)
    assert 20 < bleu < 90
    wordnet = load_wordnet(multi30k["nltk"])
    by_hand = [
        meteor_score([r.split()], h.split(), wordnet=wordnet) for h, r in zip(hyp_tok, ref_tok, strict=True)
    ]
    assert result["scores"]["meteor"]["score"] == pytest.approx(100 * np.mean(by_hand), abs=1e-9)
    assert result["preprocess"] == "multi30k" and result["tokenize"] == "none"
    assert f"nltk {version('nltk')}" in result["scores"]["meteor"]["implementation"]
    assert "not Meteor 1.5" in result["scores"]["meteor"]["differs_from"]
    assert "tokenizer.perl -l en" in result["preprocessing"]
    plain = evaluate(multi30k["hyp"], multi30k["ref"], "en", ["bleu"])
    assert plain["preprocess"] == "none" and plain["scores"]["bleu"]["score"] != pytest.approx(bleu)


def test_multi30k_mode_from_the_cli_and_its_conflicts(multi30k: dict[str, Path], tmp_path: Path) -> None:
    args = [
        "evaluate",
        "--hyp",
        str(multi30k["hyp"]),
        "--ref",
        str(multi30k["ref"]),
        "-l",
        "en",
        "--system",
        "s",
    ]
    args += ["--testset", "t", "--json", str(tmp_path / "s.json"), "--preprocess", "multi30k"]
    assert main(args) == 0
    record = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert record["preprocess"] == "multi30k" and "smooth:none" in record["scores"]["bleu"]["signature"]
    assert main([*args, "--tokenize", "13a"]) == 2
    with pytest.raises(ConfigError, match="tok-bleu"):
        evaluate(multi30k["hyp"], multi30k["ref"], "en", ["tok-bleu"], preprocess="multi30k")


def test_feature_derangement_errors_name_the_file(tmp_path: Path) -> None:
    features, _ = make_features(tmp_path, [f"{i}.jpg" for i in range(4)])
    write_lines(tmp_path / "bad.index", ["1", "9"])
    with pytest.raises(
        InputError, match=r"bad\.index:2: feature row 9 is outside .*test\.npy, which has 4 rows"
    ):
        derange_features(features, tmp_path / "o", 0, feature_index=tmp_path / "bad.index")
    write_lines(tmp_path / "test.ids.txt", ["0.jpg", "1.jpg"])
    with pytest.raises(InputError, match=r"test\.ids\.txt: 2 image ids but .*test\.npy has 4 rows"):
        derange_features(features, tmp_path / "o", 0)
    (tmp_path / "test.ids.txt").unlink()
    with pytest.raises(InputError, match="an ids output needs the features' image ids"):
        derange_features(features, tmp_path / "o", 0, ids_output=tmp_path / "o.ids")
    write_lines(tmp_path / "t.en", ["a", "b"])
    args = ["derange", "--input", str(tmp_path / "t.en"), "--output", str(tmp_path / "o"), "--seed", "0"]
    assert main([*args, "--feature-index", str(tmp_path / "bad.index")]) == 2
    assert not (tmp_path / "o").exists()
