import re
import threading
from dataclasses import replace
from pathlib import Path

from nmtvariants.config import (
    canonical_json,
    content_id,
    decode_settings,
    experiment_replicas,
    experiment_seeds,
    experiment_systems,
    input_files,
    run_index,
    shared_bpe_languages,
    training_runs,
)
from nmtvariants.errors import exit_on_error
from nmtvariants.fork_server import ENV as FORK_SERVER_ENV
from nmtvariants.fork_server import OFF as FORK_SERVER_OFF
from nmtvariants.layout import (
    averaged_model,
    bpe_file,
    checkpoints_folder,
    decoded_bpe,
    final_model,
    run_folder,
    scores_file,
    significance_file,
)
from nmtvariants.reporting.manifest import manifest_inputs, manifest_json
from nmtvariants.scaling import costs as stage_costs
from nmtvariants.scaling.plan import TEST_SET_LINES

# Shared names, wildcard constraints and the target registries. Rules pass paths and parameters;
# all logic lives in src/nmtvariants. Every value that reaches a `shell:` command is quoted there
# (`{input:q}`, `{params.x:q}`); names and language codes are also narrowed by the schema.

SPLITS = ["train", "valid", "test"]
# Scheduling: Snakemake's `priority:` among the jobs that are ready. Without it the greedy scheduler
# prefers the jobs with the largest inputs, so the analyses of early runs (checkpoints, states) went
# ahead of later training, and the image features (a list of file names) ran last, leaving the
# multimodal runs to train alone at the end. Training first, and before it every rule that makes a
# training input (data preparation, parents and labels, derived corpora, image features), keeps both
# cores of a small machine on the long jobs and leaves the short analyses to fill in around them.
TRAINING_PRIORITY = 10
GATES_TRAINING_PRIORITY = 20
TOY_LANGS = [
    "en",
    "de",
    "ru",
    "fr",
]  # en is the source; de, ru (Cyrillic), fr are targets
TOY_TARGETS = ["de", "ru", "fr"]
CORPORA = config.get("corpora", {})
TOYWORLD = {
    "seed": 1234,
    "image_size": 64,
    **config.get("toyworld", {}),
    "sizes": {
        "train": 20000,
        "valid": 500,
        "test": 500,
        **config.get("toyworld", {}).get("sizes", {}),
    },
}
DOWNLOADED_CORPORA = {
    name: corpus for name, corpus in CORPORA.items() if corpus["source"] != "toyworld"
}
# (corpus, pair) -> the further languages its joint BPE is learned on (preprocess.bpe.shared_with)
SHARED_BPE = shared_bpe_languages(CORPORA)
SHARED_LANGS = sorted({lang for langs in SHARED_BPE.values() for lang in langs})
# Which METEOR `evaluate` computes: Meteor 1.5 from the user's release, else NLTK's with the
# configured WordNet (both checked before the first job: nmtvariants.resources).
METEOR = config.get("meteor", {})
METEOR_ARGS = (
    ["--meteor-home", METEOR["home"]]
    if METEOR.get("home")
    else ["--wordnet", METEOR["wordnet"]] if METEOR.get("wordnet") else []
)


wildcard_constraints:
    corpus="[a-z0-9_]+",
    pair="[a-z]+-[a-z]+",
    src="[a-z]+",
    tgt="[a-z]+",
    lang="[a-z]+",
    split="[A-Za-z0-9_-]+",
    experiment="[a-z0-9_]+",
    variant="[A-Za-z0-9_-]+",
    run="[0-9a-f]{12}",
    decode="[0-9a-f]{12}",
    last="[0-9]+",
    shared="|".join(SHARED_LANGS) or "(?!)",  # a further language of a pair's BPE


def as_list(value):
    return value if isinstance(value, list) else [value]


def corpus_languages(name):
    """Languages of a corpus's pairs, in first-seen order."""
    langs = []
    for pair in CORPORA[name]["pairs"]:
        for lang in pair.split("-"):
            if lang not in langs:
                langs.append(lang)
    return langs


def corpus_splits(name):
    corpus = CORPORA[name]
    return [corpus["train"], corpus["valid"], *corpus["testsets"]]


def raw_files(name):
    """data/<corpus>/raw/<split>.<lang>, once each (a split may serve as valid and test)."""
    return unique(
        expand(
            "data/{corpus}/raw/{split}.{lang}",
            corpus=name,
            split=corpus_splits(name),
            lang=corpus_languages(name),
        )
    )


def unique(items):
    return list(dict.fromkeys(items))


def preprocess_setting(wildcards, *keys):
    value = CORPORA[wildcards.corpus]["preprocess"]
    for key in keys:
        value = value[key]
    return value


def truecase_model(wildcards):
    """A pair's truecasing model for {lang}, or no input when the corpus does not truecase."""
    if not preprocess_setting(wildcards, "truecase"):
        return []
    return f"data/{wildcards.corpus}/{wildcards.pair}/truecase/model.{wildcards.lang}"


def pair_split_files(name, pair, stage):
    """data/<corpus>/<pair>/<stage>/<split>.<lang> for every split and both languages."""
    return expand(
        "data/{corpus}/{pair}/{stage}/{split}.{lang}",
        corpus=name,
        pair=pair,
        stage=stage,
        split=corpus_splits(name),
        lang=pair.split("-"),
    )


def statistics_inputs():
    """Raw text of every configured corpus (all of toyworld's languages when it is one of them)."""
    files = []
    if len(DOWNLOADED_CORPORA) < len(CORPORA) or not CORPORA:
        files += expand(
            "data/toyworld/raw/{split}.{lang}", split=SPLITS, lang=TOY_LANGS
        )
    for name in DOWNLOADED_CORPORA:
        files += raw_files(name)
    return files


# --- registries: what each study builds -----------------------------------------------------------
# Each study's rules/studies/<paper>.smk registers its tables, figures and data needs here, so that
# `rule all`, the report and the per-study target `rule <study>` pick them up without a shared list.
# Tables live under results/tables/<study>/, figures under results/figures/<study>/; a table's
# rule builds exactly what the table needs, so `snakemake results/tables/<study>/<t>.md` works.

STUDY_OUTPUTS = {}  # study -> {"tables": [...], "figures": [...], "data": [...]}
FIGURES = {}  # png -> {"kind": ..., **column options}: how rule `figure` draws it
OUTPUT_FOLDERS = {"tables": "results/tables", "figures": "results/figures"}
REGISTRIES_OPEN = [True]
# The study without a rules file: its experiments' scores tables (rules/tables.smk) are all it builds.
SCORES_ONLY_STUDIES = ["baseline"]


def close_registries(built_in):
    """Called by the Snakefile once every study file is included: the report and `rule all` have
    read the registries, so a later registration would be silently missed. Also where the
    experiments' study names are checked: an external study is known once its file registered.
    """
    REGISTRIES_OPEN[0] = False
    known = sorted({*SCORES_ONLY_STUDIES, *built_in, *studies_of_their_own()})
    for name, spec in EXPERIMENTS.items():
        if spec["study"] not in known:
            raise ValueError(
                f"experiments.{name}.study: unknown study {spec['study']!r} (known: {', '.join(known)});"
                " an external study's rules file goes in `extensions` and registers an output of its own"
            )


def studies_of_their_own():
    """Studies that registered a table, figure or data beyond their experiments' scores tables
    (which rules/tables.smk registers for any study name)."""
    scores = {
        f"results/tables/{s['study']}/{name}.md" for name, s in EXPERIMENTS.items()
    }
    return [study for study in STUDY_OUTPUTS if set(study_targets(study)) - scores]


def _register(kind, study, paths):
    if not REGISTRIES_OPEN[0]:
        raise ValueError(
            f"register_{kind[:-1]}({study!r}, ...) after the registries were closed: register"
            " at the top level of rules/studies/<study>.smk"
        )
    if not re.fullmatch(r"[a-z0-9_]+", study):
        raise ValueError(f"study name {study!r}: use lower-case letters, digits and _")
    outputs = STUDY_OUTPUTS.setdefault(study, {"tables": [], "figures": [], "data": []})
    for path in paths:
        folder = OUTPUT_FOLDERS.get(kind)
        if folder and not path.startswith(f"{folder}/{study}/"):
            raise ValueError(
                f"register_{kind[:-1]}({study!r}, {path!r}): {kind} of {study} go under {folder}/{study}/"
            )
        if path not in outputs[kind]:
            outputs[kind].append(path)


def register_table(study, *paths):
    """A study's table(s): results/tables/<study>/<name>.md (with its CSV beside it)."""
    _register("tables", study, paths)


def register_figure(study, png, kind=None, **options):
    """A study's figure: ``results/figures/<study>/<name>.png``. With ``kind`` (layers|bars|heatmap)
    rule ``figure`` (rules/report.smk) draws it with ``nmtvariants figure`` from the long-format CSV
    beside it, which the study's own rule writes; ``options`` are the command's column options (x, y,
    group, title, ylabel, row_index, ...), e.g.
    ``register_figure("yang2020", "results/figures/yang2020/aer.png", "layers", y="aer")``.
    Without ``kind`` the study's own rule draws it."""
    _register("figures", study, [png])
    if kind is not None:
        FIGURES[png] = {"kind": kind, **options}


def register_plan(plan):
    """Register what a study's planner (nmtvariants.studies.plan_base.StudyPlan) builds for this
    config: its tables and figures, and the significance tests its tables read."""
    for table in plan.tables():
        register_table(plan.study, table)
    for png, options in plan.figures().items():
        register_figure(plan.study, png, **options)
    for experiment, (reference, metrics) in plan.significance_tests().items():
        register_significance(experiment, reference, metrics)


def register_data(study, *paths):
    """Files a study needs prepared (parses, features, derived corpora); built by `rule <study>`."""
    _register("data", study, paths)


def studies():
    """Studies that registered something, in registration order."""
    return list(STUDY_OUTPUTS)


def study_targets(study):
    outputs = STUDY_OUTPUTS[study]
    return [*outputs["tables"], *outputs["figures"], *outputs["data"]]


def all_tables():
    """Every table of the enabled stages and studies; `rule all` and the report use these."""
    tables = ["results/tables/data_statistics.md"]
    if CORPORA:
        tables.append("results/tables/preprocessing.md")
    return tables + [
        table for outputs in STUDY_OUTPUTS.values() for table in outputs["tables"]
    ]


def all_figures():
    """Every registered figure; `rule all` and the report use these."""
    return [
        figure for outputs in STUDY_OUTPUTS.values() for figure in outputs["figures"]
    ]


def all_study_data():
    return [path for outputs in STUDY_OUTPUTS.values() for path in outputs["data"]]


# --- figures -----------------------------------------------------------------------------------
# How each registered figure is drawn: the options given to register_figure above.


def drawn_figure_names():
    """A regex of the figure names rule ``figure`` draws (the registered ones with a kind)."""
    names = sorted({Path(png).stem for png in FIGURES})
    return "|".join(re.escape(name) for name in names) or "(?!)"


def figure_arguments(wildcards):
    """The `nmtvariants figure` options registered for this figure (register_figure above)."""
    png = f"results/figures/{wildcards.study}/{wildcards.name}.png"
    if png not in FIGURES:
        raise ValueError(
            f"{png}: no such figure registered (see register_figure in rules/common.smk)"
        )
    options = FIGURES[png]
    args = []
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


# --- preprocess --------------------------------------------------------------------------------


def translit_langs(wildcards):
    pair_langs = (
        wildcards.pair.split("-")
        if "pair" in wildcards.keys()
        else [wildcards.src, wildcards.tgt]
    )
    return [
        lang
        for lang in preprocess_setting(wildcards, "bpe", "translit")
        if lang in pair_langs
    ]


def truecase_input(wildcards):
    corpus = CORPORA[wildcards.corpus]
    if wildcards.split == corpus["train"]:
        return f"data/{wildcards.corpus}/{wildcards.pair}/clean/{wildcards.split}.{wildcards.lang}"
    return f"data/{wildcards.corpus}/tok/{wildcards.split}.{wildcards.lang}"


def bpe_codes_for(wildcards):
    """Transliterated pairs segment the other language with the Latin merges (<codes>.latin)."""
    codes = f"data/{wildcards.corpus}/{wildcards.pair}/bpe/codes"
    langs = translit_langs(wildcards)
    return codes if not langs or wildcards.lang in langs else f"{codes}.latin"


# A pair's further languages (preprocess.bpe.shared_with): rules/preprocess.smk.


def shared_langs(wildcards):
    return SHARED_BPE.get((wildcards.corpus, f"{wildcards.src}-{wildcards.tgt}"), [])


def bpe_learn_inputs(wildcards):
    base = f"data/{wildcards.corpus}/{wildcards.src}-{wildcards.tgt}/tc"
    inputs = {
        "src": f"{base}/train.{wildcards.src}",
        "tgt": f"{base}/train.{wildcards.tgt}",
    }
    for lang in shared_langs(wildcards):
        inputs[f"shared_{lang}"] = f"{base}/train.{lang}"
    return inputs


def bpe_learn_shared_args(wildcards, input):
    return [
        word
        for lang in shared_langs(wildcards)
        for word in ("--shared", f"{lang}={input[f'shared_{lang}']}")
    ]


def shared_codes(wildcards):
    """The codes for a further language: the Latin merges when the pair transliterates one
    of its own languages (as bpe_codes_for); a further language is never transliterated.
    """
    codes = f"data/{wildcards.corpus}/{wildcards.pair}/bpe/codes"
    return f"{codes}.latin" if translit_langs(wildcards) else codes


def network_vocab_inputs(wildcards):
    """The segmented training text of the pair's languages, then of its further ones."""
    base = f"data/{wildcards.corpus}/{wildcards.src}-{wildcards.tgt}/bpe"
    langs = [wildcards.src, wildcards.tgt, *shared_langs(wildcards)]
    return [f"{base}/train.{lang}" for lang in langs]


# --- train: content-addressed runs, shared between experiments and studies ---------------------
# models/runs/<run id>/ holds one training run (checkpoints/, final.pt, averaged-last<N>.pt,
# decode/<decode id>/<testset>.bpe.hyp); the run id is the hash of the run settings (data, model,
# variant, train settings and seed: nmtvariants.config.run_settings; the data include the streams
# the variant's plug-ins declare and those `inputs:` states, run.inputs), so identical runs of
# different experiments are one job. Experiments keep their own post-processed hypotheses and
# scores under results/<experiment>/<pair>/<replica>/: one replica per seed of `seeds`, named
# by nmtvariants.config.replica_name (the first seed's is the variant's own name), so every rule
# with a {variant} wildcard serves every replica, and RUN_OF maps (experiment, pair, replica).

EXPERIMENTS = config.get("experiments", {})
with exit_on_error():  # a stream restated with another label count than its plug-in's
    RUNS = training_runs(config)
RUN_OF = run_index(RUNS)
DECODES = {
    content_id(decode_settings(config, name)): decode_settings(config, name)
    for name in EXPERIMENTS
}


def run_dir(experiment, pair, variant):
    return run_folder(RUN_OF[(experiment, pair, variant)])


def decode_id(experiment):
    return content_id(decode_settings(config, experiment))


def data_files(data):
    """Every file path in a run's data settings (extra inputs come as mappings and lists)."""
    files = []
    for key, value in data.items():
        if key == "aux_labels" or value is None:
            continue
        if isinstance(value, dict):
            files += list(value.values())
        elif isinstance(value, list):
            files += value
        else:
            files.append(value)
    return files


def run_train_inputs(wildcards):
    return data_files(RUNS[wildcards.run].settings["data"])


def run_test_inputs(wildcards):
    """The extra inputs of a run's test set (none for most runs), as a mapping for `input:`."""
    run = RUNS[wildcards.run]
    if not run.inputs:
        return {}
    files = input_files(
        run.corpus, CORPORA[run.corpus], run.pair, run.inputs, wildcards.testset
    )
    named = {f"aux_{name}": path for name, path in files["aux"].items()}
    named.update({f"source_{k}": path for k, path in enumerate(files["sources"])})
    if files["features"]:
        named["features"] = files["features"]
    return named


def run_test_input_args(wildcards, input):
    """`translate` options for those inputs: --aux NAME=FILE, --extra-source FILE, --features FILE."""
    run = RUNS[wildcards.run]
    args = []
    for name in run.inputs.get("aux", []):
        args += ["--aux", f"{name}={input[f'aux_{name}']}"]
    for k, _ in enumerate(run.inputs.get("sources", [])):
        args += ["--extra-source", input[f"source_{k}"]]
    if run.inputs.get("features"):
        args += ["--features", input["features"]]
    return args


def run_settings_json(wildcards):
    return canonical_json(RUNS[wildcards.run].settings)


def run_resource(key):
    return lambda wildcards: RUNS[wildcards.run].resources[key]


# Requests that follow the input (nmtvariants.scaling.costs): the fitted cost of the rule's stage
# (costs.STAGE_OF_RULE) for a job reading `input.size_mb`, grown with `attempt` so that the SLURM
# profile's retries ask for more. Called with the rule's own name.
def sized_mem_mb(rule_name):
    return lambda wildcards, input, attempt: stage_costs.mem_mb(
        rule_name, input.size_mb, attempt
    )


def sized_runtime(rule_name):
    return lambda wildcards, input, attempt: stage_costs.runtime_minutes(
        rule_name, input.size_mb, attempt
    )


def sized_threads(rule_name, most):
    return lambda wildcards: stage_costs.threads(
        rule_name, known_lines(wildcards), most
    )


def known_lines(wildcards):
    """Lines of a {corpus} {split} known before its file exists: a test, valid or contrastive set's (at
    most a newstest set's), toyworld's configured training size, or None for a training corpus still
    to be downloaded."""
    if wildcards.split != "train":
        return TEST_SET_LINES
    if CORPORA.get(wildcards.corpus, {}).get("source") == "toyworld":
        return TOYWORLD["sizes"]["train"]
    return None


# Rules without a fitted curve: their stated floor or twice their input (Snakemake's own default
# heuristic), whichever is larger, and a runtime that grows with the attempt as well.
def input_sized_mb(floor_mb):
    return lambda wildcards, input, attempt: stage_costs.input_sized_mb(
        floor_mb, input.size_mb, attempt
    )


def decoding_mem_mb(floor_mb):
    return lambda wildcards, input, attempt: stage_costs.decoding_mem_mb(
        floor_mb, input.size_mb, attempt
    )


def grown_runtime(minutes):
    return lambda wildcards, attempt: stage_costs.grown(minutes, attempt)


def run_mem_mb(wildcards, input, attempt):
    """A training run's request: the experiment's mem_mb or, if larger, what holding its training
    data takes (stage `train_data`), grown with the attempt."""
    return stage_costs.train_mem_mb(
        RUNS[wildcards.run].resources["mem_mb"], input.size_mb, attempt
    )


def run_runtime(wildcards, attempt):
    return stage_costs.grown(RUNS[wildcards.run].resources["runtime"], attempt)


def run_bpe(wildcards, name):
    """data/<corpus>/<pair>/bpe/<name> of the run's corpus and pair (derived/<name>/ for a run on a
    derived corpus: nmtvariants.layout.bpe_folder)."""
    run = RUNS[wildcards.run]
    return bpe_file(run.corpus, run.pair, name, run.inputs)


def decode_setting(wildcards, key):
    return DECODES[wildcards.decode][key]


def experiment_hypothesis(wildcards):
    """The shared run's translation that an experiment's variant post-processes."""
    run = RUN_OF[(wildcards.experiment, wildcards.pair, wildcards.variant)]
    return decoded_bpe(run, decode_id(wildcards.experiment), wildcards.testset)


# --- evaluate ----------------------------------------------------------------------------------


def experiment_corpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["corpus"]


def experiment_metrics(wildcards):
    return ",".join(EXPERIMENTS[wildcards.experiment]["evaluate"]["metrics"])


# --- significance over replicas: one rule for every study -----------------------------------------
# A study that tests its variants against a reference (Emelin's baseline, Bugliarello's Transformer)
# registers the experiment here, and rule `significance` (rules/evaluate.smk) writes
# results/<experiment>/<pair>/<variant>/<testset>.significance.json: the paired bootstrap over
# sentences *and* replicas (nmtvariants.evaluation.significance.replica_bootstrap) of every seed's
# output of the variant against every seed's output of the reference. One file per (experiment,
# pair, variant, test set), so two tables of a study that need the same test read one result; with
# one seed it is the per-sentence paired bootstrap of one output against one.

SIGNIFICANCE = {}  # experiment -> {"reference": variant, "metrics": [metric, ...]}
SIGNIFICANCE_SAMPLES = 1000


def register_significance(experiment, reference, metrics):
    """Test the experiment's variants against ``reference`` with ``metrics`` (bleu, chrf, ...);
    one registration per experiment, since one file holds its test."""
    wanted = {"reference": reference, "metrics": list(metrics)}
    if SIGNIFICANCE.setdefault(experiment, wanted) != wanted:
        raise ValueError(
            f"register_significance({experiment!r}): already registered as {SIGNIFICANCE[experiment]}"
        )


def significance_setting(wildcards, key):
    if wildcards.experiment not in SIGNIFICANCE:
        raise ValueError(
            f"{wildcards.experiment}: no significance test registered for this experiment"
            " (register_significance in its study's rules)"
        )
    return SIGNIFICANCE[wildcards.experiment][key]


def replica_hypotheses(wildcards, variant):
    """The post-processed output of every replica (one per seed) of ``variant`` on the test set."""
    outputs = [
        f"results/{wildcards.experiment}/{wildcards.pair}/{replica.name}/{wildcards.testset}.hyp"
        for replica in experiment_replicas(config, wildcards.experiment)
        if replica.pair == wildcards.pair and replica.variant == variant
    ]
    if not outputs:
        raise ValueError(
            f"{wildcards.experiment}/{wildcards.pair}: no variant {variant!r} trained on this pair"
            " (a significance test names a variant, not one of its -seed<N> replicas)"
        )
    return outputs


def significance_replica_args(wildcards, input):
    """`significance` options: --baseline FILE and --system FILE once per replica."""
    return [
        word
        for option, files in (
            ("--baseline", input.baseline),
            ("--system", input.system),
        )
        for path in files
        for word in (option, path)
    ]


# --- tables ------------------------------------------------------------------------------------
# A study's table (or figure-data) rule hands its command every input in one manifest file
# (nmtvariants.reporting.manifest). The rule names the function of the wildcards that gives the
# manifest's entries (its study plan's) once for `input:` and once for `params: manifest=`, so that what
# Snakemake tracks and what the command reads cannot drift; its `shell: with_manifest("nmtvariants
# <table> --manifest {log.manifest:q} ...")` writes the manifest beside the table's log (kept after a
# failure: the command can be rerun by hand from it) and runs the command.

WRITE_MANIFEST = "printf '%s\\n' {params.manifest:q} > {log.manifest:q}"


def with_manifest(command):
    """A table rule's shell: write its manifest (params.manifest) to log.manifest, then run `command`."""
    return f"{WRITE_MANIFEST} && {command}"


def manifest_files(entries_of):
    """`input:` of a table rule: every file its manifest names (nmtvariants.reporting.manifest)."""
    return lambda wildcards: manifest_inputs(entries_of(wildcards))


def manifest_text(entries_of):
    """`params: manifest=` of a table rule: the manifest that with_manifest writes, each entry of a
    toy-world experiment marked `toy` (the table's note then says what a toy run can show).
    """
    return lambda wildcards: manifest_json(toy_marked(entries_of(wildcards)))


def is_toy_experiment(experiment):
    return CORPORA[EXPERIMENTS[experiment]["corpus"]]["source"] == "toyworld"


def toy_marked(entries):
    return [
        (
            replace(entry, toy=True)
            if entry.experiment in EXPERIMENTS and is_toy_experiment(entry.experiment)
            else entry
        )
        for entry in entries
    ]


def preprocessing_table_inputs(wildcards):
    inputs = {}
    for name, corpus in CORPORA.items():
        train = corpus["train"]
        for pair in corpus["pairs"]:
            key = f"{name}_{pair.replace('-', '_')}"
            base = f"data/{name}/{pair}"
            inputs[f"{key}_drops"] = f"{base}/clean/drops.json"
            inputs[f"{key}_vocab"] = f"{base}/bpe/vocab.txt"
            for lang in pair.split("-"):
                inputs[f"{key}_tok_{lang}"] = f"data/{name}/tok/{train}.{lang}"
                inputs[f"{key}_tc_{lang}"] = f"{base}/tc/{train}.{lang}"
                inputs[f"{key}_bpe_{lang}"] = f"{base}/bpe/{train}.{lang}"
                inputs[f"{key}_roundtrip_{lang}"] = expand(
                    "results/{corpus}/{pair}/roundtrip/{testset}.{lang}.json",
                    corpus=name,
                    pair=pair,
                    testset=corpus["testsets"],
                    lang=lang,
                )
    return inputs


def scores_table_inputs(wildcards):
    if EXPERIMENTS[wildcards.experiment]["study"] != wildcards.study:
        study = EXPERIMENTS[wildcards.experiment]["study"]
        raise ValueError(
            f"experiment {wildcards.experiment} belongs to study {study}:"
            f" ask for results/tables/{study}/{wildcards.experiment}.md"
        )
    experiment = wildcards.experiment
    inputs = {
        "scores": [
            scores_file(experiment, replica.pair, replica.name, testset)
            for replica, testset in scores_table_replicas(experiment)
        ]
    }
    if reference_variant(experiment):
        # the significance test reads the outputs and references the score files name
        corpus = EXPERIMENTS[experiment]["corpus"]
        inputs["hyps"] = [
            path.removesuffix(".scores.json") + ".hyp" for path in inputs["scores"]
        ]
        inputs["refs"] = unique(
            f"data/{corpus}/raw/{testset}.{replica.pair.split('-')[1]}"
            for replica, testset in scores_table_replicas(experiment)
        )
    return inputs


def reference_variant(experiment):
    """The variant every other one of the scores table is tested against: the experiment's first
    (its baseline in every config), or None for an experiment of one variant."""
    variants = list(EXPERIMENTS[experiment]["variants"])
    return variants[0] if len(variants) > 1 else None


def scores_table_reference(wildcards):
    """`scores-table` options for the significance of each variant against the reference, over
    all replicas (nmtvariants.evaluation.significance.replica_bootstrap)."""
    reference = reference_variant(wildcards.experiment)
    if reference is None:
        return []
    return ["--reference", reference, "--significance-seed", str(config["seed"])]


def scores_table_replicas(experiment):
    """(replica, test set) of every score file of an experiment's table, in the table's order."""
    return [
        (replica, testset)
        for replica in experiment_replicas(config, experiment)
        for testset in EXPERIMENTS[experiment]["evaluate"]["testsets"]
    ]


def scores_table_toy(wildcards):
    """scores-table's `--toy` for an experiment on a toy-world corpus, else nothing."""
    return ["--toy"] if is_toy_experiment(wildcards.experiment) else []


def scores_table_seeds(wildcards):
    """The training seed of each score file of scores_table_inputs, in the same order."""
    return [
        str(replica.seed) for replica, _ in scores_table_replicas(wildcards.experiment)
    ]


# How a job starts the CLI: `shell: launch("train ...")`, with gpu=N among the job's resources.
# With N > 1 the job runs under torchrun, one DDP process per GPU of the allocation (SLURM gives
# the job N GPUs through the profile's --gpus=N); otherwise it runs the CLI directly. The GPU count
# lives in resources, not params, so moving a run to more GPUs does not by itself retrain it.
NMTV_LAUNCH = (
    "$(test {resources.gpu} -gt 1"
    " && echo torchrun --standalone --nproc_per_node={resources.gpu} -m) nmtvariants"
)


def measured(command):
    """The shell command of a job that Snakemake measures (`benchmark:`): its commands run in their own
    processes, not in the run's fork server (Snakefile, nmtvariants.fork_server), since a benchmark
    file counts the job's own process tree, which a served command is not part of."""
    return f"export {FORK_SERVER_ENV}={FORK_SERVER_OFF}; {command}"


def launch(command):
    """The shell command `nmtvariants <command>`, under torchrun when the job asks for > 1 GPU."""
    return f"{NMTV_LAUNCH} {command}"


def cancel_rescheduling_timers():
    """Snakemake's re-scheduling timers (one per finished job while others wait for cores, each of the
    span in profiles/default/config.yaml) are threads the interpreter waits for at exit; once the run is
    over (the Snakefile's onsuccess and onerror) nothing needs them."""
    for thread in threading.enumerate():
        if isinstance(thread, threading.Timer):
            thread.cancel()
