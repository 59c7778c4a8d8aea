"""What rules/studies/composition.smk builds for a config: one table per experiment with ``study:
composition`` (nmtvariants.studies.composition.tables says what it holds), and the manifest it reads.

:class:`CompositionPlan` is a :class:`nmtvariants.studies.plan_base.StudyPlan`, as every study's
planner: the experiments, replicas, run files and significance entries come from the base; this
module adds the table's manifest, which besides the scores names each replica's run record, training
log and final model (the table reports training speed, updates and parameters).
"""

from __future__ import annotations

from nmtvariants.config import experiment_replicas
from nmtvariants.layout import final_model, run_folder, scores_file, train_log
from nmtvariants.reporting.manifest import Entry
from nmtvariants.studies.composition.tables import METRICS
from nmtvariants.studies.plan_base import StudyPlan

STUDY = "composition"
TABLES = f"results/tables/{STUDY}"


class CompositionPlan(StudyPlan):
    """The composition experiments of a config and their tables' manifests. Every variant is tested
    against the experiment's first (its baseline), by every metric of the table."""

    study = STUDY

    def tables(self) -> list[str]:
        """Each experiment's composition table (the generic scores table ``<experiment>.md`` beside it
        is rules/tables.smk's)."""
        return [self.table_path(f"{name}_mechanisms") for name in self.experiments]

    def significance_tests(self) -> dict[str, tuple[str, list[str]]]:
        return {name: (self.reference_variant(name), list(METRICS)) for name in self.experiments}

    def manifest(self, experiment: str) -> list[Entry]:
        """The table's manifest: one entry per (test set, replica) with its score file, its run's
        record, log and final model, and (but for the reference) the variant's significance test over
        replicas; ``info`` holds the variant's switches, from which
        :func:`nmtvariants.studies.composition.tables.parts` finds the composed variants."""
        spec = self.experiments[experiment]
        reference = self.reference_variant(experiment)
        entries = []
        for testset in self.testsets(experiment):
            for replica in experiment_replicas(self.config, experiment):
                pair, variant = replica.pair, replica.variant
                run = self.run_id(experiment, pair, replica.name)
                files = {
                    "scores": scores_file(experiment, pair, replica.name, testset),
                    "run": f"{run_folder(run)}/run.json",
                    "train_log": train_log(run),
                    "checkpoint": final_model(run),
                }
                if variant != reference:
                    files.update(self.significance_entry(experiment, pair, variant, testset).files)
                switches = {"switches": dict(spec["variants"][variant] or {})}
                entries.append(Entry(files, experiment, pair, variant, replica.seed, testset, info=switches))
        return entries
