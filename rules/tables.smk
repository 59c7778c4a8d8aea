# Aggregated tables: cheap, run locally even under a cluster profile.


localrules:
    data_statistics,


rule data_statistics:
    input:
        texts=expand("data/toyworld/raw/{split}.{lang}", split=SPLITS, lang=TOY_LANGS),
    output:
        md=report(
            "results/tables/data_statistics.md",
            caption="../workflow/report/data_statistics.rst",
            category="Tables",
        ),
        csv="results/tables/data_statistics.csv",
    log:
        "logs/tables/data_statistics.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    conda:
        "../envs/nmtvariants.yaml"
    shell:
        "nmtvariants data-stats --corpus toyworld {input.texts} --out {output.md} > {log} 2>&1"
