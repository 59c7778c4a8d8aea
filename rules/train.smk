# Training, checkpoint averaging. Checkpoints live in models/.../checkpoints/, outside the declared
# outputs, so that a re-run after a crash or a cluster time-out resumes instead of starting over.
# Every training setting reaches the job through `params.settings`: Snakemake's params trigger then
# retrains exactly the runs whose settings changed, while edits to the library never do.


rule train:
    input:
        train_inputs,
    output:
        "models/{experiment}/{pair}/{variant}/final.pt",
    log:
        "logs/train/{experiment}/{pair}/{variant}.log",
    benchmark:
        "logs/benchmarks/train/{experiment}/{pair}/{variant}.tsv"
    conda:
        "../envs/train.yaml"
    threads: lambda wc: EXPERIMENTS[wc.experiment]["resources"]["threads"]
    resources:
        mem_mb=lambda wc: EXPERIMENTS[wc.experiment]["resources"]["mem_mb"],
        runtime=lambda wc: EXPERIMENTS[wc.experiment]["resources"]["runtime"],
        gpu=gpus,
    params:
        settings=lambda wc: json.dumps(run_settings(wc), sort_keys=True),
        outdir="models/{experiment}/{pair}/{variant}",
    shell:
        launch(
            "train --config-json {params.settings:q} --outdir {params.outdir}"
            " --threads {threads} --no-progress > {log} 2>&1"
        )


rule average:
    input:
        "models/{experiment}/{pair}/{variant}/final.pt",
    output:
        "models/{experiment}/{pair}/{variant}/averaged.pt",
    log:
        "logs/average/{experiment}/{pair}/{variant}.log",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        checkpoints="models/{experiment}/{pair}/{variant}/checkpoints",
        last=lambda wc: EXPERIMENTS[wc.experiment]["average_last"],
    shell:
        "nmtvariants average --dir {params.checkpoints} --last {params.last} --output {output} > {log} 2>&1"
