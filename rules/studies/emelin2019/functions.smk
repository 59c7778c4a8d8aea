# Names, settings and input functions of rules/studies/emelin2019.smk (kept apart from its rules, as
# Snakemake's linter asks). Included by that file, after rules/common.smk.

import json

from nmtvariants.plugins.shortcuts import ShortcutOptions

EMELIN = "emelin2019"
EMELIN_TABLES = f"results/tables/{EMELIN}"
EMELIN_FIGURES = f"results/figures/{EMELIN}"
EMELIN_EXPERIMENTS = {
    name: spec for name, spec in EXPERIMENTS.items() if spec["study"] == EMELIN
}
EMELIN_CONTRAWSD_DEEN = "data/contrawsd_deen/raw/contrawsd.json"
# The lexical probes train on the states of the first `train_sentences` of the NMT training corpus, stop
# early on the dev set's and report on the test set's (the authors' protocol, seed brief §1.7), the
# dev and test sets cut to their first `max_sentences`. At toy scale a few hundred sentences each and
# at most 30 epochs (the demo budget); small models on a small real corpus (Multi30k: 1,000 test
# sentences, a vocabulary of ~10k, 24 probes on one core) 1,000 each within 30 epochs; at full scale
# 10,000 training sentences (~300k tokens a side, of the order of the authors' 100 NMT batches; their
# states are stored, not streamed: ~10 GB in float32) and 5,000 dev/test sentences, the authors' 100
# epochs. Every probe stops earlier when its dev accuracy stalls (patience 5).
# `studies.emelin2019.probe_train_sentences` replaces the training sample's size at every scale.
EMELIN_CAPS = {
    "toy": {"train_sentences": 300, "max_sentences": 300, "max_epochs": 30},
    "small": {"train_sentences": 1000, "max_sentences": 1000, "max_epochs": 30},
    "full": {"train_sentences": 10000, "max_sentences": 5000, "max_epochs": 100},
}
EMELIN_PROBE_PARTS = ("train", "valid", "test")
EMELIN_SETTINGS = (config.get("studies") or {}).get(EMELIN) or {}


def emelin_is_toy(experiment):
    return CORPORA[EMELIN_EXPERIMENTS[experiment]["corpus"]]["source"] == "toyworld"


def emelin_caps(experiment):
    if emelin_is_toy(experiment):
        return EMELIN_CAPS["toy"]
    small = EMELIN_EXPERIMENTS[experiment]["model"]["preset"] in ("tiny", "small")
    return EMELIN_CAPS["small" if small else "full"]


def emelin_scored(experiment, *metrics):
    """Whether the experiment's evaluation computes every one of ``metrics``."""
    return set(metrics) <= set(EMELIN_EXPERIMENTS[experiment]["evaluate"]["metrics"])


def emelin_systems(
    pairs=None, exclude_pairs=(), presets=None, exclude_presets=(), metrics=()
):
    """(experiment, pair, variant) of the study's experiments, in config order, filtered (``metrics``:
    only experiments evaluated with all of them)."""
    return [
        (name, pair, variant)
        for name, spec in EMELIN_EXPERIMENTS.items()
        if (presets is None or spec["model"]["preset"] in presets)
        and spec["model"]["preset"] not in exclude_presets
        and emelin_scored(name, *metrics)
        for pair, variant in experiment_systems(spec)
        if (pairs is None or pair in pairs) and pair not in exclude_pairs
    ]


# The BLEU tables: name -> (title, pairs, pairs left out, presets, presets left out), those with rows.
# They show tokenised BLEU beside sacreBLEU, so they take the experiments evaluated with both.
EMELIN_BLEU_METRICS = ("bleu", "tok-bleu")
EMELIN_BLEU_TABLES = {
    name: (title, *selection)
    for name, (title, *selection) in {
        "table1_bleu": (
            "Table 1: EN-DE, tokenised BLEU and sacreBLEU",
            ["en-de"],
            [],
            None,
            ["small"],
        ),
        "table2_pairs": (
            "Table 2: the other language pairs",
            None,
            ["en-de"],
            None,
            ["small"],
        ),
        "table3_small": ("Table 3: small EN-DE models", ["en-de"], [], ["small"], []),
    }.items()
    if emelin_systems(*selection, metrics=EMELIN_BLEU_METRICS)
}


def emelin_mean_args(table):
    """``--mean-testsets`` of a BLEU table: Table 3's "test mean" is "the average of test-sets in table
    (1)" (its caption), so it averages Table 1's test sets; Tables 1 and 2 average their own.
    """
    if table != "table3_small" or "table1_bleu" not in EMELIN_BLEU_TABLES:
        return []
    _, *selection = EMELIN_BLEU_TABLES["table1_bleu"]
    testsets = dict.fromkeys(
        testset
        for name, _, _ in emelin_systems(*selection, metrics=EMELIN_BLEU_METRICS)
        for testset in EMELIN_EXPERIMENTS[name]["evaluate"]["testsets"]
    )
    return ["--mean-testsets", *testsets]


def emelin_replicas(experiment, pair, variant):
    """The replicas of one system, one per seed of the experiment (the first is the variant itself)."""
    return [
        replica
        for replica in experiment_replicas(config, experiment)
        if replica.pair == pair and replica.variant == variant
    ]


def emelin_score_files(systems):
    """(score file, its training seed) of every replica and test set of ``systems``."""
    return [
        (f"results/{name}/{pair}/{replica.name}/{testset}.scores.json", replica.seed)
        for name, pair, variant in systems
        for replica in emelin_replicas(name, pair, variant)
        for testset in EMELIN_EXPERIMENTS[name]["evaluate"]["testsets"]
    ]


def emelin_scores(systems):
    return [path for path, _ in emelin_score_files(systems)]


def emelin_seed_args(systems):
    """``--seeds``: the training seed of each file of emelin_scores, so that the tables average a
    system's replicas (mean ± sd over seeds) instead of listing them as variants."""
    return ["--seeds", *(str(seed) for _, seed in emelin_score_files(systems))]


def emelin_first_seed_sentences(experiment):
    """The analysis tables (probes, gates, ContraWSD, Table 5) read the first seed's run only; a table
    of an experiment with several seeds says so in this sentence (none with one seed).
    """
    seeds = experiment_seeds(config, experiment)
    if len(seeds) == 1:
        return []
    return [
        f"Analyses: seed {seeds[0]} only (the first of the experiment's seeds"
        f" {', '.join(map(str, seeds))}); the BLEU tables and the bootstrap average over every seed."
    ]


def emelin_first_seed_note(experiment):
    """``--note`` of an analysis table: emelin_first_seed_sentences, if any."""
    sentences = emelin_first_seed_sentences(experiment)
    return ["--note", " ".join(sentences)] if sentences else []


def emelin_contrawsd_set(corpus, pair):
    """The ContraWSD JSON that tests a model of this corpus and pair, or None."""
    if CORPORA[corpus]["source"] == "toyworld":
        return "data/toyworld/contrawsd/en-de.json" if pair == "en-de" else None
    return EMELIN_CONTRAWSD_DEEN if pair == "de-en" else None


def emelin_has_shortcuts(experiment, variant):
    return "shortcuts" in (EMELIN_EXPERIMENTS[experiment]["variants"][variant] or {})


def emelin_main_setting(experiment, variant):
    """Whether the paper analyses this kind of model: the baseline, or shortcuts in its main setting
    (self-attention on both sides, from the embeddings, none into decoder-to-encoder attention). The
    probes, similarity, gates, ContraWSD and Table 5 cover these; Table 4's ablations (dec-to-enc,
    non-lexical) and Figure 5's (encoder-/decoder-only) are compared by BLEU and the bootstrap.
    """
    switches = EMELIN_EXPERIMENTS[experiment]["variants"][variant] or {}
    return (
        "shortcuts" not in switches
        or ShortcutOptions.parse(switches["shortcuts"]).main_setting
    )


def emelin_analysed_variants(experiment, pair="en-de"):
    """The variants of an experiment's pair that the analyses cover (emelin_main_setting)."""
    return [
        variant
        for name, _, variant in emelin_systems([pair])
        if name == experiment and emelin_main_setting(experiment, variant)
    ]


def emelin_label(experiment, variant):
    """Rows of the study-wide tables name the experiment when the study has several."""
    return variant if len(EMELIN_EXPERIMENTS) == 1 else f"{experiment}/{variant}"


def emelin_checkpoint(experiment, pair, variant):
    average = EMELIN_EXPERIMENTS[experiment]["average_last"]
    return averaged_model(RUN_OF[(experiment, pair, variant)], average)


def emelin_run_bpe(experiment, pair, name):
    return bpe_file(EMELIN_EXPERIMENTS[experiment]["corpus"], pair, name)


def emelin_probe_testset(experiment):
    return EMELIN_EXPERIMENTS[experiment]["evaluate"]["testsets"][0]


def emelin_probe_train_sentences(experiment):
    return EMELIN_SETTINGS.get(
        "probe_train_sentences", emelin_caps(experiment)["train_sentences"]
    )


def emelin_states_split(experiment, part):
    """The corpus split whose states make probe part ``part`` (train, valid or test)."""
    if part == "test":
        return emelin_probe_testset(experiment)
    return CORPORA[EMELIN_EXPERIMENTS[experiment]["corpus"]][part]


def emelin_states_sentences(experiment, part):
    """How many sentences from the start of the part's split are extracted."""
    if part == "train":
        return emelin_probe_train_sentences(experiment)
    return emelin_caps(experiment)["max_sentences"]


def emelin_states_mem_mb(experiment, part):
    # every layer of both stacks is held twice while the file is assembled: ~2 MB a sentence at BASE
    return max(8000, 3 * emelin_states_sentences(experiment, part))


def emelin_probe_note():
    """The probes' protocol as the tables state it, and where it differs from the authors'."""
    corpus = CORPORA[EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["corpus"]]
    caps = emelin_caps(EMELIN_ANALYSED)
    return (
        f"Each probe trains on the states of the first {emelin_probe_train_sentences(EMELIN_ANALYSED)}"
        f" sentences of the NMT training corpus ({corpus['train']}), stops early on the dev set"
        f" ({corpus['valid']}, first {caps['max_sentences']} sentences) and is scored on the test set"
        f" ({emelin_probe_testset(EMELIN_ANALYSED)}, first {caps['max_sentences']} sentences), as the"
        " authors' probes. Deviation: the authors stream 100 batches of the training corpus through the"
        " model; here a capped sample from its start is extracted and stored."
    )


# The paper probes its BASE models: the first EN-DE experiment that is neither big nor small, else (a
# small model on a small real corpus, experiments/multi30k_emelin2019.yaml) the first EN-DE one.
_EMELIN_ENDE = [
    name for name, spec in EMELIN_EXPERIMENTS.items() if "en-de" in spec["pairs"]
]
EMELIN_ANALYSED = next(
    (
        name
        for name in _EMELIN_ENDE
        if EMELIN_EXPERIMENTS[name]["model"]["preset"] not in ("big", "small")
    ),
    _EMELIN_ENDE[0] if _EMELIN_ENDE else None,
)
EMELIN_CONTRAWSD = next(
    (
        (name, pair)
        for name, spec in EMELIN_EXPERIMENTS.items()
        for pair in spec["pairs"]
        if emelin_contrawsd_set(spec["corpus"], pair)
    ),
    None,
)
# POS labels exist for toyworld only (its gold source parse and target tags); a real corpus gets the
# frequency breakdown, and its table says that POS is not available.
EMELIN_POS = EMELIN_ANALYSED is not None and emelin_is_toy(EMELIN_ANALYSED)
EMELIN_NO_POS_NOTE = "No POS breakdown: this corpus has no POS annotation (toyworld's gold parse and target tags only)."
# Table 4 shows tokenised BLEU too; the real-data comparison (bootstrap.md) sacreBLEU and chrF with a
# paired bootstrap of every variant against the baseline.
EMELIN_VARIANTS_TABLE = EMELIN_ANALYSED is not None and emelin_scored(
    EMELIN_ANALYSED, *EMELIN_BLEU_METRICS
)
EMELIN_BOOTSTRAP_METRICS = ("bleu", "chrf")
EMELIN_BOOTSTRAP = (
    EMELIN_ANALYSED is not None
    and emelin_scored(EMELIN_ANALYSED, *EMELIN_BOOTSTRAP_METRICS)
    and "baseline" in EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["variants"]
    and len(EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["variants"]) > 1
)


def emelin_bootstrap_results():
    """VARIANT/TESTSET -> significance JSON of every non-baseline variant of the analysed experiment."""
    return {
        f"{variant}/{testset}": f"results/{EMELIN_ANALYSED}/en-de/{variant}/{testset}.significance.json"
        for _, _, variant in emelin_variant_systems()
        if variant != "baseline"
        for testset in EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["evaluate"]["testsets"]
    }


def emelin_analysis(kind, shortcuts_only=False):
    """The per-variant analysis files of the analysed experiment's EN-DE runs (main setting)."""
    return {
        emelin_label(
            EMELIN_ANALYSED, variant
        ): f"results/{EMELIN_ANALYSED}/en-de/{variant}/analysis/{kind}"
        for variant in emelin_analysed_variants(EMELIN_ANALYSED)
        if not shortcuts_only or emelin_has_shortcuts(EMELIN_ANALYSED, variant)
    }


def emelin_labelled(files):
    return [f"{label}={path}" for label, path in files.items()]


def emelin_probe_inputs(wildcards):
    """The three states files of the probe protocol (training corpus, dev, test), the vocabulary, the
    whole BPE'd training text (the frequency bins) and, on toyworld, the test set's POS.
    """
    analysis = (
        f"results/{wildcards.experiment}/{wildcards.pair}/{wildcards.variant}/analysis"
    )
    inputs = {
        f"{part}_states": f"{analysis}/states-{part}.npz" for part in EMELIN_PROBE_PARTS
    }
    inputs["vocab"] = emelin_run_bpe(wildcards.experiment, wildcards.pair, "vocab.txt")
    src, tgt = wildcards.pair.split("-")
    train = CORPORA[EMELIN_EXPERIMENTS[wildcards.experiment]["corpus"]]["train"]
    inputs["source_train"] = emelin_run_bpe(
        wildcards.experiment, wildcards.pair, f"{train}.{src}"
    )
    inputs["target_train"] = emelin_run_bpe(
        wildcards.experiment, wildcards.pair, f"{train}.{tgt}"
    )
    if emelin_is_toy(wildcards.experiment):
        corpus = EMELIN_EXPERIMENTS[wildcards.experiment]["corpus"]
        testset = emelin_probe_testset(wildcards.experiment)
        inputs["pos"] = f"data/{corpus}/{wildcards.pair}/pos/{testset}.{src}"
        inputs["target_pos"] = f"data/{corpus}/{wildcards.pair}/pos/{testset}.{tgt}"
    return inputs


def emelin_pos_annotation(wildcards):
    """The word-level POS a grouping file is projected from: the source's CoNLL-U parse, or the
    target's tags (toyworld's raw/{split}.{de,ru,fr}.pos)."""
    raw = f"data/{wildcards.corpus}/raw/{wildcards.split}.{wildcards.lang}"
    return (
        f"{raw}.conllu"
        if wildcards.lang == wildcards.pair.split("-")[0]
        else f"{raw}.pos"
    )


def emelin_bleu_systems(wildcards):
    """Tables 1-3: the main-setting models (Table 4 holds the ablations)."""
    _, pairs, exclude, presets, excluded = EMELIN_BLEU_TABLES[wildcards.table]
    return [
        system
        for system in emelin_systems(
            pairs, exclude, presets, excluded, EMELIN_BLEU_METRICS
        )
        if emelin_main_setting(system[0], system[2])
    ]


def emelin_variant_systems():
    """Table 4: every variant of the analysed (BASE-like) experiment's EN-DE runs."""
    return [
        system for system in emelin_systems(["en-de"]) if system[0] == EMELIN_ANALYSED
    ]


def emelin_speed_runs():
    """label (experiment/variant) -> (parameter count file, the run's final.pt) of every EN-DE run of
    the main setting (the paper's Table 5: baseline, lexical shortcuts, feature-fusion).
    """
    return {
        f"{name}/{variant}": (
            f"results/{name}/{pair}/{variant}/analysis/params.txt",
            f"{run_dir(name, pair, variant)}/final.pt",
        )
        for name, pair, variant in emelin_systems(["en-de"])
        if emelin_main_setting(name, variant)
    }


def emelin_contrawsd_results():
    name, pair = EMELIN_CONTRAWSD
    return {
        emelin_label(
            name, variant
        ): f"results/{name}/{pair}/{variant}/analysis/contrawsd.json"
        for variant in emelin_analysed_variants(name, pair)
    }
