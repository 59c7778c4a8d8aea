# Libovický, Helcl & Mareček (2018): multi-source decoders on multimodal (text + image) and
# multi-source (several languages) translation. Experiments with `study: libovicky2018` name the extra
# inputs of their variants (`inputs.<variant>: {features: resnet}` or `{sources: [src_<lang>, ...]}`);
# the rules here write those inputs, decode the test set again with one input deranged (adversarial
# evaluation, over libovicky2018.plan.SEEDS), score everything the Multi30k way (lower-cased, tokenised
# BLEU and METEOR) and build:
#   results/tables/libovicky2018/table1_mmt.md          (experiments whose variants read images)
#   results/tables/libovicky2018/table2_multisource.md  (experiments whose variants read more sources)
#   results/figures/libovicky2018/attention_layers.png  (flat and hierarchical variants)
#
# Inputs, written under data/<corpus>/<pair>/inputs/:
# * <split>.resnet.npy: the split's images through the ResNet of `image_features` (toyworld: its
#   rendered PNGs; downloaded corpora: the user's images under image_features.images), extracted once
#   per corpus (data/<corpus>/features/) and symbolically linked per pair;
# * <split>.src_<lang>: a further source language, the pair's bpe/<split>.<lang>: the pair's joint BPE is
#   learned on every language of a multi-source run (corpora.<c>.preprocess.bpe.shared_with, e.g.
#   {en-cs: [de, fr]}), one sub-word vocabulary as in the paper, and each further language follows the
#   pair's chain (rules/preprocess.smk: own Moses tokenisation, the pair's kept training lines, own
#   truecaser, the shared codes filtered by its own vocab.<lang>).
# A corpus whose sources are all Europarl v7 X-en bitexts (europarl_v7_<x>en) is the 5-way corpus the
# paper builds by pivoting on English: rule libovicky2018_europarl_<corpus> writes its raw files.
#
# Training seeds (`seeds:`): every rule with a {variant} wildcard serves each replica (<variant>-seed<N>
# for the further seeds), each replica is scored and deranged on its own, and Tables 1 and 2 give mean
# ± sd over the training seeds; the attention figure draws each line as the mean over the seeds' models
# with a ± sd band.

from nmtvariants.studies.libovicky2018 import plan as lib

LIBOVICKY2018 = lib.Libovicky2018Plan(config, RUN_OF)
# its tables and the attention figure
register_plan(LIBOVICKY2018)


rule libovicky2018_image_features:
    input:
        unpack(LIBOVICKY2018.image_inputs),
    output:
        npy="data/{corpus}/features/{split}.resnet.npy",
        ids="data/{corpus}/features/{split}.resnet.ids.txt",
        meta="data/{corpus}/features/{split}.resnet.json",
    log:
        "logs/libovicky2018/features/{corpus}/{split}.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(8000),
        runtime=grown_runtime(240),
        gpu=LIBOVICKY2018.image_gpus,
    params:
        list=LIBOVICKY2018.image_list,
        images=lambda wc: LIBOVICKY2018.image_setting(wc, "images"),
        depth=lambda wc: LIBOVICKY2018.image_setting(wc, "depth"),
        weights=lambda wc: LIBOVICKY2018.image_setting(wc, "weights"),
        size=lambda wc: LIBOVICKY2018.image_setting(wc, "size"),
        batch=lambda wc: LIBOVICKY2018.image_setting(wc, "batch_size"),
        standardise=lambda wc: LIBOVICKY2018.image_setting(wc, "standardise"),
        seed=config["seed"],
    shell:
        "(nmtvariants libovicky2018-images --images {params.images:q} --list {params.list:q} && "
        + launch(
            "image-features --images {params.images:q} --list {params.list:q}"
            " --output {output.npy:q} --depth {params.depth:q} --weights {params.weights:q}"
            " --size {params.size:q} --batch-size {params.batch:q} --seed {params.seed:q}"
            " --standardise {params.standardise:q}"
        )
        + ") > {log:q} 2>&1"


rule libovicky2018_pair_features:
    input:
        "data/{corpus}/features/{split}.resnet.npy",
    output:
        "data/{corpus}/{pair}/inputs/{split}.resnet.npy",
    log:
        "logs/libovicky2018/features/{corpus}/{pair}/{split}.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(500),
        runtime=grown_runtime(10),
    shell:
        # one extraction per corpus, shared by its pairs: a relative symbolic link, no copy of the grid.
        # Not a hard link: Snakemake touches a finished job's outputs, and through a hard link that
        # touch reaches the corpus file and makes everything built from it out of date.
        "ln -sfr {input:q} {output:q} 2> {log:q}"


# --- inputs: further source languages ---------------------------------------------------------------


rule libovicky2018_source:
    input:
        # the pair's chain for a language that shares its BPE (preprocess.bpe.shared_with; checked by
        # libovicky2018.plan.Libovicky2018Plan at start-up)
        "data/{corpus}/{pair}/bpe/{split}.{lang}",
    output:
        "data/{corpus}/{pair}/inputs/{split}.src_{lang}",
    log:
        "logs/libovicky2018/source/{corpus}/{pair}/{split}.{lang}.log",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(500),
        runtime=grown_runtime(10),
    shell:
        # the input name every study reads further sources under (config.input_files): a relative
        # symbolic link (see libovicky2018_pair_features for why not a hard link)
        "ln -sfr {input:q} {output:q} 2> {log:q}"


# --- the Europarl 5-way corpus (ES, FR, DE, CS with English as the pivot) ---------------------------


rule libovicky2018_europarl_bitext:
    output:
        foreign="data/libovicky2018/europarl/{lang}-en/train.{lang}",
        english="data/libovicky2018/europarl/{lang}-en/train.en",
    log:
        "logs/libovicky2018/europarl/{lang}-en.log",
    wildcard_constraints:
        lang="(?!en$)[a-z]+",
    priority: GATES_TRAINING_PRIORITY
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(240),
    params:
        source="europarl_v7_{lang}en",
        dest="data/libovicky2018/europarl/{lang}-en",
        mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
    shell:
        "nmtvariants download {params.source:q} --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"


for _name, _langs in LIBOVICKY2018.europarl.items():

    rule:
        name:
            f"libovicky2018_europarl_{_name}"
        input:
            [path for lang in _langs for path in LIBOVICKY2018.bitext(lang)],
        output:
            LIBOVICKY2018.europarl_outputs(_name),
        log:
            f"logs/libovicky2018/europarl/{_name}.log",
        conda:
            "../../envs/nmtvariants.yaml"
        threads: 1
        resources:
            mem_mb=input_sized_mb(16000),
            runtime=grown_runtime(240),
        params:
            bitexts=LIBOVICKY2018.europarl_args(_name),
            out=f"data/{_name}/raw",
            heldout=lib.EUROPARL_HELDOUT,
            seed=config["seed"],
        shell:
            "nmtvariants europarl-intersect {params.bitexts:q} --out-dir {params.out:q}"
            " --valid {params.heldout:q} --test {params.heldout:q} --seed {params.seed:q} > {log:q} 2>&1"

    # the corpus's download rule (rules/download.smk) would fetch the four bitexts as one corpus
    workflow.ruleorder(f"libovicky2018_europarl_{_name}", f"download_{_name}")


# --- adversarial evaluation -------------------------------------------------------------------------


rule libovicky2018_derange_text:
    input:
        LIBOVICKY2018.derange_input,
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
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    shell:
        "nmtvariants derange --input {input:q} --output {output:q} --seed {wildcards.seed:q} > {log:q} 2>&1"


rule libovicky2018_derange_image:
    input:
        # the corpus's features file: its image ids beside it keep identical images apart
        npy="data/{corpus}/features/{testset}.resnet.npy",
        ids="data/{corpus}/features/{testset}.resnet.ids.txt",
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
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    shell:
        "nmtvariants derange --kind features --input {input.npy:q} --output {output.index:q}"
        " --ids-output {output.ids:q} --seed {wildcards.seed:q} > {log:q} 2>&1"


rule libovicky2018_translate:
    input:
        unpack(LIBOVICKY2018.decode_inputs),
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
        mem_mb=decoding_mem_mb(4000),
        runtime=grown_runtime(120),
    params:
        extras=LIBOVICKY2018.input_args,
        beam=lambda wc: LIBOVICKY2018.decode(wc, "beam"),
        alpha=lambda wc: LIBOVICKY2018.decode(wc, "alpha"),
        max_len_a=lambda wc: LIBOVICKY2018.decode(wc, "max_len_a"),
        max_len_b=lambda wc: LIBOVICKY2018.decode(wc, "max_len_b"),
        dtype=lambda wc: LIBOVICKY2018.decode(wc, "dtype"),
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
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        truecased=LIBOVICKY2018.truecased,
    shell:
        "nmtvariants postprocess -l {params.lang:q} {params.truecased:q} -o {output:q} {input:q} > {log:q} 2>&1"


rule libovicky2018_score:
    input:
        hyp=LIBOVICKY2018.hypothesis,
        ref=LIBOVICKY2018.reference,
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
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        lang=lambda wc: wc.pair.split("-")[1],
        system="{experiment}/{pair}/{variant}/{name}",
        meteor=METEOR_ARGS,
    shell:
        "nmtvariants evaluate --hyp {input.hyp:q} --ref {input.ref:q} -l {params.lang:q}"
        " --metrics bleu,meteor {params.meteor:q} --preprocess multi30k --system {params.system:q}"
        " --testset {wildcards.testset:q} --json {output:q} > {log:q} 2>&1"


rule libovicky2018_adversarial:
    input:
        unpack(LIBOVICKY2018.adversarial_runs),
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
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        runs=LIBOVICKY2018.adversarial_args,
    shell:
        "nmtvariants adversarial-summary --clean {input.clean:q} {params.runs:q} --metrics bleu,meteor"
        " --json {output:q} > {log:q} 2>&1"


# --- the attention figure ------------------------------------------------------------------------------


rule libovicky2018_attention:
    input:
        unpack(LIBOVICKY2018.attention_inputs),
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
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(60),
    params:
        extras=LIBOVICKY2018.input_args,
        memories=lambda wc: ",".join(
            LIBOVICKY2018.memories(wc.experiment, wc.pair, wc.variant)
        ),
        sentences=lib.ATTENTION_SENTENCES,
    shell:
        "nmtvariants libovicky2018-attention --checkpoint {input.model:q} --vocab {input.vocab:q}"
        " --source {input.source:q} --target {input.target:q} {params.extras:q}"
        " --memories {params.memories:q} --max-sentences {params.sentences:q} --threads {threads}"
        " --csv {output:q} > {log:q} 2>&1"


rule libovicky2018_attention_figure_data:
    input:
        manifest_files(lambda wc: LIBOVICKY2018.attention_manifest()),
    output:
        "results/figures/libovicky2018/attention_layers.csv",
    log:
        out="logs/libovicky2018/attention_layers.log",
        manifest="logs/libovicky2018/attention_layers.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: LIBOVICKY2018.attention_manifest()),
    shell:
        with_manifest(
            "nmtvariants libovicky2018-join --manifest {log.manifest:q} --out {output:q} > {log.out:q} 2>&1"
        )


# --- Tables 1 and 2 --------------------------------------------------------------------------------


rule libovicky2018_table:
    input:
        manifest_files(lambda wc: LIBOVICKY2018.table_manifest(wc.table)),
    output:
        md="results/tables/libovicky2018/{table}.md",
        csv="results/tables/libovicky2018/{table}.csv",
        provenance="results/tables/libovicky2018/{table}.provenance.json",
    log:
        out="logs/libovicky2018/{table}.log",
        manifest="logs/libovicky2018/{table}.manifest.json",
    wildcard_constraints:
        table="|".join(lib.TABLES),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: LIBOVICKY2018.table_manifest(wc.table)),
        conditions=LIBOVICKY2018.table_conditions,
        title=lambda wc: lib.TITLES[wc.table],
        notes=LIBOVICKY2018.table_notes,
    shell:
        with_manifest(
            "nmtvariants libovicky2018-table --manifest {log.manifest:q} --table {wildcards.table:q}"
            " {params.conditions:q} --title {params.title:q} --notes {params.notes:q}"
            " --out {output.md:q} > {log.out:q} 2>&1"
        )
