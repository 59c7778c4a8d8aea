# Decoding (once per shared run and decode setting), post-processing (the exact inverse chain) and
# scoring against the raw references (per experiment: the scores carry the experiment's name), and the
# significance of a variant against its experiment's reference over all replicas of both.


rule translate:
    input:
        unpack(run_test_inputs),
        model=lambda wc: averaged_model(wc.run, decode_setting(wc, "average_last")),
        source=lambda wc: run_bpe(wc, f"{wc.testset}.{RUNS[wc.run].pair.split('-')[0]}"),
        vocab=lambda wc: run_bpe(wc, "vocab.txt"),
    output:
        decoded_bpe("{run}", "{decode}", "{testset}"),
    log:
        "logs/translate/{run}/{decode}/{testset}.log",
    conda:
        "../envs/train.yaml"
    threads: run_resource("threads")
    resources:
        mem_mb=decoding_mem_mb(4000),
        runtime=grown_runtime(120),
    params:
        beam=lambda wc: decode_setting(wc, "beam"),
        alpha=lambda wc: decode_setting(wc, "alpha"),
        max_len_a=lambda wc: decode_setting(wc, "max_len_a"),
        max_len_b=lambda wc: decode_setting(wc, "max_len_b"),
        dtype=lambda wc: decode_setting(wc, "dtype"),
        extras=run_test_input_args,
    shell:
        "nmtvariants translate --checkpoint {input.model:q} --vocab {input.vocab:q} --input {input.source:q}"
        " {params.extras:q} --output {output:q} --beam {params.beam:q} --alpha {params.alpha:q}"
        " --max-len-a {params.max_len_a:q} --max-len-b {params.max_len_b:q} --dtype {params.dtype:q}"
        " --threads {threads} > {log:q} 2>&1"


rule postprocess:
    input:
        experiment_hypothesis,
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.hyp",
    log:
        "logs/postprocess/{experiment}/{pair}/{variant}/{testset}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        truecased=lambda wc: (
            "--truecased"
            if CORPORA[experiment_corpus(wc)]["preprocess"]["truecase"]
            else ""
        ),
    shell:
        "nmtvariants postprocess -l {params.lang:q} {params.truecased} -o {output:q} {input:q} > {log:q} 2>&1"


rule evaluate:
    input:
        hyp="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=lambda wc: f"data/{experiment_corpus(wc)}/raw/{wc.testset}.{wc.pair.split('-')[1]}",
    output:
        scores_file("{experiment}", "{pair}", "{variant}", "{testset}"),
    log:
        "logs/evaluate/{experiment}/{pair}/{variant}/{testset}.log",
    conda:
        "../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        metrics=experiment_metrics,
        meteor=METEOR_ARGS,
        system="{experiment}/{pair}/{variant}",
    shell:
        "nmtvariants evaluate --hyp {input.hyp:q} --ref {input.ref:q} -l {params.lang:q}"
        " --metrics {params.metrics:q} {params.meteor:q} --system {params.system:q}"
        " --testset {wildcards.testset:q}"
        " --json {output:q} > {log:q} 2>&1"


rule significance:
    # every seed's output of the variant against every seed's output of the reference that the
    # experiment's study registered (register_significance, rules/common.smk)
    input:
        baseline=lambda wc: replica_hypotheses(
            wc, significance_setting(wc, "reference")
        ),
        system=lambda wc: replica_hypotheses(wc, wc.variant),
        ref=lambda wc: f"data/{experiment_corpus(wc)}/raw/{wc.testset}.{wc.pair.split('-')[1]}",
    output:
        significance_file("{experiment}", "{pair}", "{variant}", "{testset}"),
    log:
        "logs/significance/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
    conda:
        "../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(60),
    params:
        replicas=significance_replica_args,
        lang=lambda wc: wc.pair.split("-")[1],
        metrics=lambda wc: ",".join(significance_setting(wc, "metrics")),
        samples=SIGNIFICANCE_SAMPLES,
        seed=config["seed"],
    shell:
        "nmtvariants significance {params.replicas:q} --ref {input.ref:q} -l {params.lang:q}"
        " --metrics {params.metrics:q} --samples {params.samples:q} --seed {params.seed:q}"
        " --json {output:q} > {log:q} 2>&1"
