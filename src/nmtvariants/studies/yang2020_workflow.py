"""Where ``rules/studies/yang2020.smk`` finds and puts things: the study's systems, their shared runs'
checkpoints and logs, their BPE'd data, and the manifests its table and figure commands read
(:mod:`nmtvariants.reporting.manifest`).

One object per resolved config (:class:`Yang2020Workflow`), so that the rule file holds rules only
and every path is decided here, with the same run ids as ``rules/common.smk``
(:func:`nmtvariants.config.training_runs`).

An experiment with several ``seeds`` has one replica per seed (nmtvariants.config.replica_name): the
BLEU tables read every replica and report mean ± sd over seeds; the per-layer analyses (probes, AER)
and the decoding-speed job stay on each system's first seed (the variant's own folder and run), and
their notes and figure titles say so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from nmtvariants.config import experiment_seeds, replica_name, training_runs
from nmtvariants.errors import ConfigError
from nmtvariants.layout import averaged_model, bpe_file, train_log
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.yang2020 import (
    SIMPLIFIED,
    STANDARD,
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


class Yang2020Workflow:
    """The study's systems in a resolved config and the paths of what the rules read and write."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.experiments = config.get("experiments", {})
        self.corpora = config.get("corpora", {})
        self.systems = study_systems(config)
        self.seeds = {
            system.experiment: experiment_seeds(config, system.experiment) for system in self.systems
        }
        self.run_of = {user: run.id for run in training_runs(config).values() for user in run.users}
        # Figures 3, 8, 10 are the base-size (or toy) models' as in the paper; big models are not probed
        self.probed = [
            s
            for s in self.systems
            if s.default_depth and s.layout in (STANDARD, SIMPLIFIED) and s.size != "big"
        ]
        self.aligned = [s for s in self.systems if self.gold_set(s) is not None]
        entries = {
            "table1_layouts": self.score_entries(layout_systems(self.systems)),
            "table2_depth": self.score_entries(depth_systems(self.systems)),
            "table4_simplified": self.simplified_entries(),
            "layer_aer": self.aer_entries(),
        }
        self.tables = {name: value for name, value in entries.items() if value}

    # --- systems and their files -----------------------------------------------------------------

    def system(self, experiment: str, pair: str, variant: str) -> System:
        for system in self.systems:
            if (system.experiment, system.pair, system.variant) == (experiment, pair, variant):
                return system
        raise ConfigError(f"{experiment}/{pair}/{variant}: not a system of a yang2020 experiment")

    def corpus(self, system: System) -> str:
        return self.experiments[system.experiment]["corpus"]

    def replicas(self, system: System) -> list[tuple[int, str]]:
        """(seed, result-folder name) of each of the system's training seeds, the first seed first."""
        seeds = self.seeds[system.experiment]
        return [(seed, replica_name(system.variant, seed, seeds)) for seed in seeds]

    def first_seed(self, system: System) -> int:
        """The seed whose model the per-layer analyses and the decoding-speed job read."""
        return self.seeds[system.experiment][0]

    def analysis_note(self) -> str:
        """A figure title's suffix for the per-layer analyses: " (seed N only)" where an experiment of
        the study has several seeds (the analyses read the first), else nothing (one seed: as ever)."""
        if all(len(seeds) == 1 for seeds in self.seeds.values()):
            return ""
        first = ", ".join(str(seed) for seed in dict.fromkeys(seeds[0] for seeds in self.seeds.values()))
        return f" (seed {first} only)"

    def run_id(self, system: System, replica: str | None = None) -> str:
        """The run of a system's ``replica`` (default: its first seed's, the variant's own name)."""
        return self.run_of[(system.experiment, system.pair, replica or system.variant)]

    def checkpoint(self, system: System, replica: str | None = None) -> str:
        average = self.experiments[system.experiment]["average_last"]
        return averaged_model(self.run_id(system, replica), average)

    def inputs(self, system: System) -> dict[str, Any]:
        """The variant's extra inputs (``inputs.<variant>``): a derived corpus moves its BPE folder."""
        return (self.experiments[system.experiment].get("inputs") or {}).get(system.variant) or {}

    def bpe(self, system: System, split: str, side: str) -> str:
        lang = system.pair.split("-")[0 if side == "src" else 1]
        return bpe_file(self.corpus(system), system.pair, f"{split}.{lang}", self.inputs(system))

    def vocab(self, system: System) -> str:
        return bpe_file(self.corpus(system), system.pair, "vocab.txt", self.inputs(system))

    def train_split(self, system: System) -> str:
        return self.corpora[self.corpus(system)]["train"]

    def testsets(self, system: System) -> list[str]:
        return self.experiments[system.experiment]["evaluate"]["testsets"]

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
        if self.corpus(system) in GOLD:
            return "own"
        return "hansards" if system.pair in HANSARDS_PAIRS else None

    def aer_inputs(self, experiment: str, pair: str, variant: str) -> dict[str, str]:
        """The model, the gold-aligned BPE'd pairs and their gold links; for Hansards also the gold's
        own tokens, against which every BPE'd line's word count is checked."""
        system = self.system(experiment, pair, variant)
        inputs = {"checkpoint": self.checkpoint(system), "vocab": self.vocab(system)}
        if self.gold_set(system) == "own":
            test = self.testsets(system)[0]
            return {
                **inputs,
                "src": self.bpe(system, test, "src"),
                "tgt": self.bpe(system, test, "tgt"),
                "gold": GOLD[self.corpus(system)].format(testset=test, pair=pair),
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

    def aer_options(self, experiment: str, pair: str, variant: str) -> list[str]:
        """yang2020-layer-aer's gold format flags: Pharaoh for a corpus's own gold, talp (reversed for
        FR-EN) with the word-count check for Hansards."""
        system = self.system(experiment, pair, variant)
        if self.gold_set(system) == "own":
            return []
        inputs = self.aer_inputs(experiment, pair, variant)
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
        return f"data/{self.corpus(system)}/{system.pair}/gold_{HANSARDS}/test.{lang}"

    def preprocess(self, corpus: str) -> dict[str, Any]:
        """The corpus's preprocessing settings (what TrainedChain replays)."""
        return dict(self.corpora[corpus].get("preprocess") or {})

    def probe_inputs(self, experiment: str, pair: str, variant: str) -> dict[str, str]:
        """The model, and the training pairs the probes learn from and the test pairs they report on."""
        system = self.system(experiment, pair, variant)
        split, test = self.train_split(system), self.testsets(system)[0]
        return {
            "checkpoint": self.checkpoint(system),
            "vocab": self.vocab(system),
            "source": self.bpe(system, split, "src"),
            "target": self.bpe(system, split, "tgt"),
            "test_source": self.bpe(system, test, "src"),
            "test_target": self.bpe(system, test, "tgt"),
        }

    def speed_inputs(self, experiment: str, pair: str) -> dict[str, str]:
        """Both decoders' checkpoints and the test source they are timed on."""
        standard, simplified = self.speed_pair(experiment, pair)
        return {
            "standard": self.checkpoint(standard),
            "simplified": self.checkpoint(simplified),
            "vocab": self.vocab(standard),
            "source": self.bpe(standard, self.testsets(standard)[0], "src"),
        }

    def speed_pair(self, experiment: str, pair: str) -> tuple[System, System]:
        for standard, simplified in simplified_pairs(self.systems):
            if (standard.experiment, standard.pair) == (experiment, pair):
                return standard, simplified
        raise ConfigError(f"{experiment}/{pair}: no simplified decoder to time against the standard one")

    # --- what the table and figure commands read ---------------------------------------------------

    def score_entries(self, systems: list[System]) -> list[Entry]:
        """One entry per system, training seed and test set: the replica's score file."""
        return [
            Entry(
                {"scores": f"results/{s.experiment}/{s.pair}/{replica}/{testset}.scores.json"},
                s.experiment,
                s.pair,
                s.variant,
                seed,
                testset,
                info=system_info(s),
            )
            for s in systems
            for seed, replica in self.replicas(s)
            for testset in self.testsets(s)
        ]

    def simplified_entries(self) -> list[Entry]:
        """Table 4's entries: each replica's scores, checkpoint and training log, and the decoding
        speed of the first seed's two models (one job per experiment and pair)."""
        entries = []
        for standard, simplified in simplified_pairs(self.systems):
            speed = f"results/yang2020/{standard.experiment}/{standard.pair}/decode_speed.json"
            for system in (standard, simplified):
                replicas = dict(self.replicas(system))
                for entry in self.score_entries([system]):
                    run = self.run_id(system, replicas[entry.seed])
                    files = {
                        **entry.files,
                        "checkpoint": self.checkpoint(system, replicas[entry.seed]),
                        "train_log": train_log(run),
                        "decode_speed": speed,
                    }
                    entries.append(replace(entry, files=files))
        return entries

    def aer_entries(self) -> list[Entry]:
        """The AER-per-layer table: every aligned system's layer_aer.csv (of its first seed's model),
        its gold set and corpus, the seed analysed and the experiment's seeds."""
        return [
            Entry(
                {"layer_aer": f"{self.folder(s)}/layer_aer.csv"},
                s.experiment,
                s.pair,
                s.variant,
                self.first_seed(s),
                info={
                    **system_info(s),
                    "gold": self.gold_set(s),
                    "corpus": self.corpus(s),
                    "seeds": self.seeds[s.experiment],
                },
            )
            for s in self.aligned
        ]

    def figure_entries(self, systems: list[System], role: str) -> list[Entry]:
        """A figure's per-layer CSVs (``probes`` or ``layer_aer``) of each system's first seed."""
        return [
            Entry(
                {role: f"{self.folder(s)}/{role}.csv"}, s.experiment, s.pair, s.variant, info=system_info(s)
            )
            for s in systems
        ]
