# Variants compose (experiments with `study: composition`, e.g. experiments/multi30k_composition.yaml):
# a model with several studies' mechanisms at once beside each mechanism alone and the baseline, at
# equal updates over the experiment's seeds. Library: the package nmtvariants.studies.composition, its
# tables.py (the table) and plan.py (what the rules build).
#   results/tables/composition/<experiment>.md             the generic scores table (BLEU, chrF, TER)
#   results/tables/composition/<experiment>_mechanisms.md  BLEU and chrF mean ± sd, Δ and p against
#       the baseline (the core `significance` rule, over sentences and replicas), parameters, training
#       tokens/s, wall time, updates and the plateau record, and each composed variant's Δ beside the
#       sum of its parts' Δ
from nmtvariants.studies.composition import plan as composition

# its tables, and every variant's significance against the baseline (rule `significance`)
COMPOSITION = composition.CompositionPlan(config, RUN_OF)
register_plan(COMPOSITION)


rule composition_table:
    input:
        manifest_files(lambda wc: COMPOSITION.manifest(wc.experiment)),
    output:
        md=f"{composition.TABLES}/{{experiment}}_mechanisms.md",
        csv=f"{composition.TABLES}/{{experiment}}_mechanisms.csv",
        provenance=f"{composition.TABLES}/{{experiment}}_mechanisms.provenance.json",
    log:
        out="logs/tables/composition/{experiment}_mechanisms.log",
        manifest="logs/tables/composition/{experiment}_mechanisms.manifest.json",
    wildcard_constraints:
        experiment=COMPOSITION.regex(COMPOSITION.experiments),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: COMPOSITION.manifest(wc.experiment)),
        reference=lambda wc: COMPOSITION.reference_variant(wc.experiment),
        title=lambda wc: f"{wc.experiment}: the composed model beside its mechanisms",
    shell:
        with_manifest(
            "nmtvariants composition-table --manifest {log.manifest:q} --reference {params.reference:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )
