# Libovický, Helcl & Mareček (2018): multi-source decoders on multimodal (text + image) and
# multi-source (several languages) translation. Experiments with `study: libovicky2018` name the extra
# inputs of their variants (`inputs.<variant>: {features: resnet}` or `{sources: [src_<lang>, ...]}`);
# the rules here write those inputs, decode the test set again with one input deranged (adversarial
# evaluation, over LIBOVICKY2018_SEEDS), score everything the Multi30k way (lower-cased, tokenised
# BLEU and METEOR) and build:
#   results/tables/libovicky2018/table1_mmt.md          (experiments whose variants read images)
#   results/tables/libovicky2018/table2_multisource.md  (experiments whose variants read more sources)
#   results/figures/libovicky2018/attention_layers.png  (flat and hierarchical variants)
#
# Inputs, written under data/<corpus>/<pair>/inputs/:
# * <split>.resnet.npy: the split's images through the ResNet of `image_features` (toyworld: its
#   rendered PNGs; downloaded corpora: the user's images under image_features.images), extracted once
#   per corpus (data/<corpus>/features/) and hard-linked per pair;
# * <split>.src_<lang>: a further source language through the pair's chain (studies/libovicky2018.py:
#   own Moses tokenisation, the cleaned training lines, own truecaser, the pair's BPE codes filtered by
#   the pair's network vocabulary).
# A corpus whose sources are all Europarl v7 X-en bitexts (europarl_v7_<x>en) is the 5-way corpus the
# paper builds by pivoting on English: rule libovicky2018_europarl_<corpus> writes its raw files.

import json

LIBOVICKY2018_SEEDS = [1, 2, 3]  # derangement seeds of every adversarial evaluation
LIBOVICKY2018_ATTENTION_SENTENCES = 200  # test pairs behind the attention figure
LIBOVICKY2018_EUROPARL_HELDOUT = 1000  # valid and test tuples of the 5-way corpus (the paper's 1k/1k)
LIBOVICKY2018_FEATURES = "resnet"
IMAGE_FEATURES = {
    "weights": "random",
    "depth": 50,
    "size": 224,
    "batch_size": 32,
    "images": "data/multi30k_images",
    **config.get("image_features", {}),
}
LIBOVICKY2018_EXPERIMENTS = {
    name: spec for name, spec in EXPERIMENTS.items() if spec["study"] == "libovicky2018"
}


def lib_inputs(experiment, variant):
    return dict((EXPERIMENTS[experiment].get("inputs") or {}).get(variant) or {})


def lib_extra_langs(experiment, variant):
    """The languages of a variant's further sources (`src_<lang>` names)."""
    langs = []
    for name in lib_inputs(experiment, variant).get("sources", []):
        if not re.fullmatch(r"src_[a-z]+", name):
            raise ValueError(
                f"experiments.{experiment}.inputs.{variant}.sources: {name!r}; libovicky2018 names a"
                " further source src_<lang> (e.g. src_fr), which its rules write"
            )
        langs.append(name.removeprefix("src_"))
    return langs


def lib_check_features(experiment, variant):
    features = lib_inputs(experiment, variant).get("features")
    if features not in (None, LIBOVICKY2018_FEATURES):
        raise ValueError(
            f"experiments.{experiment}.inputs.{variant}.features: {features!r}; libovicky2018 writes"
            f" the image features as {LIBOVICKY2018_FEATURES!r}"
        )
    return features is not None


def lib_kind(experiment):
    """table1_mmt (a variant reads images), table2_multisource (a variant reads more sources), or None."""
    variants = EXPERIMENTS[experiment]["variants"]
    if any(lib_check_features(experiment, v) for v in variants):
        return "table1_mmt"
    if any(lib_extra_langs(experiment, v) for v in variants):
        return "table2_multisource"
    return None


def lib_strategy(experiment, variant):
    options = (EXPERIMENTS[experiment]["variants"][variant] or {}).get("multi_source") or {}
    return options.get("strategy", "serial") if lib_inputs(experiment, variant) else None


def lib_randomised(experiment, pair, variant):
    """What an adversarial decode of this variant replaces: the image; or, with further sources, each
    source language in turn (the first source's language, then the further ones)."""
    names = []
    if lib_check_features(experiment, variant):
        names.append("image")
    extra = lib_extra_langs(experiment, variant)
    if extra:
        names += [pair.split("-")[0], *extra]
    return names


def lib_memories(experiment, pair, variant):
    names = [pair.split("-")[0], *lib_extra_langs(experiment, variant)]
    return names + (["image"] if lib_check_features(experiment, variant) else [])


def lib_systems(kind):
    """(experiment, pair, variant, testset) of every row of a table, in config order."""
    return [
        (name, pair, variant, testset)
        for name, spec in LIBOVICKY2018_EXPERIMENTS.items()
        if lib_kind(name) == kind
        for pair in spec["pairs"]
        for testset in spec["evaluate"]["testsets"]
        for variant in spec["variants"]
    ]


def lib_folder(experiment, pair, variant):
    return f"results/libovicky2018/{experiment}/{pair}/{variant}"


def lib_attention_systems():
    return [
        (experiment, pair, variant, testset)
        for kind in ("table1_mmt", "table2_multisource")
        for experiment, pair, variant, testset in lib_systems(kind)
        if lib_strategy(experiment, variant) in ("flat", "hierarchical")
        and testset == EXPERIMENTS[experiment]["evaluate"]["testsets"][0]
    ]


LIBOVICKY2018_TABLES = {
    kind: f"results/tables/libovicky2018/{kind}.md"
    for kind in ("table1_mmt", "table2_multisource")
    if lib_systems(kind)
}
for _table in LIBOVICKY2018_TABLES.values():
    register_table("libovicky2018", _table)
if lib_attention_systems():
    register_figure(
        "libovicky2018",
        "results/figures/libovicky2018/attention_layers.png",
        "layers",
        x="layer",
        y="share",
        group="label",
        title="Attention over sources per decoder layer (teacher forcing, test set)",
        ylabel="share of the cross-attention",
    )


# --- inputs: image features -----------------------------------------------------------------------


def lib_image_settings(corpus):
    """Images of a corpus: toyworld's rendered scenes with a small seeded ResNet (offline), or the
    user's images with the configured ResNet."""
    if CORPORA[corpus]["source"] == "toyworld":
        return {**IMAGE_FEATURES, "images": "data/toyworld/images/{split}"}
    if "multi30k" not in as_list(CORPORA[corpus]["source"]):
        raise ValueError(
            f"corpora.{corpus}: image features need a corpus with images (toyworld or multi30k)"
        )
    return IMAGE_FEATURES


def lib_image_inputs(wildcards):
    if CORPORA[wildcards.corpus]["source"] == "toyworld":
        return {
            "list": f"data/toyworld/image_splits/{wildcards.split}.txt",
            "images": "data/toyworld/images",
        }
    # Multi30k's split list comes with its text (`{split}.images` beside the raw files)
    lang = corpus_languages(wildcards.corpus)[0]
    return {"text": f"data/{wildcards.corpus}/raw/{wildcards.split}.{lang}"}


def lib_image_list(wildcards, input):
    if "list" in input.keys():
        return input.list
    return f"data/{wildcards.corpus}/raw/{wildcards.split}.images"


def lib_image_folder(wildcards):
    return lib_image_settings(wildcards.corpus)["images"].format(split=wildcards.split)


rule libovicky2018_image_features:
    input:
        unpack(lib_image_inputs),
    output:
        npy="data/{corpus}/features/{split}.resnet.npy",
        ids="data/{corpus}/features/{split}.resnet.ids.txt",
        meta="data/{corpus}/features/{split}.resnet.json",
    log:
        "logs/libovicky2018/features/{corpus}/{split}.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=240,
    params:
        list=lib_image_list,
        images=lib_image_folder,
        depth=lambda wc: lib_image_settings(wc.corpus)["depth"],
        weights=lambda wc: lib_image_settings(wc.corpus)["weights"],
        size=lambda wc: lib_image_settings(wc.corpus)["size"],
        batch=lambda wc: lib_image_settings(wc.corpus)["batch_size"],
        seed=config["seed"],
    shell:
        "(nmtvariants libovicky2018-images --images {params.images:q} --list {params.list:q}"
        " && nmtvariants image-features --images {params.images:q}"
        " --list {params.list:q} --output {output.npy:q} --depth {params.depth:q} --weights {params.weights:q}"
        " --size {params.size:q} --batch-size {params.batch:q} --seed {params.seed:q}) > {log:q} 2>&1"


rule libovicky2018_pair_features:
    input:
        "data/{corpus}/features/{split}.resnet.npy",
    output:
        "data/{corpus}/{pair}/inputs/{split}.resnet.npy",
    log:
        "logs/libovicky2018/features/{corpus}/{pair}/{split}.log",
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=10,
    shell:
        "ln -f {input:q} {output:q} 2> {log:q}"  # one extraction per corpus, shared by its pairs


# --- inputs: further source languages ---------------------------------------------------------------


def lib_source_inputs(wildcards):
    corpus = CORPORA[wildcards.corpus]
    base = f"data/{wildcards.corpus}/{wildcards.pair}"
    inputs = {
        "tok": f"data/{wildcards.corpus}/tok/{wildcards.split}.{wildcards.lang}",
        "codes": bpe_codes_for(wildcards),
        "vocab": f"{base}/bpe/vocab.txt",
    }
    if wildcards.split == corpus["train"]:
        inputs["kept"] = f"{base}/clean/train.kept"
    if corpus["preprocess"]["truecase"]:
        inputs["truecaser"] = f"{base}/truecase/model.src_{wildcards.lang}"
    return inputs


def lib_optional(option, key):
    return lambda wildcards, input: [option, input[key]] if key in input.keys() else []


rule libovicky2018_source_truecaser:
    input:
        tok="data/{corpus}/tok/train.{lang}",
        kept="data/{corpus}/{pair}/clean/train.kept",
    output:
        "data/{corpus}/{pair}/truecase/model.src_{lang}",
    log:
        "logs/libovicky2018/truecase/{corpus}/{pair}.{lang}.log",
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    shell:
        "nmtvariants libovicky2018-truecaser --tok {input.tok:q} --kept {input.kept:q} --model {output:q}"
        " > {log:q} 2>&1"


rule libovicky2018_source:
    input:
        unpack(lib_source_inputs),
    output:
        "data/{corpus}/{pair}/inputs/{split}.src_{lang}",
    log:
        "logs/libovicky2018/source/{corpus}/{pair}/{split}.{lang}.log",
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        kept=lib_optional("--kept", "kept"),
        truecaser=lib_optional("--truecase-model", "truecaser"),
    shell:
        "nmtvariants libovicky2018-source --tok {input.tok:q} {params.kept:q} {params.truecaser:q}"
        " --codes {input.codes:q} --vocab {input.vocab:q} -o {output:q} > {log:q} 2>&1"


# --- the Europarl 5-way corpus (ES, FR, DE, CS with English as the pivot) ---------------------------


def lib_europarl_languages(corpus):
    """The foreign languages of a corpus made of Europarl v7 X-en bitexts only, else None."""
    sources = as_list(corpus["source"])
    found = [re.fullmatch(r"europarl_v7_([a-z]+)en", source) for source in sources]
    if len(sources) < 2 or not all(found):
        return None
    return [match.group(1) for match in found]


LIBOVICKY2018_EUROPARL = {
    name: langs
    for name, corpus in CORPORA.items()
    if (langs := lib_europarl_languages(corpus)) is not None
}


rule libovicky2018_europarl_bitext:
    output:
        foreign="data/libovicky2018/europarl/{lang}-en/train.{lang}",
        english="data/libovicky2018/europarl/{lang}-en/train.en",
    log:
        "logs/libovicky2018/europarl/{lang}-en.log",
    wildcard_constraints:
        lang="(?!en$)[a-z]+",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=240,
    params:
        source="europarl_v7_{lang}en",
        dest="data/libovicky2018/europarl/{lang}-en",
        mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
    shell:
        "nmtvariants download {params.source:q} --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"


for _name, _langs in LIBOVICKY2018_EUROPARL.items():
    _corpus = CORPORA[_name]
    if (_corpus["train"], _corpus["valid"], _corpus["testsets"]) != ("train", "valid", ["test"]):
        raise ValueError(
            f"corpora.{_name}: the Europarl 5-way corpus has the splits train, valid and [test]"
        )

    rule:
        name:
            f"libovicky2018_europarl_{_name}"
        input:
            [
                f"data/libovicky2018/europarl/{lang}-en/train.{side}"
                for lang in _langs
                for side in (lang, "en")
            ],
        output:
            expand(
                "data/{corpus}/raw/{split}.{lang}",
                corpus=_name,
                split=["train", "valid", "test"],
                lang=[*_langs, "en"],
            ),
        log:
            f"logs/libovicky2018/europarl/{_name}.log",
        conda:
            "../../envs/nmtvariants.yaml"
        threads: 1
        resources:
            mem_mb=16000,
            runtime=240,
        params:
            bitexts=[
                word
                for lang in _langs
                for word in (
                    "--bitext",
                    lang,
                    f"data/libovicky2018/europarl/{lang}-en/train.{lang}",
                    f"data/libovicky2018/europarl/{lang}-en/train.en",
                )
            ],
            out=f"data/{_name}/raw",
            heldout=LIBOVICKY2018_EUROPARL_HELDOUT,
            seed=config["seed"],
        shell:
            "nmtvariants europarl-intersect {params.bitexts:q} --out-dir {params.out:q}"
            " --valid {params.heldout:q} --test {params.heldout:q} --seed {params.seed:q} > {log:q} 2>&1"

    # the corpus's own download rule (rules/download.smk) would fetch the bitexts as one corpus
    workflow.ruleorder(f"libovicky2018_europarl_{_name}", f"download_{_name}")


# --- adversarial evaluation -------------------------------------------------------------------------


def lib_run(wildcards):
    return RUNS[RUN_OF[(wildcards.experiment, wildcards.pair, wildcards.variant)]]


def lib_corpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["corpus"]


def lib_text_source(corpus, pair, testset, lang):
    """The clean BPE'd test text of source language ``lang`` (the first source or a further one)."""
    if lang == pair.split("-")[0]:
        return f"data/{corpus}/{pair}/bpe/{testset}.{lang}"
    return f"data/{corpus}/{pair}/inputs/{testset}.src_{lang}"


rule libovicky2018_derange_text:
    input:
        lambda wc: lib_text_source(wc.corpus, wc.pair, wc.testset, wc.randomised),
    output:
        "data/{corpus}/{pair}/adversarial/{testset}.{randomised}.seed{seed}",
    log:
        "logs/libovicky2018/derange/{corpus}/{pair}/{testset}.{randomised}.seed{seed}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
        randomised="(?!image$)[a-z]+",
        seed="[0-9]+",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "nmtvariants derange --input {input:q} --output {output:q} --seed {wildcards.seed:q} > {log:q} 2>&1"


rule libovicky2018_derange_image:
    input:
        "data/{corpus}/{pair}/inputs/{testset}.resnet.npy",
    output:
        index="data/{corpus}/{pair}/adversarial/{testset}.image.seed{seed}.index",
        ids="data/{corpus}/{pair}/adversarial/{testset}.image.seed{seed}.ids.txt",
    log:
        "logs/libovicky2018/derange/{corpus}/{pair}/{testset}.image.seed{seed}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
        seed="[0-9]+",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "nmtvariants derange --kind features --input {input:q} --output {output.index:q}"
        " --ids-output {output.ids:q} --seed {wildcards.seed:q} > {log:q} 2>&1"


def lib_decode_inputs(wildcards):
    """Model, vocabulary and the test inputs of one adversarial decode: every input clean except the
    randomised one, which is its deranged copy (text) or read through a deranged index (image)."""
    run = lib_run(wildcards)
    corpus = lib_corpus(wildcards)
    pair, testset, randomised = wildcards.pair, wildcards.testset, wildcards.randomised
    if randomised not in lib_randomised(wildcards.experiment, pair, wildcards.variant):
        raise ValueError(
            f"{wildcards.experiment}/{pair}/{wildcards.variant}: no input {randomised!r} to randomise"
        )
    deranged = f"data/{corpus}/{pair}/adversarial/{testset}.{randomised}.seed{wildcards.seed}"
    text = lambda lang: deranged if lang == randomised else lib_text_source(corpus, pair, testset, lang)
    average = lib_decode(wildcards, "average_last")
    inputs = {
        "model": f"models/runs/{run.id}/averaged-last{average}.pt",
        "vocab": f"data/{corpus}/{pair}/bpe/vocab.txt",
        "source": text(pair.split("-")[0]),
    }
    for k, lang in enumerate(lib_extra_langs(wildcards.experiment, wildcards.variant)):
        inputs[f"extra_{k}"] = text(lang)
    if lib_check_features(wildcards.experiment, wildcards.variant):
        inputs["features"] = f"data/{corpus}/{pair}/inputs/{testset}.resnet.npy"
        if randomised == "image":
            inputs["feature_index"] = f"{deranged}.index"
    return inputs


def lib_decode_args(wildcards, input):
    args = []
    for key in input.keys():
        if key.startswith("extra_"):
            args += ["--extra-source", input[key]]
    for key, option in (("features", "--features"), ("feature_index", "--feature-index")):
        if key in input.keys():
            args += [option, input[key]]
    return args


def lib_decode(wildcards, key):
    """A decode setting of the experiment (the same search as its clean translation)."""
    return DECODES[decode_id(wildcards.experiment)][key]


rule libovicky2018_translate:
    input:
        unpack(lib_decode_inputs),
    output:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.{randomised}.seed{seed}.bpe.hyp",
    log:
        "logs/libovicky2018/translate/{experiment}/{pair}/{variant}/{testset}.{randomised}.seed{seed}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
        randomised="[a-z]+",
        seed="[0-9]+",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        extras=lib_decode_args,
        beam=lambda wc: lib_decode(wc, "beam"),
        alpha=lambda wc: lib_decode(wc, "alpha"),
        max_len_a=lambda wc: lib_decode(wc, "max_len_a"),
        max_len_b=lambda wc: lib_decode(wc, "max_len_b"),
        dtype=lambda wc: lib_decode(wc, "dtype"),
    shell:
        "nmtvariants translate --checkpoint {input.model:q} --vocab {input.vocab:q} --input {input.source:q}"
        " {params.extras:q} --output {output:q} --beam {params.beam:q} --alpha {params.alpha:q}"
        " --max-len-a {params.max_len_a:q} --max-len-b {params.max_len_b:q} --dtype {params.dtype:q}"
        " --threads {threads} > {log:q} 2>&1"


rule libovicky2018_postprocess:
    input:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.{randomised}.seed{seed}.bpe.hyp",
    output:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.{randomised}.seed{seed}.hyp",
    log:
        "logs/libovicky2018/postprocess/{experiment}/{pair}/{variant}/{testset}.{randomised}.seed{seed}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
        randomised="[a-z]+",
        seed="[0-9]+",
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        truecased=lambda wc: ["--truecased"] if CORPORA[lib_corpus(wc)]["preprocess"]["truecase"] else [],
    shell:
        "nmtvariants postprocess -l {params.lang:q} {params.truecased:q} -o {output:q} {input:q} > {log:q} 2>&1"


def lib_hypothesis(wildcards):
    if wildcards.name == "clean":  # the experiment's own post-processed translation (rules/evaluate.smk)
        return f"results/{wildcards.experiment}/{wildcards.pair}/{wildcards.variant}/{wildcards.testset}.hyp"
    folder = lib_folder(wildcards.experiment, wildcards.pair, wildcards.variant)
    return f"{folder}/{wildcards.testset}.{wildcards.name}.hyp"


rule libovicky2018_score:
    input:
        hyp=lib_hypothesis,
        ref=lambda wc: f"data/{lib_corpus(wc)}/raw/{wc.testset}.{wc.pair.split('-')[1]}",
    output:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.{name}.json",
    log:
        "logs/libovicky2018/score/{experiment}/{pair}/{variant}/{testset}.{name}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
        name=r"clean|[a-z]+\.seed[0-9]+",
    conda:
        "../../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        system="{experiment}/{pair}/{variant}/{name}",
    shell:
        "nmtvariants evaluate --hyp {input.hyp:q} --ref {input.ref:q} -l {params.lang:q}"
        " --metrics bleu,meteor --preprocess multi30k --system {params.system:q}"
        " --testset {wildcards.testset:q} --json {output:q} > {log:q} 2>&1"


def lib_adversarial_runs(wildcards):
    folder = lib_folder(wildcards.experiment, wildcards.pair, wildcards.variant)
    return {
        f"{randomised}_{seed}": f"{folder}/{wildcards.testset}.{randomised}.seed{seed}.json"
        for randomised in lib_randomised(wildcards.experiment, wildcards.pair, wildcards.variant)
        for seed in LIBOVICKY2018_SEEDS
    }


rule libovicky2018_adversarial:
    input:
        unpack(lib_adversarial_runs),
        clean="results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.clean.json",
    output:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.adversarial.json",
    log:
        "logs/libovicky2018/adversarial/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
    conda:
        "../../envs/evaluate.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        runs=lambda wc, input: [
            word
            for key in input.keys()
            if key != "clean"
            for word in ("--run", f"{key.rsplit('_', 1)[0]}={input[key]}")
        ],
    shell:
        "nmtvariants adversarial-summary --clean {input.clean:q} {params.runs:q} --metrics bleu,meteor"
        " --json {output:q} > {log:q} 2>&1"


# --- the attention figure ------------------------------------------------------------------------------


def lib_attention_inputs(wildcards):
    run = lib_run(wildcards)
    corpus = lib_corpus(wildcards)
    src, tgt = wildcards.pair.split("-")
    base = f"data/{corpus}/{wildcards.pair}"
    average = lib_decode(wildcards, "average_last")
    inputs = {
        "model": f"models/runs/{run.id}/averaged-last{average}.pt",
        "vocab": f"{base}/bpe/vocab.txt",
        "source": f"{base}/bpe/{wildcards.testset}.{src}",
        "target": f"{base}/bpe/{wildcards.testset}.{tgt}",
    }
    for k, lang in enumerate(lib_extra_langs(wildcards.experiment, wildcards.variant)):
        inputs[f"extra_{k}"] = f"{base}/inputs/{wildcards.testset}.src_{lang}"
    if lib_check_features(wildcards.experiment, wildcards.variant):
        inputs["features"] = f"{base}/inputs/{wildcards.testset}.resnet.npy"
    return inputs


rule libovicky2018_attention:
    input:
        unpack(lib_attention_inputs),
    output:
        "results/libovicky2018/{experiment}/{pair}/{variant}/{testset}.attention.csv",
    log:
        "logs/libovicky2018/attention/{experiment}/{pair}/{variant}/{testset}.log",
    wildcard_constraints:
        testset="[A-Za-z0-9_-]+",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        extras=lib_decode_args,
        memories=lambda wc: ",".join(lib_memories(wc.experiment, wc.pair, wc.variant)),
        sentences=LIBOVICKY2018_ATTENTION_SENTENCES,
    shell:
        "nmtvariants libovicky2018-attention --checkpoint {input.model:q} --vocab {input.vocab:q}"
        " --source {input.source:q} --target {input.target:q} {params.extras:q}"
        " --memories {params.memories:q} --max-sentences {params.sentences:q} --threads {threads}"
        " --csv {output:q} > {log:q} 2>&1"


def lib_attention_series():
    labels = {"table1_mmt": "MMT", "table2_multisource": "multi-source"}
    return {
        f"{labels[lib_kind(e)]} {p} {lib_strategy(e, v)} ({e}/{v})": f"{lib_folder(e, p, v)}/{t}.attention.csv"
        for e, p, v, t in lib_attention_systems()
    }


rule libovicky2018_attention_figure_data:
    input:
        lambda wc: list(lib_attention_series().values()),
    output:
        "results/figures/libovicky2018/attention_layers.csv",
    log:
        "logs/libovicky2018/attention_layers.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        inputs=lambda wc: [
            word
            for series, path in lib_attention_series().items()
            for word in ("--input", f"{series}={path}")
        ],
    shell:
        "nmtvariants libovicky2018-join {params.inputs:q} --csv {output:q} > {log:q} 2>&1"


# --- Tables 1 and 2 --------------------------------------------------------------------------------

LIBOVICKY2018_TITLES = {
    "table1_mmt": "Libovický et al. (2018) Table 1: multimodal translation (BLEU, METEOR; adversarial"
    " BLEU with deranged images)",
    "table2_multisource": "Libovický et al. (2018) Table 2: multi-source translation (BLEU, METEOR;"
    " adversarial BLEU with one source language deranged)",
}


def lib_table_notes(kind):
    images = ""
    if kind == "table1_mmt":
        corpora = sorted({EXPERIMENTS[e]["corpus"] for e, *_ in lib_systems(kind)})
        toy = [c for c in corpora if CORPORA[c]["source"] == "toyworld"]
        images = (
            f" Image features: ResNet-{IMAGE_FEATURES['depth']} last convolutional block at"
            f" {IMAGE_FEATURES['size']} px, weights {IMAGE_FEATURES['weights']}"
            + (" (random: a fixed-seed untrained ResNet built by the pipeline offline, NOT ImageNet"
               " features)" if IMAGE_FEATURES["weights"] == "random" else "")
            + (f"; on {', '.join(toy)}: toyworld's rendered scenes" if toy else "")
            + "."
        )
    return (
        "BLEU and METEOR on lower-cased, Moses-normalised and tokenised text (`evaluate --preprocess"
        " multi30k`, the WMT multimodal evaluation; METEOR as evaluation/meteor_ribes.py computes it)."
        f" adv. BLEU (X): mean over {len(LIBOVICKY2018_SEEDS)} derangement seeds"
        f" ({', '.join(map(str, LIBOVICKY2018_SEEDS))}) of BLEU with input X of every test sentence"
        " replaced by another sentence's; ± the sample standard deviation over the seeds."
        " Baseline rows are the same data through the single-input model (shared run)." + images
    )


def lib_table_inputs(wildcards):
    inputs = {}
    for k, (e, p, v, t) in enumerate(lib_systems(wildcards.table)):
        folder = lib_folder(e, p, v)
        inputs[f"clean_{k}"] = f"{folder}/{t}.clean.json"
        if lib_inputs(e, v):
            inputs[f"adversarial_{k}"] = f"{folder}/{t}.adversarial.json"
    return inputs


def lib_table_args(wildcards, input):
    args = []
    for k, (e, p, v, t) in enumerate(lib_systems(wildcards.table)):
        label = lib_strategy(e, v) or (
            "text-only baseline" if wildcards.table == "table1_mmt" else "single-source baseline"
        )
        args += ["--system", f"{p}:{t}={label}", "--clean", input[f"clean_{k}"]]
        if f"adversarial_{k}" in input.keys():
            args += ["--adversarial", f"{k + 1}={input[f'adversarial_{k}']}"]
    return args


rule libovicky2018_table:
    input:
        unpack(lib_table_inputs),
    output:
        md="results/tables/libovicky2018/{table}.md",
        csv="results/tables/libovicky2018/{table}.csv",
        provenance="results/tables/libovicky2018/{table}.provenance.json",
    log:
        "logs/libovicky2018/{table}.log",
    wildcard_constraints:
        table="table1_mmt|table2_multisource",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        args=lib_table_args,
        title=lambda wc: LIBOVICKY2018_TITLES[wc.table],
        notes=lambda wc: lib_table_notes(wc.table),
    shell:
        "nmtvariants libovicky2018-table {params.args:q} --title {params.title:q} --notes {params.notes:q}"
        " --output {output.md:q} > {log:q} 2>&1"
