# Training and checkpoint averaging, one job per content-addressed run (models/runs/<run id>/,
# rules/common.smk): experiments that ask for identical runs share them. Checkpoints live in
# models/runs/<run id>/checkpoints/, outside the declared outputs, so that a re-run after a crash or
# a cluster time-out resumes instead of starting over. Every training setting reaches the job
# through `params.settings` and names its folder: a changed setting is a new run (trained once),
# while edits to the library never retrain.


rule train:
    input:
        run_train_inputs,
    output:
        final_model("{run}"),
    log:
        "logs/train/{run}.log",
    benchmark:
        "logs/benchmarks/train/{run}.tsv"
    priority: TRAINING_PRIORITY
    conda:
        "../envs/train.yaml"
    threads: run_resource("threads")
    resources:
        mem_mb=run_mem_mb,
        runtime=run_runtime,
        gpu=run_resource("gpus"),
    params:
        settings=run_settings_json,
        outdir=run_folder("{run}"),
    shell:
        measured(
            launch(
                "train --config-json {params.settings:q} --outdir {params.outdir:q}"
                " --threads {threads} --no-progress > {log:q} 2>&1"
            )
        )


rule average:
    input:
        final_model("{run}"),
    output:
        averaged_model("{run}", "{last}"),
    log:
        "logs/average/{run}-last{last}.log",
    conda:
        "../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(30),
    params:
        checkpoints=checkpoints_folder("{run}"),
    shell:
        "nmtvariants average --dir {params.checkpoints:q} --last {wildcards.last:q}"
        " --output {output:q} > {log:q} 2>&1"
