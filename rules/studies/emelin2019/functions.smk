# Names, settings and input functions of rules/studies/emelin2019.smk (kept apart from its rules, as
# Snakemake's linter asks). Included by that file, after rules/common.smk.

import json

EMELIN = "emelin2019"
EMELIN_TABLES = f"results/tables/{EMELIN}"
EMELIN_FIGURES = f"results/figures/{EMELIN}"
EMELIN_EXPERIMENTS = {
    name: spec for name, spec in EXPERIMENTS.items() if spec["study"] == EMELIN
}
EMELIN_CONTRAWSD_DEEN = "data/contrawsd_deen/raw/contrawsd.json"
# At toy scale the probes see a few hundred test sentences and stop within 30 epochs (the demo budget);
# at full scale the first 5,000 test sentences, the authors' 100 epochs.
EMELIN_CAPS = {
    True: {"max_sentences": 300, "max_epochs": 30},
    False: {"max_sentences": 5000, "max_epochs": 100},
}


def emelin_is_toy(experiment):
    return CORPORA[EMELIN_EXPERIMENTS[experiment]["corpus"]]["source"] == "toyworld"


def emelin_systems(pairs=None, exclude_pairs=(), presets=None, exclude_presets=()):
    """(experiment, pair, variant) of the study's experiments, in config order, filtered."""
    return [
        (name, pair, variant)
        for name, spec in EMELIN_EXPERIMENTS.items()
        if (presets is None or spec["model"]["preset"] in presets)
        and spec["model"]["preset"] not in exclude_presets
        for pair in spec["pairs"]
        if (pairs is None or pair in pairs) and pair not in exclude_pairs
        for variant in spec["variants"]
    ]


# The BLEU tables: name -> (title, pairs, pairs left out, presets, presets left out), those with rows.
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
    if emelin_systems(*selection)
}


def emelin_scores(systems):
    return [
        f"results/{name}/{pair}/{variant}/{testset}.scores.json"
        for name, pair, variant in systems
        for testset in EMELIN_EXPERIMENTS[name]["evaluate"]["testsets"]
    ]


def emelin_contrawsd_set(corpus, pair):
    """The ContraWSD JSON that tests a model of this corpus and pair, or None."""
    if CORPORA[corpus]["source"] == "toyworld":
        return "data/toyworld/contrawsd/en-de.json" if pair == "en-de" else None
    return EMELIN_CONTRAWSD_DEEN if pair == "de-en" else None


def emelin_has_shortcuts(experiment, variant):
    return "shortcuts" in (EMELIN_EXPERIMENTS[experiment]["variants"][variant] or {})


def emelin_label(experiment, variant):
    """Rows of the study-wide tables name the experiment when the study has several."""
    return variant if len(EMELIN_EXPERIMENTS) == 1 else f"{experiment}/{variant}"


def emelin_checkpoint(experiment, pair, variant):
    average = EMELIN_EXPERIMENTS[experiment]["average_last"]
    return f"{run_dir(experiment, pair, variant)}/averaged-last{average}.pt"


def emelin_run_bpe(experiment, pair, name):
    return f"data/{EMELIN_EXPERIMENTS[experiment]['corpus']}/{pair}/bpe/{name}"


def emelin_probe_testset(experiment):
    return EMELIN_EXPERIMENTS[experiment]["evaluate"]["testsets"][0]


EMELIN_ANALYSED = next(
    (
        name
        for name, spec in EMELIN_EXPERIMENTS.items()
        if "en-de" in spec["pairs"] and spec["model"]["preset"] not in ("big", "small")
    ),
    None,
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
EMELIN_POS = EMELIN_ANALYSED is not None and emelin_is_toy(EMELIN_ANALYSED)


def emelin_analysis(kind, shortcuts_only=False):
    """The per-variant analysis files of the analysed experiment's EN-DE runs."""
    return {
        emelin_label(
            EMELIN_ANALYSED, variant
        ): f"results/{EMELIN_ANALYSED}/en-de/{variant}/analysis/{kind}"
        for variant in EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["variants"]
        if not shortcuts_only or emelin_has_shortcuts(EMELIN_ANALYSED, variant)
    }


def emelin_labelled(files):
    return [f"{label}={path}" for label, path in files.items()]


def emelin_probe_inputs(wildcards):
    inputs = {
        "states": f"results/{wildcards.experiment}/{wildcards.pair}/{wildcards.variant}/analysis/states.npz",
        "vocab": emelin_run_bpe(wildcards.experiment, wildcards.pair, "vocab.txt"),
    }
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
    return inputs


def emelin_bleu_systems(wildcards):
    _, pairs, exclude, presets, excluded = EMELIN_BLEU_TABLES[wildcards.table]
    return emelin_systems(pairs, exclude, presets, excluded)


def emelin_variant_systems():
    """Table 4: every variant of the analysed (BASE-like) experiment's EN-DE runs."""
    return [
        (EMELIN_ANALYSED, "en-de", variant)
        for variant in EMELIN_EXPERIMENTS[EMELIN_ANALYSED]["variants"]
    ]


def emelin_speed_runs():
    """label (experiment/variant) -> (parameter count file, the run's final.pt) of every EN-DE run."""
    return {
        f"{name}/{variant}": (
            f"results/{name}/{pair}/{variant}/analysis/params.txt",
            f"{run_dir(name, pair, variant)}/final.pt",
        )
        for name, pair, variant in emelin_systems(["en-de"])
    }


def emelin_contrawsd_results():
    name, pair = EMELIN_CONTRAWSD
    return {
        emelin_label(
            name, variant
        ): f"results/{name}/{pair}/{variant}/analysis/contrawsd.json"
        for variant in EMELIN_EXPERIMENTS[name]["variants"]
    }
