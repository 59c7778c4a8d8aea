"""The fifth study's planner and its one table: the learned embedding gate and the scores of each
variant, mean ± sd over the experiment's seeds.

Like the built-in studies' plans (src/nmtvariants/studies/<paper>/plan.py), the planner is free of
Snakemake: ``GatePlan(config, run_of)`` says which files the table reads, from the shared
machinery (replicas, run ids, the layout); fifth_study.smk runs this file as its rule's script,
which writes the table (:func:`write_gate_table`). No ``from __future__`` import: Snakemake puts
its preamble above a script's first line.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from nmtvariants.config import experiment_replicas
from nmtvariants.layout import averaged_model
from nmtvariants.models.checkpoint_io import read_checkpoint
from nmtvariants.reporting.replicas import aggregate_replicas, seeds_note
from nmtvariants.reporting.results import scores_table
from nmtvariants.reporting.tables import write_table

STUDY = "fifth_study"
TABLE = f"results/tables/{STUDY}/gate.md"
GATE = "fifth_gate.value"  # the plug-in's parameter in a checkpoint (fifth_gate.py)
KEYS = ["experiment", "pair", "variant", "testset"]


class GatePlan:
    """The study's experiments and, per replica and test set, the score file and model it reads."""

    def __init__(self, config: Mapping[str, Any], run_of: Mapping[tuple[str, str, str], str]) -> None:
        self.config = config
        self.run_of = run_of
        self.experiments = [
            name for name, spec in config.get("experiments", {}).items() if spec["study"] == STUDY
        ]

    def entries(self) -> list[dict[str, Any]]:
        """One entry per (experiment, replica, test set): its seed, score file and averaged model."""
        entries = []
        for name in self.experiments:
            spec = self.config["experiments"][name]
            for replica in experiment_replicas(self.config, name):
                run = self.run_of[(name, replica.pair, replica.name)]
                for testset in spec["evaluate"]["testsets"]:
                    folder = f"results/{name}/{replica.pair}/{replica.name}"
                    entries.append(
                        {
                            "seed": replica.seed,
                            "scores": f"{folder}/{testset}.scores.json",
                            "model": averaged_model(run, spec["average_last"]),
                        }
                    )
        return entries


def gate_value(checkpoint: str) -> float:
    """Where the gate ended: its value in the averaged model that was decoded."""
    return float(read_checkpoint(checkpoint)["model"][GATE])


def write_gate_table(entries: Sequence[Mapping[str, Any]], md: str) -> None:
    """The table: one row per variant and test set, each score and the gate as mean ± sd over
    seeds (the CSV keeps each seed's value)."""
    long, _ = scores_table([e["scores"] for e in entries], [e["seed"] for e in entries])
    long["gate"] = [gate_value(e["model"]) for e in entries]
    metrics = [column for column in long.columns if column not in [*KEYS, "seed"]]
    frame, markdown, seeds = aggregate_replicas(long, KEYS, metrics)
    write_table(
        frame,
        md,
        title="Fifth study: a learned gate on the source embeddings",
        notes=seeds_note(seeds),
        sources=[e["scores"] for e in entries],
        markdown=markdown,
    )


if __name__ == "__main__":  # the rule's script (fifth_study.smk)
    write_gate_table(snakemake.params.entries, snakemake.output.md)  # noqa: F821
