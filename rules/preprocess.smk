# Moses normalize + tokenize -> clean (train only) -> truecase -> joint BPE -> network vocabulary.
# Layout: data/<corpus>/tok/<split>.<lang> (pair-independent), then data/<corpus>/<src>-<tgt>/<stage>/.


rule tokenize:
    input:
        "data/{corpus}/raw/{split}.{lang}",
    output:
        "data/{corpus}/tok/{split}.{lang}",
    log:
        "logs/tokenize/{corpus}/{split}.{lang}.log",
    conda:
        "../envs/text.yaml"
    threads: 2
    resources:
        mem_mb=2000,
        runtime=120,
    params:
        lowercase=lambda wc: (
            "--lowercase" if preprocess_setting(wc, "lowercase") else ""
        ),
        aggressive=lambda wc: (
            "-a" if preprocess_setting(wc, "aggressive_hyphen") else ""
        ),
        escape=lambda wc: "" if preprocess_setting(wc, "escape") else "--no-escape",
    shell:
        "(nmtvariants normalize -l {wildcards.lang} {params.lowercase} -j {threads} {input}"
        " | nmtvariants tokenize -l {wildcards.lang} {params.aggressive} {params.escape}"
        " -j {threads} -o {output}) 2> {log}"


rule clean:
    input:
        src="data/{corpus}/tok/train.{src}",
        tgt="data/{corpus}/tok/train.{tgt}",
    output:
        src="data/{corpus}/{src}-{tgt}/clean/train.{src}",
        tgt="data/{corpus}/{src}-{tgt}/clean/train.{tgt}",
        report="data/{corpus}/{src}-{tgt}/clean/drops.json",
    log:
        "logs/clean/{corpus}/{src}-{tgt}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        min=lambda wc: preprocess_setting(wc, "clean", "min"),
        max=lambda wc: preprocess_setting(wc, "clean", "max"),
        ratio=lambda wc: preprocess_setting(wc, "clean", "ratio"),
    shell:
        "nmtvariants clean --src-in {input.src} --tgt-in {input.tgt}"
        " --src-out {output.src} --tgt-out {output.tgt}"
        " --min {params.min} --max {params.max} --ratio {params.ratio}"
        " --report {output.report} > {log} 2>&1"


rule truecase_train:
    input:
        "data/{corpus}/{pair}/clean/train.{lang}",
    output:
        "data/{corpus}/{pair}/truecase/model.{lang}",
    log:
        "logs/truecase_train/{corpus}/{pair}.{lang}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "nmtvariants truecase train --model {output} {input} > {log} 2>&1"


rule truecase_apply:
    input:
        text=truecase_input,
        model="data/{corpus}/{pair}/truecase/model.{lang}",
    output:
        "data/{corpus}/{pair}/tc/{split}.{lang}",
    log:
        "logs/truecase_apply/{corpus}/{pair}/{split}.{lang}.log",
    conda:
        "../envs/text.yaml"
    threads: 2
    resources:
        mem_mb=2000,
        runtime=120,
    shell:
        "nmtvariants truecase apply --model {input.model} -j {threads} -o {output} {input.text} > {log} 2>&1"


rule bpe_learn:
    input:
        src="data/{corpus}/{src}-{tgt}/tc/train.{src}",
        tgt="data/{corpus}/{src}-{tgt}/tc/train.{tgt}",
    output:
        codes="data/{corpus}/{src}-{tgt}/bpe/codes",
        src_vocab="data/{corpus}/{src}-{tgt}/bpe/vocab.{src}",
        tgt_vocab="data/{corpus}/{src}-{tgt}/bpe/vocab.{tgt}",
    log:
        "logs/bpe_learn/{corpus}/{src}-{tgt}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        merges=lambda wc: preprocess_setting(wc, "bpe", "merges"),
        translit=lambda wc: " ".join(
            f"--translit {lang}" for lang in translit_langs(wc)
        ),
        vocab_dir="data/{corpus}/{src}-{tgt}/bpe",
    shell:
        "nmtvariants bpe learn --input {wildcards.src}={input.src} --input {wildcards.tgt}={input.tgt}"
        " -s {params.merges} --codes {output.codes} --vocab-dir {params.vocab_dir} {params.translit}"
        " > {log} 2>&1"


rule bpe_apply:
    input:
        text="data/{corpus}/{pair}/tc/{split}.{lang}",
        codes="data/{corpus}/{pair}/bpe/codes",
        vocab="data/{corpus}/{pair}/bpe/vocab.{lang}",
    output:
        "data/{corpus}/{pair}/bpe/{split}.{lang}",
    log:
        "logs/bpe_apply/{corpus}/{pair}/{split}.{lang}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=120,
    params:
        codes=bpe_codes_for,
        threshold=lambda wc: preprocess_setting(wc, "bpe", "threshold"),
    shell:
        "nmtvariants bpe apply --codes {params.codes} --vocab {input.vocab}"
        " --threshold {params.threshold} -o {output} {input.text} > {log} 2>&1"


rule network_vocab:
    input:
        src="data/{corpus}/{src}-{tgt}/bpe/train.{src}",
        tgt="data/{corpus}/{src}-{tgt}/bpe/train.{tgt}",
    output:
        "data/{corpus}/{src}-{tgt}/bpe/vocab.txt",
    log:
        "logs/network_vocab/{corpus}/{src}-{tgt}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "nmtvariants vocab {input.src} {input.tgt} -o {output} > {log} 2>&1"


rule roundtrip:
    input:
        text="data/{corpus}/raw/{split}.{lang}",
        truecase_train="data/{corpus}/raw/train.{lang}",
        codes="data/{corpus}/{pair}/bpe/codes",
    output:
        "results/{corpus}/{pair}/roundtrip/{split}.{lang}.json",
    log:
        "logs/roundtrip/{corpus}/{pair}/{split}.{lang}.log",
    conda:
        "../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        aggressive=lambda wc: (
            "-a" if preprocess_setting(wc, "aggressive_hyphen") else ""
        ),
        codes=bpe_codes_for,
    shell:
        "nmtvariants roundtrip -l {wildcards.lang} {params.aggressive} --bpe-codes {params.codes}"
        " --truecase-train {input.truecase_train} --json {output} {input.text} > {log} 2>&1"
