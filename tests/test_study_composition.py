"""The composition study: which variants a composed one is made of, and its table over seeds, checked
against an independent computation (statistics.mean/stdev, the parts' differences summed by hand,
parameters counted from the state dict)."""

from __future__ import annotations

import csv
import json
import shlex
import statistics
from pathlib import Path

import pytest
import torch

from nmtvariants.cli import main
from nmtvariants.models import build_model, model_config
from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.studies.composition.tables import parts

VARIANTS = {
    "transformer": {},
    "feature_fusion": {"shortcuts": {"kind": "feature_fusion"}},
    "pascal": {"pascal": {}},
    "simplified": {"decoder_layout": "simplified"},
    "composed": {"pascal": {}, "shortcuts": {"kind": "feature_fusion"}, "decoder_layout": "simplified"},
}
# BLEU per (variant, seed) on one test set; chrF is BLEU + 20
BLEU = {
    "transformer": [30.0, 31.0, 29.5],
    "feature_fusion": [31.0, 31.5, 30.0],
    "pascal": [30.5, 30.0, 31.0],
    "simplified": [29.0, 29.5, 29.0],
    "composed": [30.0, 31.0, 30.5],
}
SEEDS = [1, 2, 3]


def test_parts_are_the_variants_whose_switches_make_up_the_composed_one():
    assert parts(VARIANTS) == {"composed": ["feature_fusion", "pascal", "simplified"]}
    # a variant that differs in one option is not a part; one part alone is no composition
    other = {**VARIANTS, "composed": {"pascal": {"layer": 2}, "decoder_layout": "simplified"}}
    assert parts(other) == {}
    assert parts({"base": {}, "a": {"pascal": {}}, "a_again": {"pascal": {}}}) == {}


def write_replica(folder: Path, variant: str, seed: int, bleu: float, tok_per_s: float) -> Entry:
    folder.mkdir(parents=True)
    scores = folder / "test.scores.json"
    scores.write_text(json.dumps({"scores": {"bleu": {"score": bleu}, "chrf": {"score": bleu + 20}}}))
    (folder / "run.json").write_text(
        json.dumps({"updates": 1200, "plateau": {"at_plateau": seed != 3, "last_fifth_change": 0.01}})
    )
    with open(folder / "train_log.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["update", "split", "tokens", "tok_per_s", "elapsed_s"])
        writer.writeheader()
        writer.writerow(
            {"update": 100, "split": "train", "tokens": 1000, "tok_per_s": tok_per_s, "elapsed_s": 60}
        )
        writer.writerow({"update": 200, "split": "valid", "elapsed_s": 125})
    cfg = model_config("tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32}, variant=VARIANTS[variant])
    model = build_model(cfg, 20)
    checkpoint = folder / "final.pt"
    torch.save({"model": model.state_dict(), "model_config": cfg.to_dict(), "vocab_size": 20}, checkpoint)
    files = {
        "scores": str(scores),
        "run": str(folder / "run.json"),
        "train_log": str(folder / "train_log.csv"),
    }
    files["checkpoint"] = str(checkpoint)
    if variant != "transformer":
        files["significance"] = write_significance(folder.parent / f"{variant}.sig.json", 0.04)
    return Entry(
        files=files, variant=variant, seed=seed, testset="test", info={"switches": VARIANTS[variant]}
    )


def read_rows(table: Path) -> dict[str, dict[str, str]]:
    with open(table.with_suffix(".csv"), encoding="utf-8") as handle:
        return {row["variant"]: row for row in csv.DictReader(handle)}


def write_significance(path: Path, p: float) -> str:
    metrics = {"bleu": {"p_value": p}, "chrf": {"p_value": p / 2}}
    path.write_text(
        json.dumps({"method": "paired bootstrap over sentences and replicas", "metrics": metrics})
    )
    return str(path)


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("composition")
    entries = []
    for variant, scores in BLEU.items():
        for seed, bleu in zip(SEEDS, scores, strict=True):
            entries.append(write_replica(root / f"{variant}-{seed}", variant, seed, bleu, 100.0 * seed))
    out = root / "table.md"
    manifest = write_manifest(root / "manifest.json", entries)
    args = ["composition-table", "--manifest", str(manifest), "--reference", "transformer"]
    assert main([*args, "--title", "composition", "--out", str(out)]) == 0
    return out, entries


def test_table_gives_mean_sd_delta_and_p_over_seeds(table):
    out, _ = table
    rows = read_rows(out)
    for variant, scores in BLEU.items():
        row = rows[variant]
        assert float(row["BLEU"]) == pytest.approx(statistics.mean(scores))
        assert float(row["BLEU sd"]) == pytest.approx(statistics.stdev(scores))
        assert float(row["chrF"]) == pytest.approx(statistics.mean(scores) + 20)
        assert [float(row[f"BLEU seed {seed}"]) for seed in SEEDS] == scores
        assert float(row["ΔBLEU"]) == pytest.approx(
            statistics.mean(scores) - statistics.mean(BLEU["transformer"])
        )
        assert row["n"] == "3" and row["updates"] == "1200" and row["at plateau"] == "2 of 3"
        # training tokens/s of the seeds (100, 200, 300) and the log's last elapsed time
        assert float(row["train tok/s"]) == pytest.approx(200.0)
        assert float(row["train min"]) == pytest.approx(125 / 60)
    assert rows["transformer"]["BLEU p"] == ""
    assert float(rows["pascal"]["BLEU p"]) == pytest.approx(0.04)
    assert float(rows["pascal"]["chrF p"]) == pytest.approx(0.02)


def test_parameters_are_counted_from_each_variants_model(table):
    out, entries = table
    rows = read_rows(out)
    for entry in entries:
        state = torch.load(entry.files["checkpoint"], weights_only=True)["model"]
        # the model's parameters, not its buffers, each shared tensor (tied embeddings) once
        cfg = model_config(
            "tiny", overrides={"d_model": 16, "n_heads": 2, "d_ff": 32}, variant=VARIANTS[entry.variant]
        )
        buffers = {name for name, _ in build_model(cfg, 20).named_buffers()}
        unique = {tensor.data_ptr(): tensor.numel() for name, tensor in state.items() if name not in buffers}
        expected = sum(unique.values())
        assert int(rows[entry.variant]["params"]) == expected


def test_note_sets_the_composed_difference_beside_the_sum_of_its_parts(table):
    out, _ = table
    text = out.read_text(encoding="utf-8")
    mean = {variant: statistics.mean(scores) for variant, scores in BLEU.items()}
    whole = mean["composed"] - mean["transformer"]
    summed = sum(mean[part] - mean["transformer"] for part in ("feature_fusion", "pascal", "simplified"))
    assert f"test, BLEU: composed {whole:+.2f} against transformer" in text
    assert f"({'feature_fusion, pascal, simplified'}) {summed:+.2f}" in text
    assert "Mean ± sample sd over 3 seed(s) (1, 2, 3)" in text
    assert "paired bootstrap over sentences and replicas" in text


def test_a_manifest_entry_without_its_files_is_a_one_line_error(tmp_path, capsys):
    scores = tmp_path / "x.json"
    scores.write_text("{}")
    manifest = write_manifest(
        tmp_path / "m.json", [Entry(files={"scores": str(scores)}, variant="a", seed=1, testset="t")]
    )
    args = ["composition-table", "--manifest", str(manifest), "--reference", "a", "--title", "t"]
    assert main([*args, "--out", str(tmp_path / "t.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "entry 1 (a seed 1 on t): no 'run' file" in err


def test_the_multi30k_composition_reuses_the_study_configs_runs_and_plans_its_table():
    """The composition's transformer, feature-fusion, PASCAL and simplified runs are the same
    content-addressed runs as the study configs' variants of the same switches (trained once for both
    tables), seed by seed; only the composed model is its own."""
    import yaml
    from workflow_configs import REPO, dry_run_jobs, snakemake

    from nmtvariants.config import training_runs, with_defaults

    schema = REPO / "schemas" / "config.schema.yaml"

    def runs_by_replica(name: str) -> dict[tuple[str, str], str]:
        config = with_defaults(yaml.safe_load((REPO / "experiments" / f"{name}.yaml").read_text()), schema)
        return {(user[0], user[2]): run.id for run in training_runs(config).values() for user in run.users}

    composition = runs_by_replica("multi30k_composition")
    studies = {}
    for paper in ("emelin2019", "bugliarello2020", "yang2020"):
        studies.update(runs_by_replica(f"multi30k_{paper}"))
    same = {
        "transformer": ("m30k_bugliarello2020", "transformer"),
        "feature_fusion": ("m30k_emelin2019", "feature_fusion"),
        "pascal": ("m30k_bugliarello2020", "pascal"),
        "simplified": ("m30k_yang2020_ende", "simplified"),
    }
    for variant, (experiment, theirs) in same.items():
        for suffix in ("", "-seed2", "-seed3"):
            assert composition["m30k_composition", variant + suffix] == studies[experiment, theirs + suffix]
    composed = {composition["m30k_composition", f"composed{suffix}"] for suffix in ("", "-seed2", "-seed3")}
    assert len(composed) == 3 and not composed & set(studies.values())

    result = snakemake(
        "composition", "-n", "-p", "--forceall", "--configfile", "experiments/multi30k_composition.yaml"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = dry_run_jobs(result.stdout)
    assert sum(job["rule"] == "train" for job in jobs) == 15
    table = next(job for job in jobs if job["rule"] == "composition_table")
    assert "results/tables/composition/m30k_composition_mechanisms.md" in table["output"]
    # the manifest names every replica's files, and the input tracks the run through its final.pt
    entries = json.loads(shlex.split(table["shell"])[2])
    assert len(entries) == 2 * 15 and {e["variant"] for e in entries} == set(same) | {"composed"}
    assert all("significance" in e["files"] for e in entries if e["variant"] != "transformer")
    assert all(e["files"]["checkpoint"] in table["input"] for e in entries)
