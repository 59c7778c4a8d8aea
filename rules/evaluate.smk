# Decoding, post-processing (the exact inverse chain) and scoring against the raw references.


rule translate:
    input:
        model="models/{experiment}/{pair}/{variant}/averaged.pt",
        source=lambda wc: f"data/{experiment_corpus(wc)}/{wc.pair}/bpe/{wc.testset}.{wc.pair.split('-')[0]}",
        vocab=lambda wc: f"data/{experiment_corpus(wc)}/{wc.pair}/bpe/vocab.txt",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.bpe.hyp",
    log:
        "logs/translate/{experiment}/{pair}/{variant}/{testset}.log",
    conda:
        "../envs/train.yaml"
    threads: 2
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        beam=lambda wc: decode_setting(wc, "beam"),
        alpha=lambda wc: decode_setting(wc, "alpha"),
        max_len_a=lambda wc: decode_setting(wc, "max_len_a"),
        max_len_b=lambda wc: decode_setting(wc, "max_len_b"),
        dtype=lambda wc: decode_setting(wc, "dtype"),
    shell:
        "nmtvariants translate --checkpoint {input.model} --vocab {input.vocab} --input {input.source}"
        " --output {output} --beam {params.beam} --alpha {params.alpha} --max-len-a {params.max_len_a}"
        " --max-len-b {params.max_len_b} --dtype {params.dtype} --threads {threads} > {log} 2>&1"


rule postprocess:
    input:
        "results/{experiment}/{pair}/{variant}/{testset}.bpe.hyp",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.hyp",
    log:
        "logs/postprocess/{experiment}/{pair}/{variant}/{testset}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        truecased=lambda wc: (
            "--truecased"
            if CORPORA[experiment_corpus(wc)]["preprocess"]["truecase"]
            else ""
        ),
    shell:
        "nmtvariants postprocess -l {params.lang} {params.truecased} -o {output} {input} > {log} 2>&1"


rule evaluate:
    input:
        hyp="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=lambda wc: f"data/{experiment_corpus(wc)}/raw/{wc.testset}.{wc.pair.split('-')[1]}",
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.scores.json",
    log:
        "logs/evaluate/{experiment}/{pair}/{variant}/{testset}.log",
    conda:
        "../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        metrics=lambda wc: ",".join(decode_setting(wc, "metrics")),
        system="{experiment}/{pair}/{variant}",
    shell:
        "nmtvariants evaluate --hyp {input.hyp} --ref {input.ref} -l {params.lang}"
        " --metrics {params.metrics} --system {params.system} --testset {wildcards.testset}"
        " --json {output} > {log} 2>&1"
