"""Where ``rules/studies/yang2020.smk`` finds and puts things: the study's systems, their shared runs'
checkpoints and logs, their BPE'd data, and the manifests its table and figure commands read
(:mod:`nmtvariants.reporting.manifest`).

One object per resolved config (:class:`Yang2020Plan`, a :class:`nmtvariants.studies.plan_base.StudyPlan`
as every study's planner), so that the rule file holds rules only and every path is decided here,
with the run ids of ``rules/common.smk`` (RUN_OF, from :func:`nmtvariants.config.training_runs`).

An experiment with several ``seeds`` has one replica per seed (nmtvariants.config.replica_name): the
BLEU tables read every replica and report mean ± sd over seeds; the per-layer analyses (probes, AER)
and the decoding-speed job stay on each system's first seed (the variant's own folder and run), and
their notes and figure titles say so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from nmtvariants.errors import ConfigError
from nmtvariants.layout import train_log
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.plan_base import RunIndex, StudyPlan
from nmtvariants.studies.yang2020.tables import (
    SIMPLIFIED,
    STANDARD,
    STUDY,
    System,
    depth_systems,
    layout_systems,
    simplified_pairs,
    study_systems,
    system_info,
)

# Gold word alignments per corpus (the first test set is scored): toyworld's Pharaoh files.
GOLD = {"toyworld": "data/toyworld/raw/{testset}.{pair}.align"}
# A corpus without its own gold but an EN-FR pair is scored on the Hansards gold set (HLT-NAACL 2003,
# 447 sentences of Canadian parliamentary debates; catalogue `hansards_enfr_align`): the gold's own
# tokens (`test.orig.*`: the Cross-Align copy, original punctuation) run through the pair's chain
# (rule yang2020_gold_chain), links from `test.talp` (1-based, English first; reversed for FR-EN).
HANSARDS = "hansards_enfr_align"
HANSARDS_RAW = f"data/{HANSARDS}/raw"
HANSARDS_PAIRS = {"en-fr": False, "fr-en": True}  # pair -> the gold lists the target side first
# Probe size and caps per model preset: tiny keeps the demo's probes to seconds each; at full scale
# the paper's probe (§3.1: one decoder layer of the model's width, trained on MT training data).
PROBES = {
    "tiny": dict(max_sentences=300, max_epochs=3, d_model=64, heads=4, d_ff=256, batch_sentences=32),
    # Multi30k's small models (d 128-256, 3 layers, one CPU thread): ~30 probes per model; measured
    # ~9 s CPU per probe and epoch over 3,000 pairs (3k-entry vocabulary), so ~10-20 min per model
    "small": dict(max_sentences=2000, max_epochs=3, d_model=128, heads=4, d_ff=512, batch_sentences=64),
    "default": dict(max_sentences=20000, max_epochs=20, d_model=512, heads=8, d_ff=2048, batch_sentences=64),
}
SPEED_SENTENCES = {"tiny": 100, "small": 500, "default": 1000}  # test sentences timed per decoder
PROBE_FIGURES = {
    "fig3": "Fig. 3: standard decoder's modules",
    "fig8": "Fig. 8: IFM's operations",
    "fig10": "Fig. 10: simplified vs standard decoder",
}
TABLE_KINDS = {
    "table1_layouts": "layouts",
    "table2_depth": "depth",
    "table4_simplified": "simplified",
    "layer_aer": "aer",
}


class Yang2020Plan(StudyPlan):
    """The study's systems in a resolved config and the paths of what the rules read and write."""

    study = STUDY

    def __init__(self, config: Mapping[str, Any], run_of: RunIndex) -> None:
        super().__init__(config, run_of)
        self.systems = study_systems(dict(config))
        # Figures 3, 8, 10 are the base-size (or toy) models' as in the paper; big models are not probed
        self.probed = [
            s
            for s in self.systems
            if s.default_depth and s.layout in (STANDARD, SIMPLIFIED) and s.size != "big"
        ]
        self.aligned = [s for s in self.systems if self.gold_set(s) is not None]
        entries = {
            "table1_layouts": self.system_scores(layout_systems(self.systems)),
            "table2_depth": self.system_scores(depth_systems(self.systems)),
            "table4_simplified": self.simplified_entries(),
            "layer_aer": self.aer_entries(),
        }
        self.table_entries = {name: value for name, value in entries.items() if value}

    # --- what the study builds -------------------------------------------------------------------

    def tables(self) -> list[str]:
        """Tables 1, 2 and 4 and the AER table, where they have rows."""
        return [self.table_path(name) for name in self.table_entries]

    def figures(self) -> dict[str, dict[str, Any]]:
        """Figures 3, 8 and 10 (probes of a standard decoder) and 4-7 (AER of an aligned system), by
        layer, each line the mean over the system's seeds with a ± sd band."""
        figures = {}
        if any(s.layout == STANDARD for s in self.probed):
            for figure, title in PROBE_FIGURES.items():
                for side in ("source", "target"):
                    figures[self.figure_path(f"{figure}_{side}")] = {
                        "kind": "layers",
                        "y": "perplexity",
                        "group": "series",
                        "title": f"{title} ({side})",
                        "ylabel": f"{side} perplexity",
                    }
        if self.aligned:
            for metric, label in (("aer", "AER"), ("coverage", "cumulative coverage")):
                figures[self.figure_path(f"figs4_7_{metric}")] = {
                    "kind": "layers",
                    "y": metric,
                    "group": "series",
                    "title": f"Figs. 4-7: {label} of the SEM alignment",
                    "ylabel": label,
                }
        return figures

    # --- systems and their files -----------------------------------------------------------------

    def system(self, experiment: str, pair: str, variant: str) -> System:
        for system in self.systems:
            if (system.experiment, system.pair, system.variant) == (experiment, pair, variant):
                return system
        raise ConfigError(f"{experiment}/{pair}/{variant}: not a system of a yang2020 experiment")

    def model(self, system: System) -> str:
        """The first seed's model (the variant's own run): what the decoding-speed timing reads."""
        return self.checkpoint(system.experiment, system.pair, system.variant)

    def text(self, system: System, split: str, side: str) -> str:
        """A split's BPE'd source (``src``) or target side, of the corpus the variant trains on (a
        derived corpus moves its BPE folder)."""
        lang = system.pair.split("-")[0 if side == "src" else 1]
        return self.bpe(system.experiment, system.pair, f"{split}.{lang}", system.variant)

    def vocab(self, system: System) -> str:
        return self.bpe(system.experiment, system.pair, "vocab.txt", system.variant)

    def train_split(self, system: System) -> str:
        return self.corpora[self.corpus(system.experiment)]["train"]

    def evaluate(self, system: System, key: str) -> Any:
        return self.experiments[system.experiment]["evaluate"][key]

    def device(self, system: System) -> str:
        return "cuda" if self.experiments[system.experiment]["resources"]["gpus"] > 0 else "cpu"

    def gpus(self, system: System) -> int:
        """One GPU for an analysis job of a model trained on GPUs (never torchrun: one process)."""
        return 1 if self.experiments[system.experiment]["resources"]["gpus"] > 0 else 0

    def folder(self, system: System) -> str:
        return f"results/yang2020/{system.experiment}/{system.pair}/{system.variant}"

    def probe_options(self, system: System) -> list[str]:
        caps = PROBES.get(system.size, PROBES["default"])
        return [f"--{key.replace('_', '-')}={value}" for key, value in caps.items()]

    def speed_sentences(self, system: System) -> int:
        return SPEED_SENTENCES.get(system.size, SPEED_SENTENCES["default"])

    def gold_set(self, system: System) -> str | None:
        """Where a system's AER comes from: its corpus's own gold (the first test set), the Hansards
        gold for an EN-FR pair, or None (no AER)."""
        if self.corpus(system.experiment) in GOLD:
            return "own"
        return "hansards" if system.pair in HANSARDS_PAIRS else None

    def replica_system(self, experiment: str, pair: str, name: str) -> System:
        """The system a result folder's name stands for: a variant, or one of its replicas
        (``<variant>-seed<N>``), which every per-seed analysis rule serves through its ``{variant}``."""
        return self.system(experiment, pair, self.variant_of(experiment, name))

    def aer_inputs(self, experiment: str, pair: str, name: str) -> dict[str, str]:
        """The model of one replica (``name``: a variant or ``<variant>-seed<N>``), the gold-aligned
        BPE'd pairs and their gold links; for Hansards also the gold's own tokens, against which every
        BPE'd line's word count is checked."""
        system = self.replica_system(experiment, pair, name)
        inputs = {"checkpoint": self.checkpoint(experiment, pair, name), "vocab": self.vocab(system)}
        if self.gold_set(system) == "own":
            test = self.testsets(system.experiment)[0]
            return {
                **inputs,
                "src": self.text(system, test, "src"),
                "tgt": self.text(system, test, "tgt"),
                "gold": GOLD[self.corpus(system.experiment)].format(testset=test, pair=pair),
            }
        src, tgt = pair.split("-")
        return {
            **inputs,
            "src": self.gold_chained(system, src),
            "tgt": self.gold_chained(system, tgt),
            "gold": f"{HANSARDS_RAW}/test.talp",
            "src_words": f"{HANSARDS_RAW}/test.orig.{src}",
            "tgt_words": f"{HANSARDS_RAW}/test.orig.{tgt}",
        }

    def aer_options(self, experiment: str, pair: str, name: str) -> list[str]:
        """yang2020-layer-aer's gold format flags: Pharaoh for a corpus's own gold, talp (reversed for
        FR-EN) with the word-count check for Hansards."""
        system = self.replica_system(experiment, pair, name)
        if self.gold_set(system) == "own":
            return []
        inputs = self.aer_inputs(experiment, pair, name)
        reverse = ["--reverse-gold"] if HANSARDS_PAIRS[pair] else []
        return [
            "--format",
            "talp",
            *reverse,
            "--src-words",
            inputs["src_words"],
            "--tgt-words",
            inputs["tgt_words"],
        ]

    def gold_chained(self, system: System, lang: str) -> str:
        """The Hansards text of ``lang`` through the chain of the system's corpus and pair."""
        return f"data/{self.corpus(system.experiment)}/{system.pair}/gold_{HANSARDS}/test.{lang}"

    def preprocess(self, corpus: str) -> dict[str, Any]:
        """The corpus's preprocessing settings (what TrainedChain replays)."""
        return dict(self.corpora[corpus].get("preprocess") or {})

    def probe_inputs(self, experiment: str, pair: str, name: str) -> dict[str, str]:
        """The model of one replica (``name``: a variant or ``<variant>-seed<N>``), and the training
        pairs the probes learn from and the test pairs they report on."""
        system = self.replica_system(experiment, pair, name)
        split, test = self.train_split(system), self.testsets(system.experiment)[0]
        return {
            "checkpoint": self.checkpoint(experiment, pair, name),
            "vocab": self.vocab(system),
            "source": self.text(system, split, "src"),
            "target": self.text(system, split, "tgt"),
            "test_source": self.text(system, test, "src"),
            "test_target": self.text(system, test, "tgt"),
        }

    def speed_inputs(self, experiment: str, pair: str) -> dict[str, str]:
        """Both decoders' checkpoints and the test source they are timed on."""
        standard, simplified = self.speed_pair(experiment, pair)
        return {
            "standard": self.model(standard),
            "simplified": self.model(simplified),
            "vocab": self.vocab(standard),
            "source": self.text(standard, self.testsets(standard.experiment)[0], "src"),
        }

    def speed_pair(self, experiment: str, pair: str) -> tuple[System, System]:
        for standard, simplified in simplified_pairs(self.systems):
            if (standard.experiment, standard.pair) == (experiment, pair):
                return standard, simplified
        raise ConfigError(f"{experiment}/{pair}: no simplified decoder to time against the standard one")

    # --- what the table and figure commands read ---------------------------------------------------

    def system_scores(self, systems: list[System]) -> list[Entry]:
        """One entry per system, training seed and test set: the replica's score file, with the
        system's layout, size and depth."""
        return self.score_entries(
            ((s.experiment, s.pair, s.variant) for s in systems),
            lambda experiment, pair, variant: system_info(self.system(experiment, pair, variant)),
        )

    def simplified_entries(self) -> list[Entry]:
        """Table 4's entries: each replica's scores, checkpoint and training log, and the decoding
        speed of the first seed's two models (one job per experiment and pair)."""
        entries = []
        for standard, simplified in simplified_pairs(self.systems):
            speed = f"results/yang2020/{standard.experiment}/{standard.pair}/decode_speed.json"
            for system in (standard, simplified):
                replicas = {
                    r.seed: r.name for r in self.replicas(system.experiment, system.pair, system.variant)
                }
                for entry in self.system_scores([system]):
                    run = self.run_id(system.experiment, system.pair, replicas[entry.seed])
                    files = {
                        **entry.files,
                        "checkpoint": self.checkpoint(system.experiment, system.pair, replicas[entry.seed]),
                        "train_log": train_log(run),
                        "decode_speed": speed,
                    }
                    entries.append(replace(entry, files=files))
        return entries

    def aer_entries(self) -> list[Entry]:
        """The AER-per-layer table and Figures 4-7: every replica (training seed) of every aligned
        system, its layer_aer.csv, gold set and corpus; the table and the figures give the mean ± sd
        over the seeds."""
        return self.replica_entries(
            self.aligned, "layer_aer", gold=self.gold_set, corpus=lambda s: self.corpus(s.experiment)
        )

    def replica_entries(
        self, systems: list[System], role: str, **info: Callable[[System], Any]
    ) -> list[Entry]:
        """The per-layer CSVs (``probes`` or ``layer_aer``) of every replica (training seed) of each
        system, with the system's fields and ``info`` (name -> its value for a system) in the info."""
        return [
            Entry(
                {role: f"results/yang2020/{s.experiment}/{s.pair}/{replica.name}/{role}.csv"},
                s.experiment,
                s.pair,
                s.variant,
                replica.seed,
                info={**system_info(s), **{name: value(s) for name, value in info.items()}},
            )
            for s in systems
            for replica in self.replicas(s.experiment, s.pair, s.variant)
        ]
