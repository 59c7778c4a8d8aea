# Yang et al. (2020), the decoder's sub-layers: Tables 1, 2 and 4 and Figures 3, 4-7, 8 and 10 from
# the shared training runs of every experiment with `study: yang2020` (src/nmtvariants/studies/
# yang2020.py says what each table and figure holds).
#
#   reconstruction-probes  per standard/simplified system: a probe per decoder layer and module,
#                          trained on the first training sentences, perplexity on the test set
#   yang2020-layer-aer     per system, on a corpus with gold alignments (toyworld) or, for an EN-FR
#                          pair of a corpus without them, on the Hansards gold set: AER and
#                          cumulative coverage of each layer's SEM attention (table layer_aer)
#   yang2020-gold-chain    the Hansards English and French (their own tokens) through the pair's
#                          trained truecaser and BPE, with a word-count check per line
#   yang2020-decode-speed  per (experiment, pair) with a simplified decoder: both timed in one job
#
# Gold alignments: toyworld's raw/{split}.en-{tgt}.align (0-based Pharaoh `i-j`, sure links only,
# source first) index the Moses tokens *before* hyphen splitting, while the corpus is tokenised with
# `aggressive_hyphen` (dark-blue -> dark @-@ blue; German material compounds Metall @-@ Stern: about
# a quarter of toyworld's test pairs), and `layer-aer` counts every BPE-joined token as a word. So
# the study's `yang2020-layer-aer` runs layer-aer's computation with words glued across `@-@`
# (every gold link is checked against those word counts). An EN-FR (or FR-EN) pair of a corpus
# without its own gold (GOLD in nmtvariants.studies.yang2020.plan) is scored on the Hansards
# EN-FR gold (HANSARDS there; catalogue `hansards_enfr_align`, from `mirror:` first): its
# lower-cased, tokenised text keeps its tokens (the gold indexes them) and only goes through the
# pair's normalisation, truecaser and BPE (and hyphen split/escaping if the corpus has them), and
# every line's word count is checked against the gold's tokens. Other corpora get no AER (WMT
# EN-DE: the RWTH gold is licence-gated; see experiments/yang2020.yaml).
#
# Seeds: Tables 1, 2 and 4, the reconstruction probes (Figs. 3, 8, 10) and the layer AER (table and
# Figs. 4-7) read every replica of an experiment with `seeds:` (mean ± sd over seeds; the {variant} of
# rules yang2020_probes and yang2020_layer_aer serves each replica's folder); the decoding speed is
# timed on each system's first seed (every seed has the same architecture).
import json
import os

from nmtvariants.studies.yang2020.plan import (
    HANSARDS,
    HANSARDS_RAW,
    PROBE_FIGURES,
    TABLE_KINDS,
    Yang2020Plan,
)

# the study's systems and every path the rules below use; its tables and figures
YANG = Yang2020Plan(config, RUN_OF)
register_plan(YANG)


rule yang2020_probes:
    input:
        unpack(lambda wc: YANG.probe_inputs(wc.experiment, wc.pair, wc.variant)),
    output:
        "results/yang2020/{experiment}/{pair}/{variant}/probes.csv",
    log:
        "logs/yang2020/{experiment}/{pair}/{variant}/probes.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(8000),
        runtime=grown_runtime(240),
        gpu=lambda wc: YANG.gpus(
            YANG.replica_system(wc.experiment, wc.pair, wc.variant)
        ),
    params:
        caps=lambda wc: YANG.probe_options(
            YANG.replica_system(wc.experiment, wc.pair, wc.variant)
        ),
        device=lambda wc: YANG.device(
            YANG.replica_system(wc.experiment, wc.pair, wc.variant)
        ),
    shell:
        launch(
            "reconstruction-probes --checkpoint {input.checkpoint:q} --vocab {input.vocab:q}"
            " --source {input.source:q} --target {input.target:q} --test-source {input.test_source:q}"
            " --test-target {input.test_target:q} {params.caps:q} --label {wildcards.variant:q}"
            " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"
        )


rule yang2020_layer_aer:
    input:
        unpack(lambda wc: YANG.aer_inputs(wc.experiment, wc.pair, wc.variant)),
    output:
        "results/yang2020/{experiment}/{pair}/{variant}/layer_aer.csv",
    log:
        "logs/yang2020/{experiment}/{pair}/{variant}/layer_aer.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(60),
        gpu=lambda wc: YANG.gpus(
            YANG.replica_system(wc.experiment, wc.pair, wc.variant)
        ),
    params:
        gold=lambda wc: YANG.aer_options(wc.experiment, wc.pair, wc.variant),
        device=lambda wc: YANG.device(
            YANG.replica_system(wc.experiment, wc.pair, wc.variant)
        ),
    shell:
        launch(
            "yang2020-layer-aer --checkpoint {input.checkpoint:q} --vocab {input.vocab:q}"
            " --src {input.src:q} --tgt {input.tgt:q} --gold {input.gold:q} {params.gold:q}"
            " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"
        )


rule yang2020_hansards_download:
    output:
        [
            f"{HANSARDS_RAW}/{name}"
            for name in ("test.talp", "test.orig.en", "test.orig.fr")
        ],
    log:
        "logs/yang2020/hansards_download.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(30),
    params:
        source=HANSARDS,
        dest=lambda wildcards, output: os.path.dirname(output[0]),
        mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
    shell:
        "nmtvariants download {params.source:q} --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"


rule yang2020_gold_chain:
    input:
        text=f"{HANSARDS_RAW}/test.orig.{{lang}}",
        truecase=truecase_model,
        codes="data/{corpus}/{pair}/bpe/codes",
        vocab="data/{corpus}/{pair}/bpe/vocab.{lang}",
    output:
        f"data/{{corpus}}/{{pair}}/gold_{HANSARDS}/test.{{lang}}",
    log:
        f"logs/yang2020/gold_chain/{{corpus}}/{{pair}}/{HANSARDS}.{{lang}}.log",
    conda:
        "../../envs/text.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        corpus_dir=lambda wildcards, input: os.path.dirname(
            os.path.dirname(input.codes)
        ),
        preprocess=lambda wc: json.dumps(YANG.preprocess(wc.corpus), sort_keys=True),
    shell:
        "nmtvariants yang2020-gold-chain --corpus-dir {params.corpus_dir:q} -l {wildcards.lang:q}"
        " --preprocess {params.preprocess:q} --input {input.text:q} --output {output:q} > {log:q} 2>&1"


rule yang2020_decode_speed:
    input:
        unpack(lambda wc: YANG.speed_inputs(wc.experiment, wc.pair)),
    output:
        "results/yang2020/{experiment}/{pair}/decode_speed.json",
    log:
        "logs/yang2020/{experiment}/{pair}/decode_speed.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(60),
        gpu=lambda wc: YANG.gpus(YANG.speed_pair(wc.experiment, wc.pair)[0]),
    params:
        checkpoints=lambda wc, input: [
            "--checkpoint",
            f"standard={input.standard}",
            "--checkpoint",
            f"simplified={input.simplified}",
        ],
        sentences=lambda wc: YANG.speed_sentences(
            YANG.speed_pair(wc.experiment, wc.pair)[0]
        ),
        beam=lambda wc: YANG.evaluate(
            YANG.speed_pair(wc.experiment, wc.pair)[0], "beam"
        ),
        alpha=lambda wc: YANG.evaluate(
            YANG.speed_pair(wc.experiment, wc.pair)[0], "alpha"
        ),
        max_len_a=lambda wc: YANG.evaluate(
            YANG.speed_pair(wc.experiment, wc.pair)[0], "max_len_a"
        ),
        max_len_b=lambda wc: YANG.evaluate(
            YANG.speed_pair(wc.experiment, wc.pair)[0], "max_len_b"
        ),
        device=lambda wc: YANG.device(YANG.speed_pair(wc.experiment, wc.pair)[0]),
    shell:
        launch(
            "yang2020-decode-speed {params.checkpoints:q} --vocab {input.vocab:q}"
            " --input {input.source:q} --max-sentences {params.sentences:q} --beam {params.beam:q}"
            " --alpha {params.alpha:q} --max-len-a {params.max_len_a:q} --max-len-b {params.max_len_b:q}"
            " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"
        )


rule yang2020_table:
    input:
        manifest_files(lambda wc: YANG.table_entries[wc.table]),
    output:
        md="results/tables/yang2020/{table}.md",
        csv="results/tables/yang2020/{table}.csv",
        provenance="results/tables/yang2020/{table}.provenance.json",
    log:
        out="logs/tables/yang2020/{table}.log",
        manifest="logs/tables/yang2020/{table}.manifest.json",
    wildcard_constraints:
        table=YANG.regex(YANG.table_entries),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: YANG.table_entries[wc.table]),
        kind=lambda wc: TABLE_KINDS[wc.table],
    shell:
        with_manifest(
            "nmtvariants yang2020-table --kind {params.kind:q} --manifest {log.manifest:q}"
            " --out {output.md:q} > {log.out:q} 2>&1"
        )


rule yang2020_probe_figures:
    input:
        manifest_files(lambda wc: YANG.replica_entries(YANG.probed, "probes")),
    output:
        [
            f"results/figures/yang2020/{figure}_{side}.csv"
            for figure in PROBE_FIGURES
            for side in ("source", "target")
        ],
    log:
        out="logs/yang2020/probe_figures.log",
        manifest="logs/yang2020/probe_figures.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: YANG.replica_entries(YANG.probed, "probes")),
    shell:
        with_manifest(
            "nmtvariants yang2020-figure-data --kind probes --manifest {log.manifest:q}"
            " --outdir results/figures/yang2020 > {log.out:q} 2>&1"
        )


rule yang2020_aer_figures:
    input:
        manifest_files(lambda wc: YANG.aer_entries()),
    output:
        [
            f"results/figures/yang2020/figs4_7_{metric}.csv"
            for metric in ("aer", "coverage")
        ],
    log:
        out="logs/yang2020/aer_figures.log",
        manifest="logs/yang2020/aer_figures.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: YANG.aer_entries()),
    shell:
        with_manifest(
            "nmtvariants yang2020-figure-data --kind aer --manifest {log.manifest:q}"
            " --outdir results/figures/yang2020 > {log.out:q} 2>&1"
        )
