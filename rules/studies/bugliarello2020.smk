# Bugliarello & Okazaki (2020), PASCAL: parses -> parent and label streams -> the syntax-aware variants'
# runs (experiments with `study: bugliarello2020`; each plug-in declares the streams it reads) -> Table 1
# (BLEU, ‡ against the Transformer, RIBES for Japanese), Figure 2 (BLEU by source length) and Table 3
# (PASCAL layer and variance ablations). Library: the package nmtvariants.studies.bugliarello2020, its
# tables.py (tables, gold trees) and plan.py (what the rules build from the config). Seeds: Tables 1
# and 3 give the mean ± sd over every seed of an experiment's `seeds` and ‡ from the test over all of
# them; Figure 2 (BLEU by source length) reads the first seed's outputs.
#
# Parses are of the truecased Moses tokens the BPE was applied to (data/<corpus>/<pair>/tc/, the cleaned
# lines for the training split): gold trees moved onto them for toyworld, Stanza on them elsewhere
# (models from `studies.bugliarello2020.parser_models`). For a language with a treebank in
# `parser_treebanks` (default: English on UD EWT, downloaded by the catalogue's `ud_ewt`, mirror first)
# the workflow trains the tagger and parser there offline (`nmtvariants stanza-train`, the step budget
# and sizes in `parser_train`) and scores them on the treebank's test set (parser.md: UPOS, UAS, LAS
# on gold words, CoNLL 2018 conventions); other languages' models are the user's.
# Streams, data/<corpus>/<pair>/inputs/<split>.<name>, line-parallel with bpe/<split>.<src>:
#   parents_x2 (PASCAL, middle subword of the parent), parents_first (LISA), dep_labels (S&H, a label
#   stream: UD relations). The plug-ins declare them (declare_variant(..., inputs=...)), so a run of any
#   study with one of these variants reads them and these rules write them; no config restates them.
# Experiments listed in `studies.bugliarello2020.ablations` go to Table 3 only (without any, Table 3
# lists the PASCAL variants of the Table 1 experiments).
#
# The multi-task baseline (Currey & Heafield) is a Transformer (no switches) on a derived corpus:
# `inputs: {<variant>: {derived: multitask}}` makes its run read data/<corpus>/<pair>/derived/multitask/
# (nmtvariants.config.bpe_folder): the training split doubled (<TR> source -> target, <PA> source ->
# linearised parse of the source), tagged valid and test sources, the valid targets, and a joint
# vocabulary of the derived training files (nmtvariants.syntax.linearize).

from nmtvariants.studies.bugliarello2020 import plan as b20

# the plan stops here on an ablation list or an experiment it cannot plan; significance against the
# Transformer over every seed of both is the core rule `significance` (rules/evaluate.smk)
B20_PLAN = b20.Bugliarello2020Plan(config, RUN_OF)
register_plan(B20_PLAN)
B20_SETTINGS = B20_PLAN.settings
B20_EXPERIMENTS = B20_PLAN.experiments
B20_GOLD = [name for name, corpus in CORPORA.items() if corpus["source"] == "toyworld"]
B20_PARSED = [name for name in CORPORA if name not in B20_GOLD]
B20_TABLE1_MANIFEST = B20_PLAN.entries(B20_PLAN.main_experiments())
B20_TABLE3_MANIFEST = B20_PLAN.entries(
    B20_PLAN.ablation_experiments(), pascal_only=True
)
B20_TASKS = B20_PLAN.figure_tasks()
B20_TREEBANKS = B20_SETTINGS["parser_treebanks"]
B20_PARSER_DIR = B20_SETTINGS["parser_models"]
B20_MULTITASK = "data/{corpus}/{src}-{tgt}/derived/multitask"
B20_TRAIN_SPLITS = {corpus["train"] for corpus in CORPORA.values()}
B20_VALID_SPLITS = {corpus["valid"] for corpus in CORPORA.values()}


# --- parses on the preprocessed tokens ---------------------------------------------------------


rule bugliarello2020_gold_parse:
    input:
        unpack(lambda wc: B20_PLAN.gold_inputs(wc.corpus, wc.src, wc.tgt, wc.split)),
    output:
        "data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
    log:
        "logs/bugliarello2020/gold_parse/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        corpus=B20_PLAN.regex(B20_GOLD),
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        kept=lambda wc, input: ["--kept", input.kept] if "kept" in input.keys() else [],
    shell:
        "nmtvariants bugliarello2020-gold-parse --conllu {input.conllu:q} --tokens {input.tokens:q}"
        " {params.kept:q} -o {output:q} > {log:q} 2>&1"


rule bugliarello2020_treebank_download:
    output:
        train="data/{treebank}/raw/train.conllu",
        dev="data/{treebank}/raw/dev.conllu",
        test="data/{treebank}/raw/test.conllu",
    log:
        "logs/bugliarello2020/treebank_download/{treebank}.log",
    wildcard_constraints:
        treebank=B20_PLAN.regex(B20_TREEBANKS.values()),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(30),
    params:
        dest="data/{treebank}/raw",
        mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
    shell:
        "nmtvariants download {wildcards.treebank:q} --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"


rule bugliarello2020_stanza_train:
    input:
        train=lambda wc: B20_PLAN.treebank_file(wc.lang, "train"),
        dev=lambda wc: B20_PLAN.treebank_file(wc.lang, "dev"),
    output:
        tagger=f"{B20_PARSER_DIR}/{{lang}}_tagger.pt",
        parser=f"{B20_PARSER_DIR}/{{lang}}_parser.pt",
        record=f"{B20_PARSER_DIR}/{{lang}}_training.json",
    log:
        "logs/bugliarello2020/stanza_train/{lang}.log",
    wildcard_constraints:
        lang=B20_PLAN.regex(B20_TREEBANKS),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(8000),
        runtime=grown_runtime(240),
        gpu=1 if B20_PLAN.parser_train()["device"].startswith("cuda") else 0,
    params:
        models=lambda wc, output: str(Path(output.parser).parent),
        options=B20_PLAN.parser_train_args(),
        seed=config["seed"],
    shell:
        "OMP_NUM_THREADS={threads} "
        + launch(
            "stanza-train --train {input.train:q} --dev {input.dev:q} --lang {wildcards.lang:q}"
            " --model-dir {params.models:q} {params.options:q} --seed {params.seed:q} > {log:q} 2>&1"
        )


rule bugliarello2020_parser_score:
    input:
        unpack(lambda wc: B20_PLAN.parser_files(wc.lang)),
        gold=lambda wc: B20_PLAN.treebank_file(wc.lang, "test"),
    output:
        pred="results/bugliarello2020/parser/{lang}.test.conllu",
        scores=b20.parser_scores("{lang}"),
    log:
        "logs/bugliarello2020/parser_score/{lang}.log",
    wildcard_constraints:
        lang=B20_PLAN.regex(B20_TREEBANKS),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(8000),
        runtime=grown_runtime(120),
    params:
        models=lambda wc, input: str(Path(input.parser).parent),
    shell:
        "OMP_NUM_THREADS={threads} nmtvariants stanza-score --gold {input.gold:q} --lang {wildcards.lang:q}"
        " --model-dir {params.models:q} --pred {output.pred:q} --json {output.scores:q} > {log:q} 2>&1"


rule bugliarello2020_parse:
    input:
        unpack(lambda wc: B20_PLAN.parser_files(wc.src)),
        tokens="data/{corpus}/{src}-{tgt}/tc/{split}.{src}",
    output:
        "data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
    log:
        "logs/bugliarello2020/parse/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        corpus=B20_PLAN.regex(B20_PARSED),
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 4
    resources:
        mem_mb=input_sized_mb(16000),
        runtime=grown_runtime(720),
        gpu=1,
    params:
        models=B20_SETTINGS["parser_models"],
    shell:
        launch(
            "parse {input.tokens:q} -o {output:q} --lang {wildcards.src:q} --model-dir {params.models:q}"
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
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        mode=lambda wc: b20.STREAM_MODES[wc.mode],
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
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    shell:
        "nmtvariants dep-labels --conllu {input.conllu:q} --bpe {input.bpe:q} -o {output:q} > {log:q} 2>&1"


# --- the multi-task baseline's derived corpus --------------------------------------------------


ruleorder:
    bugliarello2020_multitask_train
    > bugliarello2020_multitask_valid
    > bugliarello2020_multitask_source


rule bugliarello2020_multitask_train:
    input:
        src="data/{corpus}/{src}-{tgt}/bpe/{split}.{src}",
        tgt="data/{corpus}/{src}-{tgt}/bpe/{split}.{tgt}",
        conllu="data/{corpus}/{src}-{tgt}/parse/{split}.{src}.conllu",
    output:
        src=f"{B20_MULTITASK}/{{split}}.{{src}}",
        tgt=f"{B20_MULTITASK}/{{split}}.{{tgt}}",
    log:
        "logs/bugliarello2020/multitask/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        split=B20_PLAN.regex(B20_TRAIN_SPLITS),
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(30),
    shell:
        "nmtvariants multitask-corpus --source {input.src:q} --target {input.tgt:q} --conllu {input.conllu:q}"
        " --out-source {output.src:q} --out-target {output.tgt:q} > {log:q} 2>&1"


rule bugliarello2020_multitask_valid:
    input:
        src="data/{corpus}/{src}-{tgt}/bpe/{split}.{src}",
        tgt="data/{corpus}/{src}-{tgt}/bpe/{split}.{tgt}",
    output:
        src=f"{B20_MULTITASK}/{{split}}.{{src}}",
        tgt=f"{B20_MULTITASK}/{{split}}.{{tgt}}",
    log:
        "logs/bugliarello2020/multitask/{corpus}/{src}-{tgt}/{split}.log",
    wildcard_constraints:
        split=B20_PLAN.regex(B20_VALID_SPLITS),
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    shell:
        "nmtvariants multitask-corpus --source {input.src:q} --target {input.tgt:q}"
        " --out-source {output.src:q} --out-target {output.tgt:q} > {log:q} 2>&1"


rule bugliarello2020_multitask_source:
    input:
        "data/{corpus}/{src}-{tgt}/bpe/{split}.{src}",
    output:
        f"{B20_MULTITASK}/{{split}}.{{src}}",
    log:
        "logs/bugliarello2020/multitask/{corpus}/{src}-{tgt}/{split}.{src}.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    shell:
        "nmtvariants multitask-corpus --source {input:q} --out-source {output:q} > {log:q} 2>&1"


rule bugliarello2020_multitask_vocab:
    input:
        src=lambda wc: f"{B20_MULTITASK.format(**wc)}/{CORPORA[wc.corpus]['train']}.{wc.src}",
        tgt=lambda wc: f"{B20_MULTITASK.format(**wc)}/{CORPORA[wc.corpus]['train']}.{wc.tgt}",
    output:
        f"{B20_MULTITASK}/vocab.txt",
    log:
        "logs/bugliarello2020/multitask/{corpus}/{src}-{tgt}/vocab.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    shell:
        "nmtvariants vocab {input.src:q} {input.tgt:q} -o {output:q} > {log:q} 2>&1"


# --- evaluation: BLEU by source length (the first seed's outputs) ------------------------------


rule bugliarello2020_length:
    input:
        src=lambda wc: B20_PLAN.tokenised_source(wc.experiment, wc.pair, wc.testset),
        hyp="results/{experiment}/{pair}/{variant}/{testset}.hyp",
        ref=lambda wc: B20_PLAN.reference_text(wc.experiment, wc.pair, wc.testset),
    output:
        "results/{experiment}/{pair}/{variant}/{testset}.length.json",
    log:
        "logs/bugliarello2020/length/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        experiment=B20_PLAN.regex(B20_EXPERIMENTS),
        testset="[A-Za-z0-9_-]+",
    conda:
        "../../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        edges=",".join(str(edge) for edge in B20_SETTINGS["length_edges"]),
    shell:
        "nmtvariants bleu-by-length --src {input.src:q} --hyp {input.hyp:q} --ref {input.ref:q}"
        " -l {params.lang:q} --edges {params.edges:q} --json {output:q} > {log:q} 2>&1"


# --- tables and figure -------------------------------------------------------------------------


localrules:
    bugliarello2020_parser_table,
    bugliarello2020_table1,
    bugliarello2020_table3,
    bugliarello2020_length_csv,


rule bugliarello2020_parser_table:
    input:
        manifest_files(lambda wc: B20_PLAN.parser_manifest()),
    output:
        md=b20.PARSER_TABLE,
        csv=b20.PARSER_TABLE.replace(".md", ".csv"),
        provenance=b20.PARSER_TABLE.replace(".md", ".provenance.json"),
    log:
        out="logs/bugliarello2020/parser_table.log",
        manifest="logs/bugliarello2020/parser_table.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: B20_PLAN.parser_manifest()),
    shell:
        with_manifest(
            "nmtvariants bugliarello2020-parser-table --manifest {log.manifest:q} --out {output.md:q}"
            " > {log.out:q} 2>&1"
        )


rule bugliarello2020_table1:
    input:
        manifest_files(lambda wc: B20_TABLE1_MANIFEST),
    output:
        md=b20.TABLE1,
        csv=b20.TABLE1.replace(".md", ".csv"),
        provenance=b20.TABLE1.replace(".md", ".provenance.json"),
    log:
        out="logs/bugliarello2020/table1.log",
        manifest="logs/bugliarello2020/table1.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: B20_TABLE1_MANIFEST),
    shell:
        with_manifest(
            "nmtvariants bugliarello2020-table --table main --manifest {log.manifest:q} --out {output.md:q}"
            " > {log.out:q} 2>&1"
        )


rule bugliarello2020_table3:
    input:
        manifest_files(lambda wc: B20_TABLE3_MANIFEST),
    output:
        md=b20.TABLE3,
        csv=b20.TABLE3.replace(".md", ".csv"),
        provenance=b20.TABLE3.replace(".md", ".provenance.json"),
    log:
        out="logs/bugliarello2020/table3.log",
        manifest="logs/bugliarello2020/table3.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: B20_TABLE3_MANIFEST),
    shell:
        with_manifest(
            "nmtvariants bugliarello2020-table --table ablation --manifest {log.manifest:q}"
            " --out {output.md:q} > {log.out:q} 2>&1"
        )


rule bugliarello2020_length_csv:
    input:
        manifest_files(lambda wc: B20_PLAN.figure_manifest(wc.task)),
    output:
        "results/figures/bugliarello2020/length_{task}.csv",
    log:
        out="logs/bugliarello2020/length_{task}.log",
        manifest="logs/bugliarello2020/length_{task}.manifest.json",
    wildcard_constraints:
        task=B20_PLAN.regex(B20_TASKS),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: B20_PLAN.figure_manifest(wc.task)),
    shell:
        with_manifest(
            "nmtvariants bugliarello2020-length --manifest {log.manifest:q} --out {output:q} > {log.out:q} 2>&1"
        )
