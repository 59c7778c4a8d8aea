# Bugliarello & Okazaki (2020), PASCAL: parses -> parent and label streams -> the syntax-aware variants'
# runs (experiments with `study: bugliarello2020`, their `inputs:` naming the streams) -> Table 1
# (BLEU, ‡ against the Transformer, RIBES for Japanese), Figure 2 (BLEU by source length) and Table 3
# (PASCAL layer and variance ablations). Library: nmtvariants.studies.bugliarello2020.
#
# Parses are of the truecased Moses tokens the BPE was applied to (data/<corpus>/<pair>/tc/, the cleaned
# lines for the training split): gold trees moved onto them for toyworld, Stanza on them elsewhere
# (models from `studies.bugliarello2020.parser_models`, trained offline by `nmtvariants stanza-train`).
# Streams, data/<corpus>/<pair>/inputs/<split>.<name>, line-parallel with bpe/<split>.<src>:
#   parents_x2 (PASCAL, middle subword of the parent), parents_first (LISA), dep_labels (S&H).
# Experiments listed in `studies.bugliarello2020.ablations` go to Table 3 only (without any, Table 3
# lists the PASCAL variants of the Table 1 experiments).
#
# Not wired: the multi-task baseline (Currey & Heafield). `nmtvariants multitask-corpus` writes its
# corpus, but training on it needs a derived corpus (its own joint vocabulary and tagged test sources)
# that the workflow's corpora cannot yet declare.

B20 = "bugliarello2020"
B20_SETTINGS = {
    "parser_models": "models/stanza",
    "length_edges": [10, 20, 30, 40, 50],
    "ablations": [],
    **config.get("studies", {}).get(B20, {}),
}
B20_EXPERIMENTS = {
    name: spec for name, spec in EXPERIMENTS.items() if spec["study"] == B20
}
B20_GOLD = [
    name for name, corpus in CORPORA.items() if corpus["source"] == "toyworld"
]
B20_PARSED = [name for name in CORPORA if name not in B20_GOLD]
B20_STREAM_MODES = {"x2": "middle", "first": "first"}


def b20_regex(names):
    return "|".join(re.escape(name) for name in names) or "(?!)"


def b20_baseline(experiment):
    """The Transformer of an experiment: its first variant without switches."""
    spec = B20_EXPERIMENTS[experiment]
    for variant, switches in spec["variants"].items():
        if not switches:
            return variant
    raise ValueError(
        f"experiments.{experiment}.variants: the PASCAL study compares against a Transformer;"
        " add a variant without switches (e.g. transformer: {})"
    )


for _name in B20_SETTINGS["ablations"]:
    if _name not in B20_EXPERIMENTS:
        raise ValueError(
            f"studies.{B20}.ablations: {_name} is not an experiment of study {B20}"
        )
for _name in B20_EXPERIMENTS:
    b20_baseline(_name)


def b20_entries(experiments, pascal_only=False):
    """The table manifest: one entry per (experiment, pair, testset, variant), config order."""
    entries = []
    for name in experiments:
        spec = B20_EXPERIMENTS[name]
        baseline = b20_baseline(name)
        for pair in spec["pairs"]:
            for testset in spec["evaluate"]["testsets"]:
                for variant, switches in spec["variants"].items():
                    if pascal_only and "pascal" not in (switches or {}):
                        continue
                    folder = f"results/{name}/{pair}/{variant}"
                    entries.append(
                        {
                            "experiment": name,
                            "pair": pair,
                            "testset": testset,
                            "variant": variant,
                            "switches": dict(switches or {}),
                            "scores": f"{folder}/{testset}.scores.json",
                            "significance": (
                                None
                                if variant == baseline
                                else f"{folder}/{testset}.significance.json"
                            ),
                            "length": f"{folder}/{testset}.length.json",
                        }
                    )
    return entries


B20_MAIN = [name for name in B20_EXPERIMENTS if name not in B20_SETTINGS["ablations"]]
# Table 3: the PASCAL variants of the ablation experiments, or of the Table 1 experiments when none is
# configured (the demo: one row, no extra training).
B20_ABLATION = B20_SETTINGS["ablations"] or B20_MAIN
B20_TABLE1 = f"results/tables/{B20}/table1.md"
B20_TABLE3 = f"results/tables/{B20}/table3.md"
B20_FIGURES = {
    f"results/figures/{B20}/length_{name}_{pair}_{testset}.png": (name, pair, testset)
    for name in B20_MAIN
    for pair in B20_EXPERIMENTS[name]["pairs"]
    for testset in B20_EXPERIMENTS[name]["evaluate"]["testsets"]
}

if B20_MAIN:
    register_table(B20, B20_TABLE1)
if b20_entries(B20_ABLATION, pascal_only=True):
    register_table(B20, B20_TABLE3)
for _png, (_name, _pair, _testset) in B20_FIGURES.items():
    register_figure(
        B20,
        _png,
        "bars",
        x="bucket",
        y="bleu",
        group="variant",
        ylabel="BLEU",
        title=f"BLEU by source length: {_name} {_pair} {_testset}",
    )


def b20_manifest_files(entries, keys):
    return [entry[key] for entry in entries for key in keys if entry[key]]


# --- parses on the preprocessed tokens ---------------------------------------------------------


def b20_gold_inputs(wildcards):
    inputs = {
        "conllu": f"data/{wildcards.corpus}/raw/{wildcards.split}.{wildcards.src}.conllu",
        "tokens": f"data/{wildcards.corpus}/{wildcards.src}-{wildcards.tgt}/tc/{wildcards.split}.{wildcards.src}",
    }
    if wildcards.split == CORPORA[wildcards.corpus]["train"]:
        inputs["kept"] = f"data/{wildcards.corpus}/{wildcards.src}-{wildcards.tgt}/clean/train.kept"
    return inputs


rule bugliarello2020_gold_parse:
    input:
        unpack(b20_gold_inputs),
    output:
        "data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
    log:
        "logs/bugliarello2020/gold_parse/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        corpus=b20_regex(B20_GOLD),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        kept=lambda wc, input: ["--kept", input.kept] if "kept" in input.keys() else [],
    shell:
        "nmtvariants bugliarello2020-gold-parse --conllu {input.conllu:q} --tokens {input.tokens:q}"
        " {params.kept:q} -o {output:q} > {log:q} 2>&1"


rule bugliarello2020_parse:
    input:
        "data/{corpus}/{src}-{tgt}/tc/{split}.{src}",
    output:
        "data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
    log:
        "logs/bugliarello2020/parse/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        corpus=b20_regex(B20_PARSED),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 4
    resources:
        mem_mb=16000,
        runtime=720,
        gpu=1,
    params:
        models=B20_SETTINGS["parser_models"],
    shell:
        launch(
            "parse {input:q} -o {output:q} --lang {wildcards.src:q} --model-dir {params.models:q}"
            " > {log:q} 2>&1"
        )


# --- streams -----------------------------------------------------------------------------------


rule bugliarello2020_parents:
    input:
        conllu="data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
        bpe="data/{corpus}/{src}-{tgt}/bpe/{split}.{src}",
    output:
        "data/{corpus}/{src}-{tgt}/inputs/{split}.parents_{mode}",
    log:
        "logs/bugliarello2020/parents/{corpus}/{src}-{tgt}/{split}.{mode}.log",
    wildcard_constraints:
        mode="x2|first",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        mode=lambda wc: B20_STREAM_MODES[wc.mode],
    shell:
        "nmtvariants parents --conllu {input.conllu:q} --bpe {input.bpe:q} --mode {params.mode:q}"
        " -o {output:q} > {log:q} 2>&1"


rule bugliarello2020_dep_labels:
    input:
        conllu="data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
        bpe="data/{corpus}/{src}-{tgt}/bpe/{split}.{src}",
    output:
        "data/{corpus}/{src}-{tgt}/inputs/{split}.dep_labels",
    log:
        "logs/bugliarello2020/dep_labels/{corpus}/{src}-{tgt}/{split}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "nmtvariants dep-labels --conllu {input.conllu:q} --bpe {input.bpe:q} -o {output:q} > {log:q} 2>&1"


# --- evaluation: significance against the Transformer, BLEU by source length -------------------


def b20_reference(wildcards):
    corpus = B20_EXPERIMENTS[wildcards.experiment]["corpus"]
    return f"data/{corpus}/raw/{wildcards.testset}.{wildcards.pair.split('-')[1]}"


rule bugliarello2020_significance:
    input:
        baseline=lambda wc: f"results/{wc.experiment}/{wc.pair}/{b20_baseline(wc.experiment)}/{wc.testset}.hyp",
        system="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=b20_reference,
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.significance.json",
    log:
        "logs/bugliarello2020/significance/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        experiment=b20_regex(B20_EXPERIMENTS),
        testset="[A-Za-z0-9_-]+",
    conda:
        "../../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        seed=config["seed"],
    shell:
        "nmtvariants significance --baseline {input.baseline:q} --system {input.system:q} --ref {input.ref:q}"
        " -l {params.lang:q} --metrics bleu --samples 1000 --seed {params.seed:q} --json {output:q}"
        " > {log:q} 2>&1"


rule bugliarello2020_length:
    input:
        src=lambda wc: f"data/{B20_EXPERIMENTS[wc.experiment]['corpus']}/tok/{wc.testset}.{wc.pair.split('-')[0]}",
        hyp="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=b20_reference,
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.length.json",
    log:
        "logs/bugliarello2020/length/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        experiment=b20_regex(B20_EXPERIMENTS),
        testset="[A-Za-z0-9_-]+",
    conda:
        "../../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        edges=",".join(str(edge) for edge in B20_SETTINGS["length_edges"]),
    shell:
        "nmtvariants bleu-by-length --src {input.src:q} --hyp {input.hyp:q} --ref {input.ref:q}"
        " -l {params.lang:q} --edges {params.edges:q} --json {output:q} > {log:q} 2>&1"


# --- tables and figure -------------------------------------------------------------------------


localrules:
    bugliarello2020_table1,
    bugliarello2020_table3,
    bugliarello2020_length_csv,


rule bugliarello2020_table1:
    input:
        b20_manifest_files(b20_entries(B20_MAIN), ["scores", "significance"]),
    output:
        md=B20_TABLE1,
        csv=B20_TABLE1.replace(".md", ".csv"),
        provenance=B20_TABLE1.replace(".md", ".provenance.json"),
    log:
        "logs/bugliarello2020/table1.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        manifest=canonical_json(b20_entries(B20_MAIN)),
    shell:
        "nmtvariants bugliarello2020-table --table main --manifest {params.manifest:q} --out {output.md:q}"
        " > {log:q} 2>&1"


rule bugliarello2020_table3:
    input:
        b20_manifest_files(
            b20_entries(B20_ABLATION, pascal_only=True), ["scores", "significance"]
        ),
    output:
        md=B20_TABLE3,
        csv=B20_TABLE3.replace(".md", ".csv"),
        provenance=B20_TABLE3.replace(".md", ".provenance.json"),
    log:
        "logs/bugliarello2020/table3.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        manifest=canonical_json(b20_entries(B20_ABLATION, pascal_only=True)),
    shell:
        "nmtvariants bugliarello2020-table --table ablation --manifest {params.manifest:q}"
        " --out {output.md:q} > {log:q} 2>&1"


def b20_length_entries(wildcards):
    name, pair, testset = B20_FIGURES[
        f"results/figures/{B20}/length_{wildcards.task}.png"
    ]
    return [
        entry
        for entry in b20_entries([name])
        if entry["pair"] == pair and entry["testset"] == testset
    ]


rule bugliarello2020_length_csv:
    input:
        lambda wc: [entry["length"] for entry in b20_length_entries(wc)],
    output:
        f"results/figures/{B20}/length_{{task}}.csv",
    log:
        "logs/bugliarello2020/length_{task}.log",
    wildcard_constraints:
        task=b20_regex(
            [Path(png).stem.removeprefix("length_") for png in B20_FIGURES]
        ),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        manifest=lambda wc: canonical_json(b20_length_entries(wc)),
    shell:
        "nmtvariants bugliarello2020-length --manifest {params.manifest:q} --out {output:q} > {log:q} 2>&1"
