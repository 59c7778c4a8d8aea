# Training, checkpoint averaging. Checkpoints live in models/.../checkpoints/, outside the declared
# outputs, so that a re-run after a crash or a cluster time-out resumes instead of starting over.
# Every training setting reaches the job through `params.settings`: Snakemake's params trigger then
# retrains exactly the runs whose settings changed, while edits to the library never do.
import json

EXPERIMENTS = config.get("experiments", {})


def run_settings(wildcards):
    """The run config handed to `nmtvariants train`: data paths, model, variant, train settings."""
    experiment = EXPERIMENTS[wildcards.experiment]
    corpus, pair = experiment["corpus"], wildcards.pair
    src, tgt = pair.split("-")
    splits = CORPORA[corpus]
    bpe = f"data/{corpus}/{pair}/bpe"
    variant = dict(experiment["variants"][wildcards.variant] or {})
    return {
        "data": {
            "train_src": f"{bpe}/{splits['train']}.{src}",
            "train_tgt": f"{bpe}/{splits['train']}.{tgt}",
            "valid_src": f"{bpe}/{splits['valid']}.{src}",
            "valid_tgt": f"{bpe}/{splits['valid']}.{tgt}",
            "vocab": f"{bpe}/vocab.txt",
        },
        "model": experiment["model"],
        "variant": variant,
        "train": {**experiment["train"], "seed": config["seed"]},
    }


def train_inputs(wildcards):
    return list(run_settings(wildcards)["data"].values())


def gpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["resources"]["gpus"]


rule train:
    input:
        train_inputs,
    output:
        "models/{experiment}/{pair}/{variant}/final.pt",
    params:
        settings=lambda wc: json.dumps(run_settings(wc), sort_keys=True),
        outdir="models/{experiment}/{pair}/{variant}",
        launch=lambda wc: (
            f"torchrun --standalone --nproc_per_node {gpus(wc)} -m nmtvariants"
            if gpus(wc) > 1
            else "nmtvariants"
        ),
    log:
        "logs/train/{experiment}/{pair}/{variant}.log",
    benchmark:
        "benchmarks/rules/train/{experiment}/{pair}/{variant}.tsv"
    threads: lambda wc: EXPERIMENTS[wc.experiment]["resources"]["threads"]
    resources:
        mem_mb=lambda wc: EXPERIMENTS[wc.experiment]["resources"]["mem_mb"],
        runtime=lambda wc: EXPERIMENTS[wc.experiment]["resources"]["runtime"],
        gpu=gpus,
    conda:
        "../envs/train.yaml"
    shell:
        "{params.launch} train --config-json {params.settings:q} --outdir {params.outdir}"
        " --threads {threads} --no-progress > {log} 2>&1"


rule average:
    input:
        "models/{experiment}/{pair}/{variant}/final.pt",
    output:
        "models/{experiment}/{pair}/{variant}/averaged.pt",
    params:
        checkpoints="models/{experiment}/{pair}/{variant}/checkpoints",
        last=lambda wc: EXPERIMENTS[wc.experiment]["average_last"],
    log:
        "logs/average/{experiment}/{pair}/{variant}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/train.yaml"
    shell:
        "nmtvariants average --dir {params.checkpoints} --last {params.last} --output {output} > {log} 2>&1"
