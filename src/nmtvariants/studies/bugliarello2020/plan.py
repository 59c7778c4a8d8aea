"""What the PASCAL study's rules build, from the resolved workflow config (rules/studies/bugliarello2020.smk).

The study's tables are over every experiment with ``study: bugliarello2020``: Table 1 and Figure 2 over
those not listed in ``studies.bugliarello2020.ablations``, Table 3 over the PASCAL variants of the listed
ones (or, with none listed, of the Table 1 experiments). Each experiment's Transformer is its first
variant without switches that trains on the corpus itself (the multi-task baseline, also without
switches, trains on a derived corpus: ``inputs: {<variant>: {derived: multitask}}``); the significance
tests compare every other variant with it, over every seed of both (the core rule ``significance``).
With a corpus that Stanza parses, the parser the workflow trains (``parser_treebanks``,
``parser_train``) is scored on its treebank's test set (``PARSER_TABLE``).
:class:`Bugliarello2020Plan` (a :class:`nmtvariants.studies.plan_base.StudyPlan`, as every study's
planner) turns the config into the tables' manifests (nmtvariants.reporting.manifest: the result files
each table reads, by task and system) and the rules' input paths; it lives in the library because
Snakemake's lint wants no function definitions beside rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from nmtvariants.config import Replica, experiment_systems, variant_train
from nmtvariants.errors import ConfigError
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.plan_base import RunIndex, StudyPlan

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


def parser_scores(lang: str) -> str:
    return f"results/{STUDY}/parser/{lang}.scores.json"


class Bugliarello2020Plan(StudyPlan):
    """The study's experiments, the rows of its tables and figure, and its parsers, for one config;
    built once by the rules file, which it stops at start-up on a config the study cannot plan."""

    study = STUDY
    defaults = DEFAULTS

    def __init__(self, config: Mapping[str, Any], run_of: RunIndex) -> None:
        super().__init__(config, run_of)
        self.check()

    def check(self) -> None:
        """Stop on an ablation list naming no experiment of the study, or on an experiment without a
        Transformer."""
        for name in self.settings["ablations"]:
            if name not in self.experiments:
                raise ConfigError(
                    f"studies.{STUDY}.ablations: {name} is not an experiment of study {STUDY} "
                    f"({', '.join(self.experiments) or 'none'})"
                )
        for name in self.experiments:
            self.reference_variant(name)

    # --- the parser -------------------------------------------------------------------------------
    def parser_train(self) -> dict[str, Any]:
        return {**PARSER_TRAIN, **self.settings["parser_train"]}

    def parser_train_args(self) -> list[str]:
        """``stanza-train`` options from ``parser_train`` (``tagger_steps: 200`` ->
        ``--tagger-steps 200``)."""
        args = []
        for key, value in sorted(self.parser_train().items()):
            args += [f"--{key.replace('_', '-')}", str(value)]
        return args

    def parser_files(self, lang: str) -> dict[str, str]:
        """The tagger, parser and training record of ``lang`` that rule bugliarello2020_stanza_train
        writes, or nothing for a language without a configured treebank (its models are the user's)."""
        if lang not in self.settings["parser_treebanks"]:
            return {}
        folder = self.settings["parser_models"]
        return {
            "tagger": f"{folder}/{lang}_tagger.pt",
            "parser": f"{folder}/{lang}_parser.pt",
            "record": f"{folder}/{lang}_training.json",
        }

    def treebank_file(self, lang: str, split: str) -> str:
        return f"data/{self.settings['parser_treebanks'][lang]}/raw/{split}.conllu"

    def parsed_languages(self) -> list[str]:
        """Source languages the study parses with Stanza (corpora without gold trees) that have a
        treebank to train on: the languages of the parser table."""
        langs = [
            pair.split("-")[0]
            for spec in self.experiments.values()
            if not self.is_toyworld(spec["corpus"])
            for pair in spec["pairs"]
        ]
        return [lang for lang in dict.fromkeys(langs) if lang in self.settings["parser_treebanks"]]

    def parser_manifest(self) -> list[Entry]:
        """The parser table's manifest: the scores of the parser of every parsed language."""
        return [Entry({"scores": parser_scores(lang)}, label=lang) for lang in self.parsed_languages()]

    # --- experiments and their Transformer --------------------------------------------------------
    def derived(self, experiment: str, variant: str) -> str | None:
        """The derived corpus a variant trains on (``inputs: {derived: multitask}``), or None."""
        return self.variant_inputs(experiment, variant).get("derived")

    def reference_variant(self, experiment: str) -> str:
        """The Transformer of an experiment: its first variant without switches that trains on the
        corpus itself (the multi-task baseline has no switches either, but a derived corpus)."""
        for variant, switches in self.experiments[experiment]["variants"].items():
            if not switches and not self.derived(experiment, variant):
                return variant
        raise ConfigError(
            f"experiments.{experiment}.variants: the PASCAL study compares against a Transformer; add a "
            "variant without switches (e.g. transformer: {})"
        )

    def main_experiments(self) -> list[str]:
        return [name for name in self.experiments if name not in self.settings["ablations"]]

    def ablation_experiments(self) -> list[str]:
        return list(self.settings["ablations"]) or self.main_experiments()

    # --- what the study builds --------------------------------------------------------------------
    def tables(self) -> list[str]:
        """Table 1 (experiments not listed as ablations), Table 3 (PASCAL variants) and the parser
        table (a language parsed with a parser the workflow trains), where they have rows."""
        tables = [TABLE1] if self.main_experiments() else []
        if self.entries(self.ablation_experiments(), pascal_only=True):
            tables.append(TABLE3)
        return tables + ([PARSER_TABLE] if self.parsed_languages() else [])

    def figures(self) -> dict[str, dict[str, Any]]:
        """Figure 2: BLEU by source length, one bar chart per task of the Table 1 experiments."""
        return {
            self.figure_path(f"length_{task}"): {
                "kind": "bars",
                "x": "bucket",
                "y": "bleu",
                "group": "variant",
                "ylabel": "BLEU",
                "title": f"BLEU by source length: {name} {pair} {testset}",
            }
            for task, (name, pair, testset) in self.figure_tasks().items()
        }

    def significance_tests(self) -> dict[str, tuple[str, list[str]]]:
        """Every variant against the Transformer, over every seed of both, by BLEU."""
        return {name: (self.reference_variant(name), ["bleu"]) for name in self.experiments}

    # --- manifests --------------------------------------------------------------------------------
    def entries(self, names: Iterable[str], pascal_only: bool = False) -> list[Entry]:
        """The manifest of a table (nmtvariants.reporting.manifest), system by system in config order
        (experiment, pair, test set, variant): the ``scores`` of every replica of the system (one per
        seed of the experiment's ``seeds``), so that the table gives the mean ± sd over seeds, then, but
        for the Transformer, the system's ``significance`` test over all replicas of the variant and of
        the Transformer (rule ``significance``; no ``seed``). Every entry's ``info`` has the variant's
        ``switches`` and ``derived`` corpus (which role the row is), and its ``update_ratio``: its updates
        over the experiment's (``variant_train``; 1 for all but a longer-trained multi-task run)."""
        out = []
        for name, pair, testset, variant, replicas in self._systems(names, pascal_only):
            spec = self.experiments[name]
            info = {"switches": dict(spec["variants"][variant] or {})}
            info["derived"] = self.derived(name, variant)
            info["update_ratio"] = variant_train(spec, variant)["max_updates"] / spec["train"]["max_updates"]
            out += [self.score_entry(name, pair, variant, replica, testset, info) for replica in replicas]
            if variant != self.reference_variant(name):
                out.append(self.significance_entry(name, pair, variant, testset, info))
        return out

    def _systems(
        self, names: Iterable[str], pascal_only: bool
    ) -> Iterator[tuple[str, str, str, str, list[Replica]]]:
        """(experiment, pair, test set, variant, its replicas) of a table's rows, in config order."""
        for name in names:
            spec = self.experiments[name]
            for pair in spec["pairs"]:
                for testset in self.testsets(name):
                    for variant in (variant for of, variant in experiment_systems(spec) if of == pair):
                        switches = spec["variants"][variant]
                        if pascal_only and ("pascal" not in (switches or {}) or self.derived(name, variant)):
                            continue
                        yield name, pair, testset, variant, self.replicas(name, pair, variant)

    def figure_tasks(self) -> dict[str, tuple[str, str, str]]:
        """Figure 2 has one PNG per task of the Table 1 experiments: ``<experiment>_<pair>_<testset>``
        -> (experiment, pair, testset)."""
        return {
            f"{name}_{pair}_{testset}": (name, pair, testset)
            for name in self.main_experiments()
            for pair in self.experiments[name]["pairs"]
            for testset in self.testsets(name)
        }

    def figure_manifest(self, task: str) -> list[Entry]:
        """The manifest of one Figure 2 task: each system's BLEU by source length, of its first seed."""
        name, pair, testset = self.figure_tasks()[task]
        return [
            Entry(
                {"length": f"results/{name}/{pair}/{variant}/{testset}.length.json"},
                name,
                pair,
                variant,
                replicas[0].seed,
                testset,
            )
            for _, of_pair, of_testset, variant, replicas in self._systems([name], pascal_only=False)
            if (of_pair, of_testset) == (pair, testset)
        ]

    # --- inputs of the rules ----------------------------------------------------------------------
    def gold_inputs(self, corpus: str, src: str, tgt: str, split: str) -> dict[str, str]:
        """Inputs of the gold-parse rule: the raw trees, the tokens they go onto, the kept lines (train)."""
        inputs = {
            "conllu": f"data/{corpus}/raw/{split}.{src}.conllu",
            "tokens": f"data/{corpus}/{src}-{tgt}/tc/{split}.{src}",
        }
        if split == self.corpora[corpus]["train"]:
            inputs["kept"] = f"data/{corpus}/{src}-{tgt}/clean/train.kept"
        return inputs

    def tokenised_source(self, experiment: str, pair: str, testset: str) -> str:
        """The Moses-tokenised source whose word counts make Figure 2's buckets (the authors'
        len2bleu.sh)."""
        return f"data/{self.corpus(experiment)}/tok/{testset}.{pair.split('-')[0]}"
