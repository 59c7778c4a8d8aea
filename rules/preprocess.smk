# Moses normalize + tokenize -> clean (train only) -> truecase -> joint BPE -> network vocabulary.
# Layout: data/<corpus>/tok/<split>.<lang> (pair-independent), then data/<corpus>/<src>-<tgt>/<stage>/.
# A pair's further languages (`preprocess.bpe.shared_with`, e.g. {en-cs: [de, fr]}) go through the
# same chain inside the pair's folder: clean_shared keeps the lines the pair's cleaning kept, the
# truecase rules give them their own model, bpe_learn learns the merges on them too, bpe_vocab_shared
# counts their vocab.<lang>, bpe_apply segments them, and network_vocab adds their units (the
# functions they call: rules/common.smk).


rule tokenize:
    input:
        "data/{corpus}/raw/{split}.{lang}",
    output:
        "data/{corpus}/tok/{split}.{lang}",
    log:
        "logs/tokenize/{corpus}/{split}.{lang}.log",
    benchmark:
        "logs/benchmarks/tokenize/{corpus}/{split}.{lang}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: sized_threads("tokenize", 2)
    resources:
        mem_mb=sized_mem_mb("tokenize"),
        runtime=sized_runtime("tokenize"),
    params:
        lowercase=lambda wc: (
            "--lowercase" if preprocess_setting(wc, "lowercase") else ""
        ),
        aggressive=lambda wc: (
            "-a" if preprocess_setting(wc, "aggressive_hyphen") else ""
        ),
        escape=lambda wc: "" if preprocess_setting(wc, "escape") else "--no-escape",
    shell:
        measured(
            "(nmtvariants normalize -l {wildcards.lang:q} {params.lowercase} -j {threads} {input:q}"
            " | nmtvariants tokenize -l {wildcards.lang:q} {params.aggressive} {params.escape}"
            " -j {threads} -o {output:q}) 2> {log:q}"
        )


rule clean:
    input:
        src="data/{corpus}/tok/train.{src}",
        tgt="data/{corpus}/tok/train.{tgt}",
    output:
        src="data/{corpus}/{src}-{tgt}/clean/train.{src}",
        tgt="data/{corpus}/{src}-{tgt}/clean/train.{tgt}",
        report="data/{corpus}/{src}-{tgt}/clean/drops.json",
        kept="data/{corpus}/{src}-{tgt}/clean/train.kept",
    log:
        "logs/clean/{corpus}/{src}-{tgt}.log",
    benchmark:
        "logs/benchmarks/clean/{corpus}/{src}-{tgt}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("clean"),
        runtime=sized_runtime("clean"),
    params:
        min=lambda wc: preprocess_setting(wc, "clean", "min"),
        max=lambda wc: preprocess_setting(wc, "clean", "max"),
        ratio=lambda wc: preprocess_setting(wc, "clean", "ratio"),
    shell:
        measured(
            "nmtvariants clean --src-in {input.src:q} --tgt-in {input.tgt:q}"
            " --src-out {output.src:q} --tgt-out {output.tgt:q}"
            " --min {params.min:q} --max {params.max:q} --ratio {params.ratio:q}"
            " --report {output.report:q} --kept {output.kept:q} > {log:q} 2>&1"
        )


# A further language of the pair (shared_with): its tokenised training lines that the pair kept.
rule clean_shared:
    input:
        text="data/{corpus}/tok/train.{shared}",
        kept="data/{corpus}/{pair}/clean/train.kept",
    output:
        "data/{corpus}/{pair}/clean/train.{shared}",
    log:
        "logs/clean/{corpus}/{pair}.{shared}.log",
    benchmark:
        "logs/benchmarks/clean/{corpus}/{pair}.{shared}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("clean_shared"),
        runtime=sized_runtime("clean_shared"),
    shell:
        measured(
            "nmtvariants follow-clean --kept {input.kept:q} -o {output:q} {input.text:q} > {log:q} 2>&1"
        )


# a language that is shared with one pair and a pair's own language in another: the pair's own rule
ruleorder: clean > clean_shared


rule truecase_train:
    input:
        "data/{corpus}/{pair}/clean/train.{lang}",
    output:
        "data/{corpus}/{pair}/truecase/model.{lang}",
    log:
        "logs/truecase_train/{corpus}/{pair}.{lang}.log",
    benchmark:
        "logs/benchmarks/truecase_train/{corpus}/{pair}.{lang}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("truecase_train"),
        runtime=sized_runtime("truecase_train"),
    shell:
        measured(
            "nmtvariants truecase train --model {output:q} {input:q} > {log:q} 2>&1"
        )


# With `truecase: false` no model is trained and the tc/ files are the tokenised (train: cleaned)
# text unchanged, so BPE, parses and the round trip read tc/ whatever the setting; rule postprocess
# detruecases exactly when the corpus truecases.
rule truecase_apply:
    input:
        text=truecase_input,
        model=truecase_model,
    output:
        "data/{corpus}/{pair}/tc/{split}.{lang}",
    log:
        "logs/truecase_apply/{corpus}/{pair}/{split}.{lang}.log",
    benchmark:
        "logs/benchmarks/truecase_apply/{corpus}/{pair}/{split}.{lang}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: sized_threads("truecase_apply", 2)
    resources:
        mem_mb=sized_mem_mb("truecase_apply"),
        runtime=sized_runtime("truecase_apply"),
    params:
        model=lambda wc, input: ["--model", input.model] if input.model else [],
    shell:
        measured(
            "nmtvariants truecase apply {params.model:q} -j {threads} -o {output:q} {input.text:q} > {log:q} 2>&1"
        )


rule bpe_learn:
    input:
        unpack(bpe_learn_inputs),
    output:
        codes="data/{corpus}/{src}-{tgt}/bpe/codes",
        src_vocab="data/{corpus}/{src}-{tgt}/bpe/vocab.{src}",
        tgt_vocab="data/{corpus}/{src}-{tgt}/bpe/vocab.{tgt}",
    log:
        "logs/bpe_learn/{corpus}/{src}-{tgt}.log",
    benchmark:
        "logs/benchmarks/bpe_learn/{corpus}/{src}-{tgt}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("bpe_learn"),
        runtime=sized_runtime("bpe_learn"),
    params:
        merges=lambda wc: preprocess_setting(wc, "bpe", "merges"),
        translit=lambda wc: [
            arg for lang in translit_langs(wc) for arg in ("--translit", lang)
        ],
        vocab_dir="data/{corpus}/{src}-{tgt}/bpe",
        shared=bpe_learn_shared_args,
    shell:
        measured(
            "nmtvariants bpe learn --input {wildcards.src:q}={input.src:q} --input {wildcards.tgt:q}={input.tgt:q}"
            " -s {params.merges:q} --codes {output.codes:q} --vocab-dir {params.vocab_dir:q} {params.translit:q}"
            " {params.shared:q} > {log:q} 2>&1"
        )


# A further language's vocab.<lang>: its training text segmented with the shared codes, counted (what
# bpe_learn would write for it; one job per file keeps every output declared).
rule bpe_vocab_shared:
    input:
        text="data/{corpus}/{pair}/tc/train.{shared}",
        codes="data/{corpus}/{pair}/bpe/codes",
    output:
        "data/{corpus}/{pair}/bpe/vocab.{shared}",
    log:
        "logs/bpe_vocab/{corpus}/{pair}.{shared}.log",
    benchmark:
        "logs/benchmarks/bpe_vocab/{corpus}/{pair}.{shared}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("bpe_vocab_shared"),
        runtime=sized_runtime("bpe_vocab_shared"),
    params:
        codes=shared_codes,
    shell:
        measured(
            "nmtvariants bpe count --codes {params.codes:q} -o {output:q} {input.text:q} > {log:q} 2>&1"
        )


ruleorder: bpe_learn > bpe_vocab_shared


rule bpe_apply:
    input:
        text="data/{corpus}/{pair}/tc/{split}.{lang}",
        codes="data/{corpus}/{pair}/bpe/codes",
        vocab="data/{corpus}/{pair}/bpe/vocab.{lang}",
    output:
        "data/{corpus}/{pair}/bpe/{split}.{lang}",
    log:
        "logs/bpe_apply/{corpus}/{pair}/{split}.{lang}.log",
    benchmark:
        "logs/benchmarks/bpe_apply/{corpus}/{pair}/{split}.{lang}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("bpe_apply"),
        runtime=sized_runtime("bpe_apply"),
    params:
        codes=bpe_codes_for,
        threshold=lambda wc: preprocess_setting(wc, "bpe", "threshold"),
    shell:
        measured(
            "nmtvariants bpe apply --codes {params.codes:q} --vocab {input.vocab:q}"
            " --threshold {params.threshold:q} -o {output:q} {input.text:q} > {log:q} 2>&1"
        )


rule network_vocab:
    input:
        network_vocab_inputs,
    output:
        "data/{corpus}/{src}-{tgt}/bpe/vocab.txt",
    log:
        "logs/network_vocab/{corpus}/{src}-{tgt}.log",
    benchmark:
        "logs/benchmarks/network_vocab/{corpus}/{src}-{tgt}.tsv"
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("network_vocab"),
        runtime=sized_runtime("network_vocab"),
    shell:
        measured("nmtvariants vocab {input:q} -o {output:q} > {log:q} 2>&1")


# The round trip of the chain that was run: the workflow's own tokenised, truecased and BPE files of
# a test set, inverted as rule postprocess does and compared with the raw text.
rule roundtrip:
    input:
        raw="data/{corpus}/raw/{split}.{lang}",
        tok="data/{corpus}/tok/{split}.{lang}",
        tc="data/{corpus}/{pair}/tc/{split}.{lang}",
        bpe="data/{corpus}/{pair}/bpe/{split}.{lang}",
    output:
        "results/{corpus}/{pair}/roundtrip/{split}.{lang}.json",
    log:
        "logs/roundtrip/{corpus}/{pair}/{split}.{lang}.log",
    benchmark:
        "logs/benchmarks/roundtrip/{corpus}/{pair}/{split}.{lang}.tsv"
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=sized_mem_mb("roundtrip"),
        runtime=sized_runtime("roundtrip"),
    params:
        lowercase=lambda wc: (
            "--lowercase" if preprocess_setting(wc, "lowercase") else ""
        ),
        truecased=lambda wc: "--truecased" if preprocess_setting(wc, "truecase") else "",
    shell:
        measured(
            "nmtvariants roundtrip -l {wildcards.lang:q} {params.lowercase} {params.truecased}"
            " --raw {input.raw:q} --tok {input.tok:q} --tc {input.tc:q} --bpe {input.bpe:q}"
            " --json {output:q} > {log:q} 2>&1"
        )
