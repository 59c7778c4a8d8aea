# Decoding, post-processing (the exact inverse chain) and scoring against the raw references.


def experiment_corpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["corpus"]


def decode_setting(wildcards, key):
    return EXPERIMENTS[wildcards.experiment]["evaluate"][key]


rule translate:
    input:
        model="models/{experiment}/{pair}/{variant}/averaged.pt",
        source=lambda wc: f"data/{experiment_corpus(wc)}/{wc.pair}/bpe/{wc.testset}.{wc.pair.split('-')[0]}",
        vocab=lambda wc: f"data/{experiment_corpus(wc)}/{wc.pair}/bpe/vocab.txt",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.bpe.hyp",
    params:
        beam=lambda wc: decode_setting(wc, "beam"),
        alpha=lambda wc: decode_setting(wc, "alpha"),
        max_len_a=lambda wc: decode_setting(wc, "max_len_a"),
        max_len_b=lambda wc: decode_setting(wc, "max_len_b"),
    log:
        "logs/translate/{experiment}/{pair}/{variant}/{testset}.log",
    threads: 2
    resources:
        mem_mb=4000,
        runtime=120,
    conda:
        "../envs/train.yaml"
    shell:
        "nmtvariants translate --checkpoint {input.model} --vocab {input.vocab} --input {input.source}"
        " --output {output} --beam {params.beam} --alpha {params.alpha} --max-len-a {params.max_len_a}"
        " --max-len-b {params.max_len_b} --threads {threads} > {log} 2>&1"


rule postprocess:
    input:
        "results/{experiment}/{pair}/{variant}/{testset}.bpe.hyp",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.hyp",
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        truecased=lambda wc: (
            "--truecased" if CORPORA[experiment_corpus(wc)]["preprocess"]["truecase"] else ""
        ),
    log:
        "logs/postprocess/{experiment}/{pair}/{variant}/{testset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/text.yaml"
    shell:
        "nmtvariants postprocess -l {params.lang} {params.truecased} -o {output} {input} > {log} 2>&1"


rule evaluate:
    input:
        hyp="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=lambda wc: f"data/{experiment_corpus(wc)}/raw/{wc.testset}.{wc.pair.split('-')[1]}",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.scores.json",
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        metrics=lambda wc: ",".join(decode_setting(wc, "metrics")),
        system="{experiment}/{pair}/{variant}",
    log:
        "logs/evaluate/{experiment}/{pair}/{variant}/{testset}.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/evaluate.yaml"
    shell:
        "nmtvariants evaluate --hyp {input.hyp} --ref {input.ref} -l {params.lang}"
        " --metrics {params.metrics} --system {params.system} --testset {wildcards.testset}"
        " --json {output} > {log} 2>&1"
