# Yang et al. (2020), the decoder's sub-layers: Tables 1, 2 and 4 and Figures 3, 4-7, 8 and 10 from
# the shared training runs of every experiment with `study: yang2020` (src/nmtvariants/studies/
# yang2020.py says what each table and figure holds).
#
#   reconstruction-probes  per standard/simplified system: a probe per decoder layer and module,
#                          trained on the first training sentences, perplexity on the test set
#   layer-aer              per system, on a corpus with gold alignments (toyworld): AER and
#                          cumulative coverage of each layer's SEM attention
#   yang2020-decode-speed  per (experiment, pair) with a simplified decoder: both decoders timed in one job
#
# Gold alignments: toyworld's raw/{split}.en-{tgt}.align (0-based Pharaoh `i-j`, sure links only,
# source first) index the Moses tokens *before* hyphen splitting, while the corpus is tokenised with
# `aggressive_hyphen` (dark-blue -> dark @-@ blue), and layer-aer counts every BPE-joined token as a
# word. So rule yang2020_aer_set keeps the test pairs with no `@-@` on either side (the dropped line
# numbers are in its report); on the kept pairs the BPE-joined tokens are the gold's words, and
# layer-aer checks every link against those word counts. Corpora without a gold set here get no AER
# figures (WMT: the RWTH DE-EN gold is licence-gated; see experiments/yang2020.yaml).
import json
from dataclasses import asdict

from nmtvariants.studies.yang2020 import (
    SIMPLIFIED,
    STANDARD,
    depth_systems,
    layout_systems,
    simplified_pairs,
    study_systems,
)

YANG_SYSTEMS = study_systems(config)
YANG_GOLD = {"toyworld": "data/toyworld/raw/{testset}.{pair}.align"}  # corpus -> gold links
# Probe size and caps per model preset: tiny keeps the demo's probes to seconds each; the paper's
# probes (its §3.1: one decoder layer of the model's width, trained on MT training data) at full scale.
YANG_PROBES = {
    "tiny": dict(max_sentences=300, max_epochs=3, d_model=64, heads=4, d_ff=256, batch_sentences=32),
    "default": dict(
        max_sentences=20000, max_epochs=20, d_model=512, heads=8, d_ff=2048, batch_sentences=64
    ),
}
YANG_SPEED_SENTENCES = {"tiny": 100, "default": 1000}  # test sentences timed per decoder


def yang_system(wildcards):
    for system in YANG_SYSTEMS:
        if (system.experiment, system.pair, system.variant) == (
            wildcards.experiment,
            wildcards.pair,
            wildcards.variant,
        ):
            return system
    raise ValueError(
        f"{wildcards.experiment}/{wildcards.pair}/{wildcards.variant}: not a yang2020 system"
    )


def yang_size(system, table):
    return table.get(system.size, table["default"])


def yang_checkpoint(system):
    average = EXPERIMENTS[system.experiment]["average_last"]
    return f"{run_dir(system.experiment, system.pair, system.variant)}/averaged-last{average}.pt"


def yang_corpus(system):
    return EXPERIMENTS[system.experiment]["corpus"]


def yang_bpe(system, split, side):
    lang = system.pair.split("-")[0 if side == "src" else 1]
    return f"data/{yang_corpus(system)}/{system.pair}/bpe/{split}.{lang}"


def yang_testsets(system):
    return EXPERIMENTS[system.experiment]["evaluate"]["testsets"]


def yang_device(system):
    return "cuda" if EXPERIMENTS[system.experiment]["resources"]["gpus"] > 0 else "cpu"


def yang_folder(system):
    return f"results/yang2020/{system.experiment}/{system.pair}/{system.variant}"


def yang_aer_set(system):
    """The gold-aligned pairs layer-aer scores: the first test set, hyphen-split pairs dropped."""
    base = f"results/yang2020/aer/{yang_corpus(system)}/{system.pair}/{yang_testsets(system)[0]}"
    return {side: f"{base}.{side}" for side in ("src", "tgt", "align")}


def yang_has_gold(system):
    return yang_corpus(system) in YANG_GOLD


def yang_entry(system, **files):
    return {"system": asdict(system), **files}


def yang_score_entries(systems):
    return [
        yang_entry(
            s,
            testset=testset,
            scores=f"results/{s.experiment}/{s.pair}/{s.variant}/{testset}.scores.json",
        )
        for s in systems
        for testset in yang_testsets(s)
    ]


def yang_simplified_entries():
    entries = []
    for standard, simplified in simplified_pairs(YANG_SYSTEMS):
        speed = f"results/yang2020/{standard.experiment}/{standard.pair}/decode_speed.json"
        for system in (standard, simplified):
            for entry in yang_score_entries([system]):
                entries.append(
                    {
                        **entry,
                        "checkpoint": yang_checkpoint(system),
                        "train_log": f"{run_dir(system.experiment, system.pair, system.variant)}/train_log.csv",
                        "decode_speed": speed,
                    }
                )
    return entries


def yang_entry_files(entries, *keys):
    """The files of entries (train_log is read beside final.pt, which is what Snakemake tracks)."""
    files = []
    for entry in entries:
        for key in keys:
            path = entry[key]
            files.append(
                path.replace("train_log.csv", "final.pt") if key == "train_log" else path
            )
    return unique(files)


# Figures 3, 8 and 10 are the base-size (or toy) models' (the paper's); big models are not probed.
YANG_PROBED = [
    s
    for s in YANG_SYSTEMS
    if s.default_depth and s.layout in (STANDARD, SIMPLIFIED) and s.size != "big"
]
YANG_ALIGNED = [s for s in YANG_SYSTEMS if yang_has_gold(s)]
YANG_TABLES = {
    "table1_layouts": ("layouts", yang_score_entries(layout_systems(YANG_SYSTEMS))),
    "table2_depth": ("depth", yang_score_entries(depth_systems(YANG_SYSTEMS))),
    "table4_simplified": ("simplified", yang_simplified_entries()),
}
YANG_TABLES = {name: spec for name, spec in YANG_TABLES.items() if spec[1]}
YANG_PROBE_FIGURES = {
    "fig3": "Figure 3: reconstruction perplexity per decoder layer and module (standard decoder)",
    "fig8": "Figure 8: IFM's operations (standard decoder)",
    "fig10": "Figure 10: simplified against standard decoder",
}

for _name in YANG_TABLES:
    register_table("yang2020", f"results/tables/yang2020/{_name}.md")
if any(s.layout == STANDARD for s in YANG_PROBED):
    for _figure, _title in YANG_PROBE_FIGURES.items():
        for _side in ("source", "target"):
            register_figure(
                "yang2020",
                f"results/figures/yang2020/{_figure}_{_side}.png",
                "layers",
                y="perplexity",
                group="series",
                title=f"{_title}: {_side} reconstruction",
                ylabel=f"{_side} perplexity",
            )
if YANG_ALIGNED:
    for _metric, _label in (("aer", "AER"), ("coverage", "cumulative coverage")):
        register_figure(
            "yang2020",
            f"results/figures/yang2020/figs4_7_{_metric}.png",
            "layers",
            y=_metric,
            group="series",
            title=f"Figures 4-7: {_label} of each layer's SEM alignment",
            ylabel=_label,
        )


rule yang2020_probes:
    input:
        checkpoint=lambda wc: yang_checkpoint(yang_system(wc)),
        vocab=lambda wc: f"data/{yang_corpus(yang_system(wc))}/{wc.pair}/bpe/vocab.txt",
        source=lambda wc: yang_bpe(yang_system(wc), CORPORA[yang_corpus(yang_system(wc))]["train"], "src"),
        target=lambda wc: yang_bpe(yang_system(wc), CORPORA[yang_corpus(yang_system(wc))]["train"], "tgt"),
        test_source=lambda wc: yang_bpe(yang_system(wc), yang_testsets(yang_system(wc))[0], "src"),
        test_target=lambda wc: yang_bpe(yang_system(wc), yang_testsets(yang_system(wc))[0], "tgt"),
    output:
        "results/yang2020/{experiment}/{pair}/{variant}/probes.csv",
    log:
        "logs/yang2020/{experiment}/{pair}/{variant}/probes.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=8000,
        runtime=240,
    params:
        caps=lambda wc: [
            f"--{key.replace('_', '-')}={value}"
            for key, value in yang_size(yang_system(wc), YANG_PROBES).items()
        ],
        device=lambda wc: yang_device(yang_system(wc)),
    shell:
        "nmtvariants reconstruction-probes --checkpoint {input.checkpoint:q} --vocab {input.vocab:q}"
        " --source {input.source:q} --target {input.target:q} --test-source {input.test_source:q}"
        " --test-target {input.test_target:q} {params.caps:q} --label {wildcards.variant:q}"
        " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"


rule yang2020_aer_set:
    input:
        src=lambda wc: f"data/{wc.corpus}/{wc.pair}/bpe/{wc.testset}.{wc.pair.split('-')[0]}",
        tgt=lambda wc: f"data/{wc.corpus}/{wc.pair}/bpe/{wc.testset}.{wc.pair.split('-')[1]}",
        gold=lambda wc: YANG_GOLD[wc.corpus].format(testset=wc.testset, pair=wc.pair),
    output:
        src="results/yang2020/aer/{corpus}/{pair}/{testset}.src",
        tgt="results/yang2020/aer/{corpus}/{pair}/{testset}.tgt",
        gold="results/yang2020/aer/{corpus}/{pair}/{testset}.align",
        report="results/yang2020/aer/{corpus}/{pair}/{testset}.json",
    log:
        "logs/yang2020/aer/{corpus}/{pair}/{testset}.log",
    wildcard_constraints:
        corpus="|".join(YANG_GOLD),
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "nmtvariants yang2020-aer-set --src {input.src:q} --tgt {input.tgt:q} --gold {input.gold:q}"
        " --out-src {output.src:q} --out-tgt {output.tgt:q} --out-gold {output.gold:q}"
        " --report {output.report:q} > {log:q} 2>&1"


rule yang2020_layer_aer:
    input:
        checkpoint=lambda wc: yang_checkpoint(yang_system(wc)),
        vocab=lambda wc: f"data/{yang_corpus(yang_system(wc))}/{wc.pair}/bpe/vocab.txt",
        src=lambda wc: yang_aer_set(yang_system(wc))["src"],
        tgt=lambda wc: yang_aer_set(yang_system(wc))["tgt"],
        gold=lambda wc: yang_aer_set(yang_system(wc))["align"],
    output:
        "results/yang2020/{experiment}/{pair}/{variant}/layer_aer.csv",
    log:
        "logs/yang2020/{experiment}/{pair}/{variant}/layer_aer.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        device=lambda wc: yang_device(yang_system(wc)),
    shell:
        "nmtvariants layer-aer --checkpoint {input.checkpoint:q} --vocab {input.vocab:q}"
        " --src {input.src:q} --tgt {input.tgt:q} --gold {input.gold:q} --format pharaoh"
        " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"


def yang_speed_pair(wildcards):
    for standard, simplified in simplified_pairs(YANG_SYSTEMS):
        if (standard.experiment, standard.pair) == (wildcards.experiment, wildcards.pair):
            return standard, simplified
    raise ValueError(f"{wildcards.experiment}/{wildcards.pair}: no simplified decoder to time")


rule yang2020_decode_speed:
    input:
        standard=lambda wc: yang_checkpoint(yang_speed_pair(wc)[0]),
        simplified=lambda wc: yang_checkpoint(yang_speed_pair(wc)[1]),
        vocab=lambda wc: f"data/{yang_corpus(yang_speed_pair(wc)[0])}/{wc.pair}/bpe/vocab.txt",
        source=lambda wc: yang_bpe(yang_speed_pair(wc)[0], yang_testsets(yang_speed_pair(wc)[0])[0], "src"),
    output:
        "results/yang2020/{experiment}/{pair}/decode_speed.json",
    log:
        "logs/yang2020/{experiment}/{pair}/decode_speed.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        checkpoints=lambda wc, input: [
            "--checkpoint",
            f"{STANDARD}={input.standard}",
            "--checkpoint",
            f"{SIMPLIFIED}={input.simplified}",
        ],
        sentences=lambda wc: yang_size(yang_speed_pair(wc)[0], YANG_SPEED_SENTENCES),
        beam=lambda wc: EXPERIMENTS[wc.experiment]["evaluate"]["beam"],
        alpha=lambda wc: EXPERIMENTS[wc.experiment]["evaluate"]["alpha"],
        max_len_a=lambda wc: EXPERIMENTS[wc.experiment]["evaluate"]["max_len_a"],
        max_len_b=lambda wc: EXPERIMENTS[wc.experiment]["evaluate"]["max_len_b"],
        device=lambda wc: yang_device(yang_speed_pair(wc)[0]),
    shell:
        "nmtvariants yang2020-decode-speed {params.checkpoints:q} --vocab {input.vocab:q}"
        " --input {input.source:q} --max-sentences {params.sentences:q} --beam {params.beam:q}"
        " --alpha {params.alpha:q} --max-len-a {params.max_len_a:q} --max-len-b {params.max_len_b:q}"
        " --device {params.device:q} --threads {threads} --output {output:q} > {log:q} 2>&1"


rule yang2020_table:
    input:
        lambda wc: yang_entry_files(
            YANG_TABLES[wc.table][1], "scores", "checkpoint", "train_log", "decode_speed"
        )
        if YANG_TABLES[wc.table][0] == "simplified"
        else yang_entry_files(YANG_TABLES[wc.table][1], "scores"),
    output:
        md="results/tables/yang2020/{table}.md",
        csv="results/tables/yang2020/{table}.csv",
        provenance="results/tables/yang2020/{table}.provenance.json",
    log:
        "logs/tables/yang2020/{table}.log",
    wildcard_constraints:
        table="|".join(YANG_TABLES) or "(?!)",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        kind=lambda wc: YANG_TABLES[wc.table][0],
        entries=lambda wc: json.dumps(YANG_TABLES[wc.table][1]),
    shell:
        "nmtvariants yang2020-table --kind {params.kind:q} --entries {params.entries:q}"
        " --out {output.md:q} > {log:q} 2>&1"


rule yang2020_probe_figures:
    input:
        [f"{yang_folder(s)}/probes.csv" for s in YANG_PROBED],
    output:
        [
            f"results/figures/yang2020/{figure}_{side}.csv"
            for figure in YANG_PROBE_FIGURES
            for side in ("source", "target")
        ],
    log:
        "logs/yang2020/probe_figures.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        entries=json.dumps([yang_entry(s, csv=f"{yang_folder(s)}/probes.csv") for s in YANG_PROBED]),
    shell:
        "nmtvariants yang2020-figure-data --kind probes --entries {params.entries:q}"
        " --outdir results/figures/yang2020 > {log:q} 2>&1"


rule yang2020_aer_figures:
    input:
        [f"{yang_folder(s)}/layer_aer.csv" for s in YANG_ALIGNED],
    output:
        [f"results/figures/yang2020/figs4_7_{metric}.csv" for metric in ("aer", "coverage")],
    log:
        "logs/yang2020/aer_figures.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        entries=json.dumps(
            [yang_entry(s, csv=f"{yang_folder(s)}/layer_aer.csv") for s in YANG_ALIGNED]
        ),
    shell:
        "nmtvariants yang2020-figure-data --kind aer --entries {params.entries:q}"
        " --outdir results/figures/yang2020 > {log:q} 2>&1"
