# Variants compose (experiments with `study: composition`, e.g. experiments/multi30k_composition.yaml):
# a model with several studies' mechanisms at once beside each mechanism alone and the baseline, at
# equal updates over the experiment's seeds. Library: nmtvariants.studies.composition.
#   results/tables/composition/<experiment>.md             the generic scores table (BLEU, chrF, TER)
#   results/tables/composition/<experiment>_mechanisms.md  BLEU and chrF mean ± sd, Δ and p against
#       the baseline (the core `significance` rule, over sentences and replicas), parameters, training
#       tokens/s, wall time, updates and the plateau record, and each composed variant's Δ beside the
#       sum of its parts' Δ
from nmtvariants.layout import train_log
from nmtvariants.studies import composition

COMPOSITION_EXPERIMENTS = [
    name for name, spec in EXPERIMENTS.items() if spec["study"] == composition.STUDY
]

for _name in COMPOSITION_EXPERIMENTS:
    register_significance(_name, reference_variant(_name), list(composition.METRICS))
    register_table(composition.STUDY, composition.table_path(_name))


def composition_manifest(experiment):
    """One entry per (test set, variant, seed): the score file, the run's record, log and final
    model, and (but for the reference) the significance test over replicas."""
    spec = EXPERIMENTS[experiment]
    reference = reference_variant(experiment)
    entries = []
    for testset in spec["evaluate"]["testsets"]:
        for replica in experiment_replicas(config, experiment):
            run = RUN_OF[(experiment, replica.pair, replica.name)]
            folder = f"results/{experiment}/{replica.pair}"
            files = {
                "scores": f"{folder}/{replica.name}/{testset}.scores.json",
                "run": f"{run_folder(run)}/run.json",
                "train_log": train_log(run),
                "checkpoint": final_model(run),
            }
            if replica.variant != reference:
                files["significance"] = (
                    f"{folder}/{replica.variant}/{testset}.significance.json"
                )
            entries.append(
                {
                    "testset": testset,
                    "variant": replica.variant,
                    "seed": replica.seed,
                    "switches": spec["variants"][replica.variant] or {},
                    "files": files,
                }
            )
    return entries


rule composition_table:
    input:
        lambda wc: unique(
            path
            for entry in composition_manifest(wc.experiment)
            for role, path in entry["files"].items()
            # run.json and the log are written by the job whose output is the final model
            if role not in ("run", "train_log")
        ),
    output:
        md=f"{composition.TABLES}/{{experiment}}_mechanisms.md",
        csv=f"{composition.TABLES}/{{experiment}}_mechanisms.csv",
        provenance=f"{composition.TABLES}/{{experiment}}_mechanisms.provenance.json",
    log:
        "logs/tables/composition/{experiment}_mechanisms.log",
    wildcard_constraints:
        experiment="|".join(COMPOSITION_EXPERIMENTS) or "(?!)",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        manifest=lambda wc: canonical_json(composition_manifest(wc.experiment)),
        reference=lambda wc: reference_variant(wc.experiment),
        title=lambda wc: f"{wc.experiment}: the composed model beside its mechanisms",
    shell:
        "nmtvariants composition-table --manifest {params.manifest:q} --reference {params.reference:q}"
        " --title {params.title:q}"
        " --out {output.md:q} > {log:q} 2>&1"
