# Aggregated tables: cheap, run locally even under a cluster profile.


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
        mem_mb=1000,
        runtime=10,
    shell:
        "nmtvariants data-stats {input.texts} --out {output.md} > {log} 2>&1"


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
        mem_mb=2000,
        runtime=10,
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
        lambda wc: expand(
            "results/{experiment}/{pair}/{variant}/{testset}.scores.json",
            experiment=wc.experiment,
            pair=EXPERIMENTS[wc.experiment]["pairs"],
            variant=list(EXPERIMENTS[wc.experiment]["variants"]),
            testset=EXPERIMENTS[wc.experiment]["evaluate"]["testsets"],
        ),
    output:
        md="results/tables/{experiment}.md",
        csv="results/tables/{experiment}.csv",
        provenance="results/tables/{experiment}.provenance.json",
    log:
        "logs/tables/{experiment}.log",
    wildcard_constraints:
        experiment="|".join(EXPERIMENTS) or "(?!)",
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        title=lambda wc: f"{wc.experiment}: translation quality",
    shell:
        "nmtvariants scores-table {input} --title {params.title:q} --out {output.md} > {log} 2>&1"
