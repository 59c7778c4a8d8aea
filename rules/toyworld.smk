# The embedded default corpus, generated from a fixed seed (same seed -> byte-identical files).


rule toyworld:
    output:
        texts=expand("data/toyworld/raw/{split}.{lang}", split=SPLITS, lang=TOY_LANGS),
        parses=expand("data/toyworld/raw/{split}.en.conllu", split=SPLITS),
        alignments=expand(
            "data/toyworld/raw/{split}.en-{tgt}.align", split=SPLITS, tgt=TOY_TARGETS
        ),
        pos=expand("data/toyworld/raw/{split}.{tgt}.pos", split=SPLITS, tgt=TOY_TARGETS),
        image_splits=expand("data/toyworld/image_splits/{split}.txt", split=SPLITS),
        images=directory("data/toyworld/images"),
        contrawsd="data/toyworld/contrawsd/en-de.json",
    log:
        "logs/toyworld.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        seed=TOYWORLD["seed"],
        sizes=TOYWORLD["sizes"],
        image_size=TOYWORLD["image_size"],
    shell:
        "nmtvariants toyworld --outdir data/toyworld --seed {params.seed:q}"
        " --train {params.sizes[train]:q} --valid {params.sizes[valid]:q} --test {params.sizes[test]:q}"
        " --image-size {params.image_size:q} > {log:q} 2>&1"
