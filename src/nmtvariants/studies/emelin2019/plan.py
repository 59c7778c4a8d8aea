"""The plan of the Emelin et al. (2019) study: which systems each table and analysis reads, and the
inputs and settings of the study's rules (rules/studies/emelin2019.smk).

Built once per workflow from the resolved config and the index of training runs,
``Emelin2019Plan(config, run_of)``: a :class:`nmtvariants.studies.plan_base.StudyPlan`, as every
study's planner, which holds the experiments, replicas, run files and manifest entries the studies
share; this module adds the study's tables, analyses and probe protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nmtvariants.config import experiment_systems
from nmtvariants.layout import train_log
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.plan_base import RunIndex, StudyPlan

STUDY = "emelin2019"
TABLES = f"results/tables/{STUDY}"
FIGURES = f"results/figures/{STUDY}"
CONTRAWSD_DEEN = "data/contrawsd_deen/raw/contrawsd.json"
# The lexical probes train on the states of the first `train_sentences` of the NMT training corpus, stop
# early on the dev set's and report on the test set's (the authors' protocol, seed brief §1.7), the
# dev and test sets cut to their first `max_sentences`. At toy scale a few hundred sentences each and
# at most 30 epochs (the demo budget); small models on a small real corpus (Multi30k: 1,000 test
# sentences, a vocabulary of ~10k, 24 probes on one core) 1,000 each within 30 epochs; at full scale
# 10,000 training sentences (~300k tokens a side, of the order of the authors' 100 NMT batches; their
# states are stored, not streamed: ~10 GB in float32) and 5,000 dev/test sentences, the authors' 100
# epochs. Every probe stops earlier when its dev accuracy stalls (patience 5).
# `studies.emelin2019.probe_train_sentences` replaces the training sample's size at every scale.
# The learning rate is the authors' 2e-4 but at toy scale, 2e-3: a toy probe's ~3,500 training states
# are 7 updates an epoch, and at 2e-4 no probe had levelled off after 30 epochs (the top decoder layer
# at 0.41 test accuracy against 0.77 at 2e-3; benchmarks/results/probe_convergence.md).
AUTHORS_PROBE_LR = 2e-4
TOY_PROBE_LR = 2e-3
CAPS = {
    "toy": {"train_sentences": 300, "max_sentences": 300, "max_epochs": 30, "lr": TOY_PROBE_LR},
    "small": {"train_sentences": 1000, "max_sentences": 1000, "max_epochs": 30, "lr": AUTHORS_PROBE_LR},
    "full": {"train_sentences": 10000, "max_sentences": 5000, "max_epochs": 100, "lr": AUTHORS_PROBE_LR},
}
PROBE_PARTS = ("train", "valid", "test")
# The BLEU tables show tokenised BLEU beside sacreBLEU, so they take the experiments evaluated with both:
# name -> (title, pairs, pairs left out, presets, presets left out).
BLEU_METRICS = ("bleu", "tok-bleu")
BLEU_TABLES: dict[str, tuple[str, list[str] | None, list[str], list[str] | None, list[str]]] = {
    "table1_bleu": ("Table 1: EN-DE, tokenised BLEU and sacreBLEU", ["en-de"], [], None, ["small"]),
    "table2_pairs": ("Table 2: the other language pairs", None, ["en-de"], None, ["small"]),
    "table3_small": ("Table 3: small EN-DE models", ["en-de"], [], ["small"], []),
}
# The real-data comparison (bootstrap.md): sacreBLEU and chrF with a paired bootstrap of every variant
# against the baseline.
BOOTSTRAP_METRICS = ("bleu", "chrf")
NO_POS_NOTE = (
    "No POS breakdown: this corpus has no POS annotation (toyworld's gold parse and target tags only)."
)

System = tuple[str, str, str]  # (experiment, pair, variant)


class Emelin2019Plan(StudyPlan):
    """The study's experiments, the systems of its tables and analyses, and its rules' inputs."""

    study = STUDY

    def __init__(self, config: Mapping[str, Any], run_of: RunIndex) -> None:
        super().__init__(config, run_of)
        # the BLEU tables that have rows
        self.bleu_tables = {
            name: (title, *selection)
            for name, (title, *selection) in BLEU_TABLES.items()
            if self.systems(*selection, metrics=BLEU_METRICS)
        }
        # The paper probes its BASE models: the first EN-DE experiment that is neither big nor small, else
        # (a small model on a small real corpus, experiments/multi30k_emelin2019.yaml) the first EN-DE one.
        ende = [name for name, spec in self.experiments.items() if "en-de" in spec["pairs"]]
        self.analysed: str | None = next(
            (name for name in ende if self.experiments[name]["model"]["preset"] not in ("big", "small")),
            ende[0] if ende else None,
        )
        self.contrawsd: tuple[str, str] | None = next(
            (
                (name, pair)
                for name, spec in self.experiments.items()
                for pair in spec["pairs"]
                if self.contrawsd_set(spec["corpus"], pair)
            ),
            None,
        )
        # POS labels exist for toyworld only (its gold source parse and target tags); a real corpus gets
        # the frequency breakdown, and its table says that POS is not available.
        self.pos = self.analysed is not None and self.is_toy(self.analysed)
        # Table 4 shows tokenised BLEU too
        self.variants_table = self.analysed is not None and self.scored(self.analysed, *BLEU_METRICS)
        self.bootstrap = (
            self.analysed is not None
            and self.scored(self.analysed, *BOOTSTRAP_METRICS)
            and "baseline" in self.experiments[self.analysed]["variants"]
            and len(self.experiments[self.analysed]["variants"]) > 1
        )

    # --- what the study builds ---------------------------------------------------------------------
    def tables(self) -> list[str]:
        """Tables 1-3 that have rows, Table 5 (any EN-DE run), Table 4 and the bootstrap (the analysed
        experiment scored with their metrics), the probes (POS on toyworld), gates (a shortcut variant
        analysed) and ContraWSD (a model with a ContraWSD set)."""
        names = list(self.bleu_tables)
        if self.systems(["en-de"]):
            names.append("table5_params_speed")
        if self.variants_table:
            names.append("table4_variants")
        if self.bootstrap:
            names.append("bootstrap")
        if self.analysed:
            names += ["probes_frequency", "probes_pos"] if self.pos else ["probes_frequency"]
            if self.analysis("gates", shortcuts_only=True):
                names.append("gates")
        if self.contrawsd:
            names.append("contrawsd")
        return [self.table_path(name) for name in names]

    def figures(self) -> dict[str, dict[str, Any]]:
        """Figures 3-4 and 6-7: probe accuracy and similarity to the embeddings by layer, per side."""
        if not self.analysed:
            return {}
        figures = {}
        for side in ("encoder", "decoder"):
            figures[self.figure_path(f"probes_{side}")] = {
                "kind": "layers",
                "y": "accuracy",
                "title": f"Lexical probe accuracy by {side} layer",
                "ylabel": "held-out accuracy",
            }
            figures[self.figure_path(f"similarity_{side}")] = {
                "kind": "layers",
                "y": "cosine",
                "title": f"Cosine similarity of the {side} states with the embeddings",
                "ylabel": "cosine similarity",
            }
        return figures

    def significance_tests(self) -> dict[str, tuple[str, list[str]]]:
        """The bootstrap: every variant of the analysed experiment against the baseline, all seeds."""
        if not self.bootstrap:
            return {}
        analysed = str(self.analysed)
        return {analysed: (self.reference_variant(analysed), list(BOOTSTRAP_METRICS))}

    # --- experiments and systems -------------------------------------------------------------------
    def is_toy(self, experiment: str) -> bool:
        return self.is_toyworld(self.corpus(experiment))

    def reference_variant(self, experiment: str) -> str:
        """The bootstrap compares every variant with the paper's baseline, whatever its place."""
        return "baseline"

    def caps(self, experiment: str) -> dict[str, int | float]:
        if self.is_toy(experiment):
            return CAPS["toy"]
        small = self.experiments[experiment]["model"]["preset"] in ("tiny", "small")
        return CAPS["small" if small else "full"]

    def scored(self, experiment: str, *metrics: str) -> bool:
        """Whether the experiment's evaluation computes every one of ``metrics``."""
        return set(metrics) <= set(self.experiments[experiment]["evaluate"]["metrics"])

    def systems(
        self,
        pairs: Sequence[str] | None = None,
        exclude_pairs: Sequence[str] = (),
        presets: Sequence[str] | None = None,
        exclude_presets: Sequence[str] = (),
        metrics: Sequence[str] = (),
    ) -> list[System]:
        """(experiment, pair, variant) of the study's experiments, in config order, filtered (``metrics``:
        only experiments evaluated with all of them)."""
        return [
            (name, pair, variant)
            for name, spec in self.experiments.items()
            if (presets is None or spec["model"]["preset"] in presets)
            and spec["model"]["preset"] not in exclude_presets
            and self.scored(name, *metrics)
            for pair, variant in experiment_systems(spec)
            if (pairs is None or pair in pairs) and pair not in exclude_pairs
        ]

    def has_shortcuts(self, experiment: str, variant: str) -> bool:
        return "shortcuts" in (self.experiments[experiment]["variants"][variant] or {})

    def main_setting(self, experiment: str, variant: str) -> bool:
        """Whether the paper analyses this kind of model: the baseline, or shortcuts in its main setting
        (self-attention on both sides, from the embeddings, none into decoder-to-encoder attention). The
        probes, similarity, gates, ContraWSD and Table 5 cover these; Table 4's ablations (dec-to-enc,
        non-lexical) and Figure 5's (encoder-/decoder-only) are compared by BLEU and the bootstrap.
        """
        from nmtvariants.plugins.shortcuts import ShortcutOptions

        switches = self.experiments[experiment]["variants"][variant] or {}
        return "shortcuts" not in switches or ShortcutOptions.parse(switches["shortcuts"]).main_setting

    def analysed_variants(self, experiment: str, pair: str = "en-de") -> list[str]:
        """The variants of an experiment's pair that the analyses cover (:meth:`main_setting`)."""
        return [
            variant
            for name, _, variant in self.systems([pair])
            if name == experiment and self.main_setting(experiment, variant)
        ]

    def label(self, experiment: str, variant: str) -> str:
        """Rows of the study-wide tables name the experiment when the study has several."""
        return variant if len(self.experiments) == 1 else f"{experiment}/{variant}"

    # --- the BLEU tables ---------------------------------------------------------------------------
    def bleu_systems(self, table: str) -> list[System]:
        """Tables 1-3: the main-setting models (Table 4 holds the ablations)."""
        _, pairs, exclude, presets, excluded = self.bleu_tables[table]
        return [
            system
            for system in self.systems(pairs, exclude, presets, excluded, BLEU_METRICS)
            if self.main_setting(system[0], system[2])
        ]

    def mean_args(self, table: str) -> list[str]:
        """``--mean-testsets`` of a BLEU table: Table 3's "test mean" is "the average of test-sets in
        table (1)" (its caption), so it averages Table 1's test sets; Tables 1 and 2 average their own.
        """
        if table != "table3_small" or "table1_bleu" not in self.bleu_tables:
            return []
        _, *selection = self.bleu_tables["table1_bleu"]
        testsets = dict.fromkeys(
            testset
            for name, _, _ in self.systems(*selection, metrics=BLEU_METRICS)
            for testset in self.testsets(name)
        )
        return ["--mean-testsets", *testsets]

    def variant_systems(self) -> list[System]:
        """Table 4: every variant of the analysed (BASE-like) experiment's EN-DE runs."""
        return [system for system in self.systems(["en-de"]) if system[0] == self.analysed]

    # --- the manifests of the BLEU tables and the bootstrap ------------------------------------------
    def switches(self, name: str, pair: str, variant: str) -> dict[str, Any]:
        """A system's switches as a manifest entry's info (Table 4's shortcut column, the deviations)."""
        return {"switches": self.experiments[name]["variants"][variant]}

    def bleu_manifest(self, table: str) -> list[Entry]:
        return self.score_entries(self.bleu_systems(table), self.switches)

    def variants_manifest(self) -> list[Entry]:
        """Table 4: every replica's scores, with the variant's switches."""
        return self.score_entries(self.variant_systems(), self.switches)

    def bootstrap_manifest(self) -> list[Entry]:
        """The significance test of every non-baseline variant of the analysed experiment on every test
        set (over all seeds of both: no ``seed``)."""
        return [
            self.significance_entry(name, pair, variant, testset)
            for name, pair, variant in self.variant_systems()
            if variant != self.reference_variant(name)
            for testset in self.testsets(name)
        ]

    # --- the analyses (first seed) -----------------------------------------------------------------
    def first_seed_sentences(self, experiment: str) -> list[str]:
        """Table 5 (parameters and training speed) reads the first seed's runs only; the table
        of an experiment with several seeds says so in this sentence (none with one seed).
        """
        seeds = self.seeds(experiment)
        if len(seeds) == 1:
            return []
        return [
            f"Seed {seeds[0]} only (the first of the experiment's seeds {', '.join(map(str, seeds))}):"
            " every seed's model has the same parameters; the other tables average over every seed."
        ]

    def first_seed_note(self, experiment: str) -> list[str]:
        """``--note`` of an analysis table: :meth:`first_seed_sentences`, if any."""
        sentences = self.first_seed_sentences(experiment)
        return ["--note", " ".join(sentences)] if sentences else []

    def analysis(self, role: str, shortcuts_only: bool = False) -> list[Entry]:
        """The manifest of an analysis: the ``role`` file (``probes``, ``similarity``, ``gates``) of every
        replica (training seed) of each analysed variant's EN-DE run (main setting), each with its seed,
        so the tables and the figures give the mean ± sd over seeds."""
        name = str(self.analysed)
        entries = []
        for variant in self.analysed_variants(name):
            if shortcuts_only and not self.has_shortcuts(name, variant):
                continue
            for replica in self.replicas(name, "en-de", variant):
                folder = f"results/{name}/en-de/{replica.name}/analysis"
                entries.append(Entry({role: f"{folder}/{role}.csv"}, name, "en-de", variant, replica.seed))
        return entries

    def curves_manifest(self, kind: str) -> list[Entry]:
        """A per-layer figure's CSVs: every replica's probes or similarity."""
        return self.analysis(kind)

    def params_manifest(self) -> list[Entry]:
        """Table 5: the parameter count and training log of every EN-DE run of the main setting (the
        paper's: baseline, lexical shortcuts, feature-fusion), first seed."""
        return [
            Entry(
                {
                    "count": f"results/{name}/{pair}/{variant}/analysis/params.txt",
                    "train_log": train_log(self.run_id(name, pair, variant)),
                },
                name,
                pair,
                variant,
            )
            for name, pair, variant in self.systems(["en-de"])
            if self.main_setting(name, variant)
        ]

    # --- ContraWSD ---------------------------------------------------------------------------------
    def contrawsd_set(self, corpus: str, pair: str) -> str | None:
        """The ContraWSD JSON that tests a model of this corpus and pair, or None."""
        if self.is_toyworld(corpus):
            return "data/toyworld/contrawsd/en-de.json" if pair == "en-de" else None
        return CONTRAWSD_DEEN if pair == "de-en" else None

    def contrawsd_manifest(self) -> list[Entry]:
        """Every replica (training seed) of each analysed variant's ContraWSD report, labelled with the
        variant: the table gives the mean ± sd over the seeds."""
        assert self.contrawsd is not None, "no experiment of the study has a ContraWSD set"
        name, pair = self.contrawsd
        return [
            Entry(
                {"contrawsd": f"results/{name}/{pair}/{replica.name}/analysis/contrawsd.json"},
                name,
                pair,
                variant,
                replica.seed,
                label=self.label(name, variant),
            )
            for variant in self.analysed_variants(name, pair)
            for replica in self.replicas(name, pair, variant)
        ]

    # --- the lexical probes ------------------------------------------------------------------------
    def probe_testset(self, experiment: str) -> str:
        return self.testsets(experiment)[0]

    def probe_train_sentences(self, experiment: str) -> int:
        return self.settings.get("probe_train_sentences", self.caps(experiment)["train_sentences"])

    def states_split(self, experiment: str, part: str) -> str:
        """The corpus split whose states make probe part ``part`` (train, valid or test)."""
        if part == "test":
            return self.probe_testset(experiment)
        return self.corpora[self.corpus(experiment)][part]

    def states_sentences(self, experiment: str, part: str) -> int:
        """How many sentences from the start of the part's split are extracted."""
        if part == "train":
            return self.probe_train_sentences(experiment)
        return self.caps(experiment)["max_sentences"]

    def states_mem_mb(self, experiment: str, part: str) -> int:
        # every layer of both stacks is held twice while the file is assembled: ~2 MB a sentence at BASE
        return max(8000, 3 * self.states_sentences(experiment, part))

    def probe_note(self) -> str:
        """The probes' protocol as the tables state it, and where it differs from the authors'."""
        analysed = str(self.analysed)
        corpus = self.corpora[self.corpus(analysed)]
        caps = self.caps(analysed)
        return (
            f"Each probe trains on the states of the first {self.probe_train_sentences(analysed)}"
            f" sentences of the NMT training corpus ({corpus['train']}), stops early on the dev set"
            f" ({corpus['valid']}, first {caps['max_sentences']} sentences) and is scored on the test set"
            f" ({self.probe_testset(analysed)}, first {caps['max_sentences']} sentences), as the"
            " authors' probes. Deviation: the authors stream 100 batches of the training corpus through the"
            " model; here a capped sample from its start is extracted and stored."
            + (
                f" Deviation (toy scale): Adam at {caps['lr']:g}, not the authors' {AUTHORS_PROBE_LR:g}: the"
                " sample is a few thousand states, 7 updates an epoch, and at their rate no probe levels off"
                " within the toy cap of 30 epochs (benchmarks/results/probe_convergence.md)."
                if caps["lr"] != AUTHORS_PROBE_LR
                else ""
            )
        )

    def probe_inputs(self, wildcards: Any) -> dict[str, str]:
        """The three states files of the probe protocol (training corpus, dev, test), the vocabulary, the
        whole BPE'd training text (the frequency bins) and, on toyworld, the test set's POS.
        """
        experiment, pair = wildcards.experiment, wildcards.pair
        analysis = f"results/{experiment}/{pair}/{wildcards.variant}/analysis"
        inputs = {f"{part}_states": f"{analysis}/states-{part}.npz" for part in PROBE_PARTS}
        inputs["vocab"] = self.bpe(experiment, pair, "vocab.txt")
        src, tgt = pair.split("-")
        corpus = self.corpus(experiment)
        train = self.corpora[corpus]["train"]
        inputs["source_train"] = self.bpe(experiment, pair, f"{train}.{src}")
        inputs["target_train"] = self.bpe(experiment, pair, f"{train}.{tgt}")
        if self.is_toy(experiment):
            testset = self.probe_testset(experiment)
            inputs["pos"] = f"data/{corpus}/{pair}/pos/{testset}.{src}"
            inputs["target_pos"] = f"data/{corpus}/{pair}/pos/{testset}.{tgt}"
        return inputs

    @staticmethod
    def pos_annotation(wildcards: Any) -> str:
        """The word-level POS a grouping file is projected from: the source's CoNLL-U parse, or the
        target's tags (toyworld's raw/{split}.{de,ru,fr}.pos)."""
        raw = f"data/{wildcards.corpus}/raw/{wildcards.split}.{wildcards.lang}"
        return f"{raw}.conllu" if wildcards.lang == wildcards.pair.split("-")[0] else f"{raw}.pos"
