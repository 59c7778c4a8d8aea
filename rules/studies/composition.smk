# Variants compose (experiments with `study: composition`, e.g. experiments/multi30k_composition.yaml):
# a model with several studies' mechanisms at once beside each mechanism alone and the baseline, at
# equal updates over the experiment's seeds. Library: nmtvariants.studies.composition.
#   results/tables/composition/<experiment>.md             the generic scores table (BLEU, chrF, TER)
#   results/tables/composition/<experiment>_mechanisms.md  BLEU and chrF mean ± sd, Δ and p against
#       the baseline (the core `significance` rule, over sentences and replicas), parameters, training
#       tokens/s, wall time, updates and the plateau record, and each composed variant's Δ beside the
#       sum of its parts' Δ
from nmtvariants.studies import composition

COMPOSITION_EXPERIMENTS = [
    name for name, spec in EXPERIMENTS.items() if spec["study"] == composition.STUDY
]

for _name in COMPOSITION_EXPERIMENTS:
    register_significance(
        _name, composition.reference_variant(config, _name), list(composition.METRICS)
    )
    register_table(composition.STUDY, composition.table_path(_name))


rule composition_table:
    input:
        manifest_files(lambda wc: composition.manifest(config, RUN_OF, wc.experiment)),
    output:
        md=f"{composition.TABLES}/{{experiment}}_mechanisms.md",
        csv=f"{composition.TABLES}/{{experiment}}_mechanisms.csv",
        provenance=f"{composition.TABLES}/{{experiment}}_mechanisms.provenance.json",
    log:
        out="logs/tables/composition/{experiment}_mechanisms.log",
        manifest="logs/tables/composition/{experiment}_mechanisms.manifest.json",
    wildcard_constraints:
        experiment="|".join(COMPOSITION_EXPERIMENTS) or "(?!)",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        manifest=manifest_text(
            lambda wc: composition.manifest(config, RUN_OF, wc.experiment)
        ),
        reference=lambda wc: composition.reference_variant(config, wc.experiment),
        title=lambda wc: f"{wc.experiment}: the composed model beside its mechanisms",
    shell:
        with_manifest(
            "nmtvariants composition-table --manifest {log.manifest:q} --reference {params.reference:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )
