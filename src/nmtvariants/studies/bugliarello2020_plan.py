"""What the PASCAL study's rules build, from the resolved workflow config (rules/studies/bugliarello2020.smk).

The study's tables are over every experiment with ``study: bugliarello2020``: Table 1 and Figure 2 over
those not listed in ``studies.bugliarello2020.ablations``, Table 3 over the PASCAL variants of the listed
ones (or, with none listed, of the Table 1 experiments). Each experiment's Transformer is its first
variant without switches that trains on the corpus itself (the multi-task baseline, also without
switches, trains on a derived corpus: ``inputs: {<variant>: {derived: multitask}}``); the significance
tests compare every other variant with it, over every seed of both (the core rule ``significance``).
With a corpus that Stanza parses, the parser the workflow trains (``parser_treebanks``,
``parser_train``) is scored on its treebank's test set (``PARSER_TABLE``).
The functions here turn the config into the tables' manifests (nmtvariants.reporting.manifest: the
result files each table reads, by task and system) and the rules' input paths; they live in the
library because Snakemake's lint wants no function definitions beside rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from nmtvariants.config import Replica, experiment_replicas, experiment_systems
from nmtvariants.errors import ConfigError
from nmtvariants.reporting.manifest import Entry

STUDY = "bugliarello2020"
DEFAULTS: dict[str, Any] = {
    "parser_models": "models/stanza",
    "parser_treebanks": {"en": "ud_ewt"},  # languages whose parser the workflow trains, from which treebank
    "parser_train": {},  # `nmtvariants stanza-train` options: PARSER_TRAIN below, overridable per key
    "length_edges": [10, 20, 30, 40, 50],
    "ablations": [],
}
# A parser that trains in about half an hour on one CPU core, at the reduced sizes of
# nmtvariants.syntax.stanza_train.StanzaSizes (linear tagger classifiers, 100 sentences per tagger step,
# 1000 words per parser step): on UD EWT (12,544 sentences) a tagger step took ~0.7 s and a parser step
# ~0.6 s on a shared core, so 600 tagger steps are ~5 epochs and 1500 parser steps ~7 epochs. Measured
# (2026-11-23, the multi30k config, one niced core of a busy 2-core box): 26 minutes wall (12.5 tagger,
# 13 parser, 0.5 scoring), 2.3 GB peak RSS; on EWT test UPOS 87.2, UAS 73.3, LAS 66.2. A better
# parser needs more steps (Stanza's full recipe: 50k steps at hidden 400 on a GPU;
# experiments/bugliarello2020.yaml).
PARSER_TRAIN: dict[str, Any] = {"tagger_steps": 600, "parser_steps": 1500, "device": "cpu"}
PARSER_TABLE = f"results/tables/{STUDY}/parser.md"
STREAM_MODES = {"x2": "middle", "first": "first"}  # inputs/<split>.parents_<mode> -> `parents --mode`
TABLE1 = f"results/tables/{STUDY}/table1.md"
TABLE3 = f"results/tables/{STUDY}/table3.md"
FIGURE = "results/figures/{study}/length_{task}.png"


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """``studies.bugliarello2020`` with the defaults filled in."""
    return {**DEFAULTS, **((config.get("studies") or {}).get(STUDY) or {})}


def parser_train(config: Mapping[str, Any]) -> dict[str, Any]:
    return {**PARSER_TRAIN, **settings(config)["parser_train"]}


def parser_train_args(config: Mapping[str, Any]) -> list[str]:
    """``stanza-train`` options from ``parser_train`` (``tagger_steps: 200`` -> ``--tagger-steps 200``)."""
    args = []
    for key, value in sorted(parser_train(config).items()):
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def parser_files(config: Mapping[str, Any], lang: str) -> dict[str, str]:
    """The tagger, parser and training record of ``lang`` that rule bugliarello2020_stanza_train writes,
    or nothing for a language without a configured treebank (its models are the user's)."""
    if lang not in settings(config)["parser_treebanks"]:
        return {}
    folder = settings(config)["parser_models"]
    return {
        "tagger": f"{folder}/{lang}_tagger.pt",
        "parser": f"{folder}/{lang}_parser.pt",
        "record": f"{folder}/{lang}_training.json",
    }


def treebank_file(config: Mapping[str, Any], lang: str, split: str) -> str:
    return f"data/{settings(config)['parser_treebanks'][lang]}/raw/{split}.conllu"


def parser_scores(lang: str) -> str:
    return f"results/{STUDY}/parser/{lang}.scores.json"


def parsed_languages(config: Mapping[str, Any], corpora: Mapping[str, Any]) -> list[str]:
    """Source languages the study parses with Stanza (corpora without gold trees) that have a treebank
    to train on: the languages of the parser table."""
    langs = [
        pair.split("-")[0]
        for spec in experiments(config).values()
        if corpora[spec["corpus"]]["source"] != "toyworld"
        for pair in spec["pairs"]
    ]
    return [lang for lang in dict.fromkeys(langs) if lang in settings(config)["parser_treebanks"]]


def experiments(config: Mapping[str, Any]) -> dict[str, Any]:
    return {name: spec for name, spec in (config.get("experiments") or {}).items() if spec["study"] == STUDY}


def derived(config: Mapping[str, Any], experiment: str, variant: str) -> str | None:
    """The derived corpus a variant trains on (``inputs: {derived: multitask}``), or None."""
    return ((experiments(config)[experiment].get("inputs") or {}).get(variant) or {}).get("derived")


def baseline_variant(config: Mapping[str, Any], experiment: str) -> str:
    """The Transformer of an experiment: its first variant without switches that trains on the corpus
    itself (the multi-task baseline has no switches either, but a derived corpus)."""
    for variant, switches in experiments(config)[experiment]["variants"].items():
        if not switches and not derived(config, experiment, variant):
            return variant
    raise ConfigError(
        f"experiments.{experiment}.variants: the PASCAL study compares against a Transformer; add a "
        "variant without switches (e.g. transformer: {})"
    )


def check(config: Mapping[str, Any]) -> None:
    """Stop at start-up on an ablation list naming no experiment of the study, or on an experiment
    without a Transformer."""
    ours = experiments(config)
    for name in settings(config)["ablations"]:
        if name not in ours:
            raise ConfigError(
                f"studies.{STUDY}.ablations: {name} is not an experiment of study {STUDY} "
                f"({', '.join(ours) or 'none'})"
            )
    for name in ours:
        baseline_variant(config, name)


def main_experiments(config: Mapping[str, Any]) -> list[str]:
    ablations = settings(config)["ablations"]
    return [name for name in experiments(config) if name not in ablations]


def ablation_experiments(config: Mapping[str, Any]) -> list[str]:
    return list(settings(config)["ablations"]) or main_experiments(config)


def entries(config: Mapping[str, Any], names: Iterable[str], pascal_only: bool = False) -> list[Entry]:
    """The manifest of a table (nmtvariants.reporting.manifest), system by system in config order
    (experiment, pair, test set, variant): the ``scores`` of every replica of the system (one per seed of
    the experiment's ``seeds``, nmtvariants.config.experiment_replicas), so that the table gives the
    mean ± sd over seeds, then, but for the Transformer, the system's ``significance`` test over all
    replicas of the variant and of the Transformer (rule ``significance``; no ``seed``). Every entry's
    ``info`` has the variant's ``switches`` and ``derived`` corpus (which role the row is)."""
    out = []
    for name, pair, testset, variant, replicas in _systems(config, names, pascal_only):
        info = {"switches": dict(experiments(config)[name]["variants"][variant] or {})}
        info["derived"] = derived(config, name, variant)
        for replica in replicas:
            scores = f"results/{name}/{pair}/{replica.name}/{testset}.scores.json"
            out.append(Entry({"scores": scores}, name, pair, variant, replica.seed, testset, info=info))
        if variant != baseline_variant(config, name):
            significance = f"results/{name}/{pair}/{variant}/{testset}.significance.json"
            out.append(Entry({"significance": significance}, name, pair, variant, testset=testset, info=info))
    return out


def _systems(
    config: Mapping[str, Any], names: Iterable[str], pascal_only: bool
) -> Iterator[tuple[str, str, str, str, list[Replica]]]:
    """(experiment, pair, test set, variant, its replicas) of a table's rows, in config order."""
    for name in names:
        spec = experiments(config)[name]
        replicas: dict[tuple[str, str], list[Replica]] = {}
        for replica in experiment_replicas(config, name):
            replicas.setdefault((replica.pair, replica.variant), []).append(replica)
        for pair in spec["pairs"]:
            for testset in spec["evaluate"]["testsets"]:
                for variant in (variant for of, variant in experiment_systems(spec) if of == pair):
                    switches = spec["variants"][variant]
                    if pascal_only and ("pascal" not in (switches or {}) or derived(config, name, variant)):
                        continue
                    yield name, pair, testset, variant, replicas[pair, variant]


def figure_tasks(config: Mapping[str, Any]) -> dict[str, tuple[str, str, str]]:
    """Figure 2 has one PNG per task of the Table 1 experiments: ``<experiment>_<pair>_<testset>`` ->
    (experiment, pair, testset)."""
    return {
        f"{name}_{pair}_{testset}": (name, pair, testset)
        for name in main_experiments(config)
        for pair in experiments(config)[name]["pairs"]
        for testset in experiments(config)[name]["evaluate"]["testsets"]
    }


def figure_path(task: str) -> str:
    return FIGURE.format(study=STUDY, task=task)


def figure_manifest(config: Mapping[str, Any], task: str) -> list[Entry]:
    """The manifest of one Figure 2 task: each system's BLEU by source length, of its first seed."""
    name, pair, testset = figure_tasks(config)[task]
    return [
        Entry(
            {"length": f"results/{name}/{pair}/{variant}/{testset}.length.json"},
            name,
            pair,
            variant,
            replicas[0].seed,
            testset,
        )
        for _, of_pair, of_testset, variant, replicas in _systems(config, [name], pascal_only=False)
        if (of_pair, of_testset) == (pair, testset)
    ]


def parser_manifest(config: Mapping[str, Any], corpora: Mapping[str, Any]) -> list[Entry]:
    """The parser table's manifest: the scores of the parser of every parsed language."""
    return [Entry({"scores": parser_scores(lang)}, label=lang) for lang in parsed_languages(config, corpora)]


def regex(names: Iterable[str]) -> str:
    """A wildcard constraint matching exactly ``names`` (nothing when there are none)."""
    return "|".join(re.escape(name) for name in names) or "(?!)"


def gold_inputs(corpora: Mapping[str, Any], corpus: str, src: str, tgt: str, split: str) -> dict[str, str]:
    """Inputs of the gold-parse rule: the raw trees, the tokens they go onto, the kept lines (train)."""
    inputs = {
        "conllu": f"data/{corpus}/raw/{split}.{src}.conllu",
        "tokens": f"data/{corpus}/{src}-{tgt}/tc/{split}.{src}",
    }
    if split == corpora[corpus]["train"]:
        inputs["kept"] = f"data/{corpus}/{src}-{tgt}/clean/train.kept"
    return inputs


def reference(config: Mapping[str, Any], experiment: str, pair: str, testset: str) -> str:
    corpus = experiments(config)[experiment]["corpus"]
    return f"data/{corpus}/raw/{testset}.{pair.split('-')[1]}"


def tokenised_source(config: Mapping[str, Any], experiment: str, pair: str, testset: str) -> str:
    """The Moses-tokenised source whose word counts make Figure 2's buckets (the authors' len2bleu.sh)."""
    corpus = experiments(config)[experiment]["corpus"]
    return f"data/{corpus}/tok/{testset}.{pair.split('-')[0]}"
