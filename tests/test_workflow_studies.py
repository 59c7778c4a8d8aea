"""Study registries, shared training runs and the demo's training budget, checked on the real
planner (`snakemake -n -p`): which jobs a target needs, and how many training runs the DAG holds."""

from __future__ import annotations

import json
import shlex
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml
from workflow_configs import REPO, default_config_with, dry_run_jobs, snakemake

from nmtvariants.config import training_runs, with_defaults
from nmtvariants.reporting.replicas import TOY_BASELINE_SPREAD

SCHEMA = REPO / "schemas" / "config.schema.yaml"
# the default baseline (the tiny preset without dropout, &toy_model; the toy runs' &toy_train)
DEFAULT_CONFIG = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
DEFAULT_BASELINE = DEFAULT_CONFIG["experiments"]["baseline"]
TOY_MODEL = DEFAULT_BASELINE["model"]
# A second study's experiment whose baseline is the default's baseline run, plus its own variant-free
# run with more updates: the study issues add experiments of this shape.
SECOND_STUDY = {
    "experiments": {
        "emelin_toy": {
            "study": "emelin2019",
            "corpus": "toyworld",
            "pairs": ["en-de"],
            "model": TOY_MODEL,
            "variants": {"baseline": {}},
            "train": DEFAULT_BASELINE["train"],
            "average_last": 3,
            "resources": {"threads": 2, "mem_mb": 4000, "runtime": 60, "gpus": 0},
            "evaluate": {"testsets": ["test"], "beam": 5, "alpha": 0.6, "metrics": ["bleu", "chrf", "ter"]},
        }
    }
}


def plan(*args: str, cwd: Path = REPO) -> list[dict[str, str]]:
    result = snakemake("-n", "-p", "--forceall", *args, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return dry_run_jobs(result.stdout)


def counts(jobs: list[dict[str, str]]) -> Counter:
    return Counter(job["rule"] for job in jobs)


def baseline_and(overrides: dict) -> dict:
    """The default config with only its baseline experiment plus ``overrides``' experiments: the
    sharing tests count runs, which the studies' own experiments in config.yaml would add to."""
    config = default_config_with(overrides)
    keep = {"baseline", *overrides.get("experiments", {})}
    config["experiments"] = {name: spec for name, spec in config["experiments"].items() if name in keep}
    return config


def with_overrides(tmp_path: Path, overrides: dict) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(baseline_and(overrides)), encoding="utf-8")
    return str(path)


# --- shared training runs ------------------------------------------------------------------------


def test_identical_runs_of_two_studies_train_once(tmp_path):
    jobs = plan("--configfile", with_overrides(tmp_path, SECOND_STUDY))
    rules = counts(jobs)
    assert rules["train"] == 1 and rules["average"] == 1 and rules["translate"] == 1
    # each experiment keeps its own hypotheses, scores and table
    assert rules["postprocess"] == 2 and rules["evaluate"] == 2 and rules["scores_table"] == 2
    tables = sorted(job["output"].split(", ")[0] for job in jobs if job["rule"] == "scores_table")
    assert tables == ["results/tables/baseline/baseline.md", "results/tables/emelin2019/emelin_toy.md"]
    (train,) = [job for job in jobs if job["rule"] == "train"]
    run_id = train["output"].split("/")[2]
    resolved = with_defaults(baseline_and(SECOND_STUDY), SCHEMA)
    assert list(training_runs(resolved)) == [run_id]
    assert training_runs(resolved)[run_id].studies == ["baseline", "emelin2019"]


@pytest.mark.parametrize(
    ("change", "trained", "decoded"),
    [
        ({"train": {"max_updates": 300}}, 2, 2),  # another run
        ({"model": {**TOY_MODEL, "encoder_layers": 1}}, 2, 2),
        ({"pairs": ["en-ru"]}, 2, 2),
        ({"evaluate": {"beam": 4}}, 1, 2),  # the same run, decoded twice
        ({"average_last": 2}, 1, 2),
        ({"resources": {"threads": 1, "mem_mb": 8000}}, 1, 1),  # hardware is not a setting
    ],
)
def test_changing_one_setting_makes_another_run(tmp_path, change, trained, decoded):
    overrides = baseline_and(SECOND_STUDY)
    experiment = overrides["experiments"]["emelin_toy"]
    for key, value in change.items():
        experiment[key] = {**experiment[key], **value} if isinstance(value, dict) else value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(overrides), encoding="utf-8")
    rules = counts(plan("--configfile", str(path)))
    assert (rules["train"], rules["translate"]) == (trained, decoded)


# --- one target per table and per study ----------------------------------------------------------


def test_a_table_target_plans_exactly_what_the_table_needs():
    """results/tables/baseline/baseline.md: toyworld en-de through the chain, one run, no en-ru, no
    other table, no report. By hand: tokenise train/valid/test.en, train/valid.de (the test
    reference stays raw) and train.fr (en-de's BPE is shared with fr: config.yaml), clean train and
    keep fr's kept lines, truecase models for en, de and fr, truecase and BPE the six tokenised
    files, one BPE model, fr's vocabulary and the network vocabulary, then train, average, decode,
    score."""
    jobs = plan("results/tables/baseline/baseline.md")
    assert counts(jobs) == {
        "toyworld": 1,
        "tokenize": 6,
        "clean": 1,
        "clean_shared": 1,
        "truecase_train": 3,
        "truecase_apply": 6,
        "bpe_learn": 1,
        "bpe_apply": 6,
        "bpe_vocab_shared": 1,
        "network_vocab": 1,
        "train": 1,
        "average": 1,
        "translate": 1,
        "postprocess": 1,
        "evaluate": 1,
        "scores_table": 1,
    }
    derived = [job["output"] for job in jobs if job["rule"] != "toyworld"]  # toyworld writes all languages
    assert not [path for path in derived if "en-ru" in path or ".ru" in path]


def test_the_study_target_equals_its_table_target():
    by_table = counts(plan("results/tables/baseline/baseline.md"))
    by_study = counts(plan("baseline"))
    assert by_study == {**by_table, "baseline": 1}


def test_a_table_asked_for_under_another_study_is_an_error():
    result = snakemake("-n", "results/tables/emelin2019/baseline.md")
    assert result.returncode != 0
    assert "experiment baseline belongs to study baseline" in result.stdout + result.stderr
    assert "results/tables/baseline/baseline.md" in result.stdout + result.stderr


STUDY_RULES = """
register_table("teststudy", "results/tables/teststudy/words.md")
register_figure("teststudy", "results/figures/teststudy/words.png")  # drawn by its own rule
register_data("teststudy", "data/toyworld/en-de/bpe/test.en")


rule teststudy_words:
    input:
        "data/toyworld/raw/test.en",
    output:
        md="results/tables/teststudy/words.md",
        provenance="results/tables/teststudy/words.provenance.json",
        png="results/figures/teststudy/words.png",
    log:
        "logs/teststudy.log",
    shell:
        "(wc -w {input:q} > {output.md:q} && echo {{}} > {output.provenance:q}"
        " && cp {output.md:q} {output.png:q}) 2> {log:q}"
"""


@pytest.fixture
def workflow_copy(tmp_path: Path) -> Path:
    """Snakefile, rules and what they read, in a temporary directory (the package comes from src/)."""
    root = tmp_path / "wf"
    root.mkdir()
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, root / name)
    for name in ("rules", "schemas", "envs", "workflow", "workflow_scripts"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_a_study_file_registers_its_outputs_without_editing_shared_files(workflow_copy):
    (workflow_copy / "rules" / "studies").mkdir(exist_ok=True)
    (workflow_copy / "rules" / "studies" / "teststudy.smk").write_text(STUDY_RULES, encoding="utf-8")
    study = plan("teststudy", cwd=workflow_copy)
    assert "train" not in counts(study)
    assert counts(study)["teststudy_words"] == 1 and counts(study)["teststudy"] == 1
    assert any(job.get("output") == "data/toyworld/en-de/bpe/test.en" for job in study)
    everything = {job["rule"]: job for job in plan(cwd=workflow_copy)}
    for path in ("results/tables/teststudy/words.md", "results/figures/teststudy/words.png"):
        assert path in everything["all"]["input"].split(", ")
    assert "results/tables/teststudy/words.md" in everything["report"]["input"].split(", ")


def test_a_study_output_outside_its_folder_is_refused(workflow_copy):
    (workflow_copy / "rules" / "studies").mkdir(exist_ok=True)
    (workflow_copy / "rules" / "studies" / "teststudy.smk").write_text(
        'register_table("teststudy", "results/tables/words.md")\n', encoding="utf-8"
    )
    result = snakemake("-n", cwd=workflow_copy)
    assert result.returncode != 0
    assert "tables of teststudy go under results/tables/teststudy/" in result.stdout + result.stderr


# --- the demo's training budget ------------------------------------------------------------------
# `make demo` (the embedded default) must give every table and figure on 2 CPU cores within its
# budget. Training dominates, so the default's training runs are held to a quota per study: the number
# of training jobs, and their updates counted at 2,048 tokens per batch (a run with batches of 1,024
# tokens counts half its max_updates). A run shared by several studies counts once, for the first
# study in QUOTA's order that uses it. Models stay at the tiny preset, and every toy run trains with
# the one setting that benchmarks/toy_convergence.py measured at its plateau (below), but for the
# multi-task run's three times the updates (its `variant_train`, measured beside it).
RUN_UPDATES = 600  # 1,200 updates of 1,024 tokens: the toy runs' plateau setting (config.yaml &toy_train)
MULTITASK_FACTOR = 3  # the multi-task run's updates over the others' (a third of its targets translate)
EN_RU_UPDATES = 1400  # 2,800 updates of 1,024 tokens: the EN-RU runs' plateau setting (emelin2019_en_ru)
QUOTA = {
    "baseline": {"jobs": 1, "updates": RUN_UPDATES},
    # lexical, feature-fusion, dec-to-enc and dec-to-enc + self (Tables 1, 4); EN-RU's three (Table 2)
    "emelin2019": {"jobs": 7, "updates": 4 * RUN_UPDATES + 3 * EN_RU_UPDATES},
    # PASCAL, LISA, S&H, multi-task (three times the updates)
    "bugliarello2020": {"jobs": 4, "updates": (3 + MULTITASK_FACTOR) * RUN_UPDATES},
    "yang2020": {"jobs": 2, "updates": 2 * RUN_UPDATES},  # sem_ifm, simplified
    # flat and hierarchical x (images, two sources): serial and parallel are beyond the demo's budget
    "libovicky2018": {"jobs": 4, "updates": 4 * RUN_UPDATES},
}
TOTAL = {"jobs": 18, "updates": (14 + MULTITASK_FACTOR) * RUN_UPDATES + 3 * EN_RU_UPDATES}
REFERENCE_BATCH_TOKENS = 2048


def training_budget(configfile: Path) -> dict[str, dict[str, int]]:
    """Study -> jobs and 2,048-token updates of the planned DAG's training jobs."""
    jobs = [job for job in plan("--configfile", str(configfile)) if job["rule"] == "train"]
    runs = training_runs(with_defaults(yaml.safe_load(configfile.read_text(encoding="utf-8")), SCHEMA))
    assert sorted(job["output"].split("/")[2] for job in jobs) == sorted(runs), "one train job per run"
    spent = {study: {"jobs": 0, "updates": 0} for study in QUOTA}
    for job in jobs:
        words = shlex.split(job["shell"])
        settings = yaml.safe_load(words[words.index("--config-json") + 1])  # JSON is YAML
        run = runs[job["output"].split("/")[2]]
        assert settings == run.settings
        assert settings["model"].get("preset") == "tiny", f"{run.users}: the demo trains tiny models"
        study = next(study for study in QUOTA if study in run.studies)
        train = settings["train"]
        spent[study]["jobs"] += 1
        spent[study]["updates"] += train["max_updates"] * train["batch_tokens"] // REFERENCE_BATCH_TOKENS
    return spent


def over_budget(spent: dict[str, dict[str, int]]) -> list[str]:
    problems = [
        f"{study}: {spent[study][key]} {key} > quota {QUOTA[study][key]}"
        for study in QUOTA
        for key in ("jobs", "updates")
        if spent[study][key] > QUOTA[study][key]
    ]
    for key in ("jobs", "updates"):
        total = sum(study[key] for study in spent.values())
        if total > TOTAL[key]:
            problems.append(f"all studies: {total} {key} > {TOTAL[key]}")
    return problems


def test_quota_adds_up():
    for key in ("jobs", "updates"):
        assert sum(quota[key] for quota in QUOTA.values()) <= TOTAL[key]


def test_the_default_configs_training_fits_the_demo_budget():
    spent = training_budget(REPO / "config.yaml")
    assert spent["baseline"] == {"jobs": 1, "updates": RUN_UPDATES}
    assert over_budget(spent) == []


def test_every_toy_run_trains_with_the_setting_measured_at_its_plateau():
    """The demo's runs use one train setting, and benchmarks/results/toy_convergence.json has it as a
    row whose every seed reached the plateau (under 2% over the last fifth): the config cannot drift
    from the measurement that justifies it without this test saying so. The multi-task run alone
    trains longer (MULTITASK_FACTOR times the updates), as toy_convergence_multitask.json measured
    over three seeds, and so do the EN-RU runs (toy_convergence_en_ru_<variant>.json: every variant
    at the plateau in all three seeds)."""
    config = with_defaults(yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8")), SCHEMA)
    runs = training_runs(config).values()
    multitask = [run for run in runs if ("bugliarello2020", "en-de", "multitask") in run.users]
    en_ru = [run for run in runs if any(pair == "en-ru" for _, pair, _ in run.users)]
    trains = [run.settings["train"] for run in runs if run not in multitask and run not in en_ru]
    setting = {key: value for key, value in trains[0].items() if key != "seed"}
    assert all({k: v for k, v in train.items() if k != "seed"} == setting for train in trains)
    measured = json.loads((REPO / "benchmarks/results/toy_convergence.json").read_text(encoding="utf-8"))
    rows = [row for row in measured["settings"] if _same_train(row["train"], setting)]
    assert rows, f"no row of toy_convergence.json measured the demo's setting {setting}"
    assert len(rows[0]["seeds"]) >= 3 and rows[0]["verdict"]["all_at_plateau"]
    (longer,) = multitask
    longer_setting = {key: value for key, value in longer.settings["train"].items() if key != "seed"}
    assert longer_setting == {**setting, "max_updates": MULTITASK_FACTOR * setting["max_updates"]}
    path = REPO / "benchmarks/results/toy_convergence_multitask.json"
    measured_multitask = json.loads(path.read_text(encoding="utf-8"))
    assert any(
        _same_train(row["train"], longer_setting) and len(row["seeds"]) >= 3
        for row in measured_multitask["settings"]
    ), f"no row of {path.name} measured the multi-task run's setting {longer_setting} over three seeds"
    assert sorted(variant for run in en_ru for _, _, variant in run.users) == [
        "baseline", "feature_fusion", "lexical"
    ]  # fmt: skip
    for run in en_ru:
        en_ru_setting = {key: value for key, value in run.settings["train"].items() if key != "seed"}
        assert en_ru_setting == {**setting, "max_updates": 2 * EN_RU_UPDATES, "valid_every": 280}
        ((_, _, variant),) = run.users
        path = REPO / f"benchmarks/results/toy_convergence_en_ru_{variant}.json"
        rows_en_ru = json.loads(path.read_text(encoding="utf-8"))["settings"]
        (row,) = [row for row in rows_en_ru if _same_train(row["train"], en_ru_setting)]
        at_plateau = [seed["at_plateau"] for seed in row["seeds"]]
        assert len(at_plateau) >= 3, f"{path.name}: the EN-RU setting measured over fewer than 3 seeds"
        assert all(at_plateau), (path.name, at_plateau)
    # ... and the spread that every toy table quotes is that row's, seeds and date included
    assert TOY_BASELINE_SPREAD.bleu == round(rows[0]["bleu"]["spread"], 2)
    assert list(TOY_BASELINE_SPREAD.seeds) == [seed["seed"] for seed in rows[0]["seeds"]]
    assert TOY_BASELINE_SPREAD.date == measured["date"]


def _same_train(measured: dict, setting: dict) -> bool:
    """Whether a toy_convergence row trained with ``setting`` (the keys it records; None: not set)."""
    return all(setting.get(key) == value for key, value in measured.items())


def test_the_seeds_overlay_trains_every_toy_run_three_times():
    """config.yaml + experiments/overlays/toy_seeds.yaml, merged by Snakemake: each of the demo's runs
    once per seed (1234, 2, 3), the shared baseline still trained once per seed."""
    jobs = plan("--configfile", "config.yaml", "experiments/overlays/toy_seeds.yaml")
    assert counts(jobs)["train"] == 3 * TOTAL["jobs"]
    # every experiment of the demo is a toy world, and each of its tables is told so
    manifests = [shlex.split(job["shell"])[2] for job in jobs if job.get("shell", "").startswith("printf")]
    run_entries = [e for manifest in manifests for e in json.loads(manifest) if "experiment" in e]
    assert len(manifests) > 10 and run_entries and all(entry["toy"] is True for entry in run_entries)
    scores_tables = [job["shell"] for job in jobs if job["rule"] == "scores_table"]
    assert scores_tables and all(" --toy " in shell for shell in scores_tables)


def test_the_budget_guard_catches_an_extra_run(tmp_path):
    config = baseline_and({})
    config["experiments"]["baseline"]["variants"] = {"baseline": {}, "more": {}}
    config["experiments"]["baseline"]["train"]["batch_tokens"] = 2048  # twice the demo's
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    spent = training_budget(path)
    assert spent["baseline"] == {"jobs": 1, "updates": 2 * RUN_UPDATES}  # `more` is the same run: shared
    assert over_budget(spent) == [f"baseline: {2 * RUN_UPDATES} updates > quota {RUN_UPDATES}"]


def test_a_registration_after_the_report_was_planned_is_refused(workflow_copy):
    """Registries close once the study files are included: a late one would miss `rule all`."""
    snakefile = workflow_copy / "Snakefile"
    snakefile.write_text(
        snakefile.read_text(encoding="utf-8") + '\nregister_table("late", "results/tables/late/t.md")\n',
        encoding="utf-8",
    )
    result = snakemake("-n", cwd=workflow_copy)
    assert result.returncode != 0
    assert "register_table('late', ...) after the registries were closed" in result.stdout + result.stderr


INPUT_RULES = """
rule teststudy_stream:
    input:
        "data/{corpus}/{pair}/bpe/{split}.en",
    output:
        "data/{corpus}/{pair}/inputs/{split}.teststream_x2",
    log:
        "logs/teststudy/{corpus}/{pair}/{split}.log",
    shell:
        "awk '{{for (i = 1; i <= NF; i++) printf i - 1 (i < NF ? FS : RS)}}' {input:q}"
        " > {output:q} 2> {log:q}"
"""


def test_a_variant_with_extra_inputs_trains_and_decodes_with_them(workflow_copy):
    """A stream that `experiments.<e>.inputs.<variant>` states (here of no plug-in) reaches the run
    settings (train and valid files) and the test-set translation (`--aux NAME=FILE`); the study's
    rule writes the files; the other variant of the same experiment keeps the baseline's settings and
    so shares its run."""
    (workflow_copy / "rules" / "studies" / "teststudy.smk").write_text(INPUT_RULES, encoding="utf-8")
    config = yaml.safe_load((workflow_copy / "config.yaml").read_text(encoding="utf-8"))
    baseline = config["experiments"]["baseline"]
    config["experiments"]["withparents"] = {
        **baseline,
        "variants": {"baseline": {}, "simplified": {"decoder_layout": "simplified"}},
        "inputs": {"simplified": {"aux": ["teststream_x2"]}},
    }
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    jobs = plan("results/tables/baseline/withparents.md", cwd=workflow_copy)
    trains = [job for job in jobs if job["rule"] == "train"]
    assert len(trains) == 2  # the baseline variant is the baseline experiment's run
    (reader,) = [job for job in trains if "teststream_x2" in job["shell"]]
    settings = json.loads(
        shlex.split(reader["shell"])[shlex.split(reader["shell"]).index("--config-json") + 1]
    )
    folder = "data/toyworld/en-de/inputs"
    assert settings["data"]["train_aux"] == {"teststream_x2": f"{folder}/train.teststream_x2"}
    assert settings["data"]["valid_aux"] == {"teststream_x2": f"{folder}/valid.teststream_x2"}
    made = {job["output"] for job in jobs if job["rule"] == "teststudy_stream"}
    assert made == {f"{folder}/{split}.teststream_x2" for split in ("train", "valid", "test")}
    translations = [job for job in jobs if job["rule"] == "translate"]
    with_aux = [job for job in translations if "--aux" in job["shell"]]
    assert len(translations) == 2 and len(with_aux) == 1
    words = shlex.split(with_aux[0]["shell"])
    assert words[words.index("--aux") + 1] == f"teststream_x2={folder}/test.teststream_x2"


STREAM_PLUGIN = """
from nmtvariants.models.variants import PluginInputs, register_variant


@register_variant("test_stream", inputs=PluginInputs(aux=("teststream_x2",), made_by="rule teststudy_stream"))
def install(model, options):
    pass
"""


def test_a_plugins_stream_without_a_rule_stops_the_run_at_start_up_and_with_it_is_planned(workflow_copy):
    """A plug-in declares its stream and the config says nothing: without the study rule that writes it
    the workflow stops in one line (status 2); with it, the run reads the files the rule makes."""
    plugin = workflow_copy / "test_stream.py"
    plugin.write_text(STREAM_PLUGIN, encoding="utf-8")
    env = {"NMTV_PLUGINS": str(plugin)}
    config = yaml.safe_load((workflow_copy / "config.yaml").read_text(encoding="utf-8"))
    config["experiments"]["baseline"]["variants"]["streamed"] = {"test_stream": {}}
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake("-n", cwd=workflow_copy, env_extra=env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "nmtvariants: error: experiments.baseline.variants.streamed: plug-in test_stream reads the stream "
        "teststream_x2, but no rule makes data/toyworld/en-de/inputs/train.teststream_x2 (written by rule "
        "teststudy_stream); include that rule or drop the plug-in"
    )
    (workflow_copy / "rules" / "studies" / "teststudy.smk").write_text(INPUT_RULES, encoding="utf-8")
    result = snakemake(
        "-n", "-p", "--forceall", "results/tables/baseline/baseline.md", cwd=workflow_copy, env_extra=env
    )
    assert result.returncode == 0, result.stdout + result.stderr
    made = {job["output"] for job in dry_run_jobs(result.stdout) if job["rule"] == "teststudy_stream"}
    assert made == {
        f"data/toyworld/en-de/inputs/{split}.teststream_x2" for split in ("train", "valid", "test")
    }


def test_inputs_of_an_unknown_variant_stop_the_run_at_start_up(workflow_copy):
    config = yaml.safe_load((workflow_copy / "config.yaml").read_text(encoding="utf-8"))
    config["experiments"]["baseline"]["inputs"] = {"pascl": {"aux": ["teststream_x2"]}}
    (workflow_copy / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    result = snakemake("-n", cwd=workflow_copy)
    assert result.returncode != 0
    assert (
        "experiments.baseline.inputs: pascl not among the variants (baseline)"
        in result.stdout + result.stderr
    )
