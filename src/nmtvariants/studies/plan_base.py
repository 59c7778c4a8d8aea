"""The one shape of a study's planner: what its rules build, decided from the resolved config.

A study's rules file (``rules/studies/<study>.smk``) holds rules only. Its planner, a subclass of
:class:`StudyPlan` built once per workflow from the config and the index of training runs, decides
what each rule reads and writes and what each table command's manifest
(:mod:`nmtvariants.reporting.manifest`) holds; it is free of Snakemake, so that what a table is built
from can be tested without a dry run.

This base holds what every study needs alike, so that the studies cannot drift apart in it: the
study's experiments (``study: <name>``) and settings (``studies.<name>``), their seeds and replicas
(:mod:`nmtvariants.config`), each replica's run, checkpoint, BPE and score files (through
:mod:`nmtvariants.layout`, with the run ids of :func:`nmtvariants.config.training_runs` that the rules
hold as ``RUN_OF``; a planner never computes a run id itself), the reference variant its
significance tests compare with, and what the rules file registers for ``rule all``
(``register_plan`` in ``rules/common.smk``): its tables, figures and significance tests. A subclass
adds only its study's own systems, tables and analyses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

from nmtvariants.config import Replica, experiment_replicas, experiment_seeds, parse_replica
from nmtvariants.layout import averaged_model, bpe_file, scores_file, significance_file
from nmtvariants.reporting.manifest import Entry

RunIndex = Mapping[tuple[str, str, str], str]  # (experiment, pair, replica) -> run id: RUN_OF
Info = Callable[[str, str, str], Mapping[str, Any]]  # (experiment, pair, variant) -> an entry's info


class StudyPlan:
    """A study's experiments, replicas and result files in one resolved config. Subclasses set
    :attr:`study` (and :attr:`defaults`, the defaults of ``studies.<study>``)."""

    study: ClassVar[str]
    defaults: ClassVar[Mapping[str, Any]] = {}

    def __init__(self, config: Mapping[str, Any], run_of: RunIndex) -> None:
        self.config = config
        self.run_of = run_of
        self.corpora: Mapping[str, Any] = config.get("corpora") or {}
        self.experiments: dict[str, Any] = {
            name: spec
            for name, spec in (config.get("experiments") or {}).items()
            if spec.get("study") == self.study
        }
        own = (config.get("studies") or {}).get(self.study) or {}
        self.settings: dict[str, Any] = {**self.defaults, **own}

    # --- experiments ---------------------------------------------------------------------------------
    def corpus(self, experiment: str) -> str:
        return self.experiments[experiment]["corpus"]

    def testsets(self, experiment: str) -> list[str]:
        return self.experiments[experiment]["evaluate"]["testsets"]

    def is_toyworld(self, corpus: str) -> bool:
        """Whether a corpus is the generated one (gold parses, alignments, POS and images of its own)."""
        return self.corpora[corpus]["source"] == "toyworld"

    def variant_of(self, experiment: str, name: str) -> str:
        """The variant of a result folder's name: the name itself, or for a further seed's replica
        (``<variant>-seed<N>``) the variant it replicates (a rule's ``{variant}`` serves every replica)."""
        return parse_replica(name, self.seeds(experiment))[0]

    def variant_inputs(self, experiment: str, name: str) -> dict[str, Any]:
        """The extra inputs (``inputs.<variant>``) of a variant, or of the variant a replica's folder
        name stands for: every replica reads what its variant reads."""
        variant = self.variant_of(experiment, name)
        return dict((self.experiments[experiment].get("inputs") or {}).get(variant) or {})

    def reference_variant(self, experiment: str) -> str:
        """The variant the study's significance tests compare the others with: the experiment's first
        (its baseline in every config) unless the study says otherwise."""
        return next(iter(self.experiments[experiment]["variants"]))

    # --- seeds and replicas --------------------------------------------------------------------------
    def seeds(self, experiment: str) -> list[int]:
        """The experiment's training seeds (its ``seeds``, or the config's ``seed``), the first first."""
        return experiment_seeds(self.config, experiment)

    def replicas(self, experiment: str, pair: str, variant: str) -> list[Replica]:
        """The replicas of one system, one per seed (the first's folder is the variant's own name)."""
        return [
            replica
            for replica in experiment_replicas(self.config, experiment)
            if replica.pair == pair and replica.variant == variant
        ]

    # --- runs and their files ------------------------------------------------------------------------
    def run_id(self, experiment: str, pair: str, replica: str) -> str:
        """The shared run a replica trains on (runs are content-addressed: experiments share them)."""
        return self.run_of[(experiment, pair, replica)]

    def checkpoint(self, experiment: str, pair: str, replica: str) -> str:
        """The model every decoding and analysis of a replica reads: its run's averaged checkpoints."""
        average = self.experiments[experiment]["average_last"]
        return averaged_model(self.run_id(experiment, pair, replica), average)

    def bpe(self, experiment: str, pair: str, name: str, variant: str | None = None) -> str:
        """A BPE file (``<split>.<lang>``, ``vocab.txt``) of the experiment's corpus and pair; with
        ``variant``, of the derived corpus the variant trains on, if any."""
        inputs = self.variant_inputs(experiment, variant) if variant else None
        return bpe_file(self.corpus(experiment), pair, name, inputs)

    def reference_text(self, experiment: str, pair: str, testset: str) -> str:
        """The raw target side of a test set: what hypotheses are scored against."""
        return f"data/{self.corpus(experiment)}/raw/{testset}.{pair.split('-')[1]}"

    # --- manifest entries ----------------------------------------------------------------------------
    def score_entry(
        self,
        experiment: str,
        pair: str,
        variant: str,
        replica: Replica,
        testset: str,
        info: Mapping[str, Any],
    ) -> Entry:
        """One replica's score file on one test set (rule ``evaluate``)."""
        scores = scores_file(experiment, pair, replica.name, testset)
        return Entry({"scores": scores}, experiment, pair, variant, replica.seed, testset, info=info)

    def score_entries(self, systems: Iterable[tuple[str, str, str]], info: Info | None = None) -> list[Entry]:
        """The manifest of a BLEU table: system by system, seed by seed, test set by test set, the
        replica's score file; ``info`` gives each system's facts that the table shows."""
        return [
            self.score_entry(name, pair, variant, replica, testset, info(name, pair, variant) if info else {})
            for name, pair, variant in systems
            for replica in self.replicas(name, pair, variant)
            for testset in self.testsets(name)
        ]

    def significance_entry(
        self, experiment: str, pair: str, variant: str, testset: str, info: Mapping[str, Any] | None = None
    ) -> Entry:
        """A variant's test against the reference over every seed of both (rule ``significance``;
        no ``seed``): registered through :meth:`significance_tests`."""
        path = significance_file(experiment, pair, variant, testset)
        return Entry({"significance": path}, experiment, pair, variant, testset=testset, info=info or {})

    # --- what the rules file registers for `rule all` ------------------------------------------------
    def table_path(self, name: str) -> str:
        return f"results/tables/{self.study}/{name}.md"

    def figure_path(self, name: str) -> str:
        return f"results/figures/{self.study}/{name}.png"

    def tables(self) -> list[str]:
        """The study's tables for this config (those with rows), in the order ``rule all`` lists them."""
        return []

    def figures(self) -> dict[str, dict[str, Any]]:
        """The study's figures: PNG -> how rule ``figure`` draws it (``kind`` and the column options of
        ``register_figure`` in rules/common.smk, in the order the command takes them)."""
        return {}

    def significance_tests(self) -> dict[str, tuple[str, list[str]]]:
        """Experiment -> (reference variant, metrics) of the tests rule ``significance`` runs for it."""
        return {}

    @staticmethod
    def regex(names: Iterable[str]) -> str:
        """A wildcard constraint matching exactly ``names`` (nothing when there are none)."""
        return "|".join(re.escape(name) for name in names) or "(?!)"
