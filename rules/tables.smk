# Aggregated tables: cheap, run locally even under a cluster profile. Each experiment's scores table
# is registered with its study: results/tables/<study>/<experiment>.md, one row per system with the
# mean ± sd over its replicas (one per seed of the experiment's `seeds`).

for _name, _experiment in EXPERIMENTS.items():
    register_table(
        _experiment["study"], f"results/tables/{_experiment['study']}/{_name}.md"
    )


localrules:
    data_statistics,
    preprocessing_table,
    scores_table,


rule data_statistics:
    input:
        texts=statistics_inputs(),
    output:
        md=report(
            "results/tables/data_statistics.md",
            caption="../workflow/report/data_statistics.rst",
            category="Tables",
        ),
        csv="results/tables/data_statistics.csv",
        provenance="results/tables/data_statistics.provenance.json",
    log:
        "logs/tables/data_statistics.log",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    shell:
        "nmtvariants data-stats {input.texts:q} --out {output.md:q} > {log:q} 2>&1"


rule preprocessing_table:
    input:
        unpack(preprocessing_table_inputs),
    output:
        md="results/tables/preprocessing.md",
        csv="results/tables/preprocessing.csv",
        provenance="results/tables/preprocessing.provenance.json",
    log:
        "logs/tables/preprocessing.log",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(10),
    params:
        pairs=[
            (name, pair)
            for name, corpus in CORPORA.items()
            for pair in corpus["pairs"]
        ],
    script:
        "../workflow_scripts/preprocessing_table.py"


rule scores_table:
    input:
        unpack(scores_table_inputs),
    output:
        md="results/tables/{study}/{experiment}.md",
        csv="results/tables/{study}/{experiment}.csv",
        provenance="results/tables/{study}/{experiment}.provenance.json",
    log:
        "logs/tables/{study}/{experiment}.log",
    wildcard_constraints:
        study="[a-z0-9_]+",
        experiment="|".join(EXPERIMENTS) or "(?!)",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        title=lambda wc: f"{wc.experiment}: translation quality",
        seeds=scores_table_seeds,
        significance=scores_table_reference,
        toy=scores_table_toy,
    shell:
        "nmtvariants scores-table {input.scores:q} --seeds {params.seeds:q} {params.significance:q}"
        " {params.toy:q}"
        " --title {params.title:q} --out {output.md:q} > {log:q} 2>&1"
