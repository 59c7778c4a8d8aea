# Emelin, Titov & Sennrich (2019), lexical shortcuts: the study's analyses, tables and figures, built from
# the shared runs of every experiment with `study: emelin2019` (their scores tables come from
# rules/tables.smk). The commands and table builders live in src/nmtvariants/studies/emelin2019*.py.
#
#   Table 1   results/tables/emelin2019/table1_bleu.md     EN-DE: tok. BLEU and sacreBLEU per test set, mean
#   Table 2   results/tables/emelin2019/table2_pairs.md    the other pairs (registered when there are any:
#             add en-ru to the default experiment's pairs for EN-RU through the ISO 9 BPE path)
#   Table 3   results/tables/emelin2019/table3_small.md    small EN-DE models (when a `small` experiment exists);
#             its mean is over Table 1's test sets (the paper's "test mean"), each of which it must score
#   Table 4   results/tables/emelin2019/table4_variants.md the analysed experiment's variants: mean BLEU, Δ
#             (Tables 1-4 take the experiments evaluated with both bleu and tok-bleu)
#   Table 5   results/tables/emelin2019/table5_params_speed.md  parameters, training speed vs the baseline
#   bootstrap results/tables/emelin2019/bootstrap.md       sacreBLEU and chrF per test set, Δ and paired
#             bootstrap p-value of every variant against the baseline (the real-data comparison), over
#             sentences and every seed of both (the core rule `significance`, rules/evaluate.smk)
#   probes    results/tables/emelin2019/probes_frequency.md (and probes_pos.md where POS exists: source POS
#             for the encoder layers, target POS for the decoder layers; toyworld only). As the authors,
#             each probe trains on states of the NMT training corpus (its first sentences: the key
#             studies.emelin2019.probe_train_sentences), early-stops on the dev set, reports on the test set
#   gates     results/tables/emelin2019/gates.md           shortcut gate activations per layer
#   ContraWSD results/tables/emelin2019/contrawsd.md       accuracy overall, per sense, per frequency class
#   Figs 3-4, 6-7  results/figures/emelin2019/{probes,similarity}_{encoder,decoder}.png (Fig. 5, validation
#             BLEU of the encoder-/decoder-only ablations, is not drawn: their test BLEU is in Table 4)
#
# The analyses (probes, similarity, gates, bootstrap) run on the EN-DE pair of the first emelin2019
# experiment that is neither `big` nor `small` (the paper probes its transformer-BASE models), else of the
# first EN-DE one (experiments/multi30k_emelin2019.yaml), from each run's checkpoint average; ContraWSD runs on the first experiment and pair that has a ContraWSD set: toyworld's generated
# en-de set, or the real DE->EN set (catalogue `contrawsd_deen`) for a downloaded corpus's de-en pair.
# Seeds: Tables 1-4, the bootstrap and the lexical probes (tables and Figures 3-4; rule
# emelin2019_layer_probes's {variant} serves each replica's folder) read every seed of an experiment's
# `seeds` (mean ± sd, n), and so do the similarity (Figures 6-7), the gates and ContraWSD (one job per
# replica); Table 5 reads the first seed's runs (parameters are the same in every seed) and says so
# (Emelin2019Plan.first_seed_note). What each table and analysis reads, and the inputs of
# the rules below: src/nmtvariants/studies/emelin2019/plan.py.


from nmtvariants.studies.emelin2019 import plan as emelin

EMELIN_PLAN = emelin.Emelin2019Plan(config, RUN_OF)
# its tables, figures and the bootstrap's significance tests (rule `significance`, rules/evaluate.smk)
register_plan(EMELIN_PLAN)


localrules:
    emelin2019_bleu,
    emelin2019_variants,
    emelin2019_bootstrap,
    emelin2019_params_speed,
    emelin2019_probes,
    emelin2019_gates,
    emelin2019_contrawsd_table,
    emelin2019_curves,


# --- analyses per run ----------------------------------------------------------------------------------


rule emelin2019_states:
    # the states of one probe part: the first sentences of the NMT training corpus (the probes' training
    # data), the dev set (their early stopping) or the probed test set (their accuracy, the similarity)
    input:
        model=lambda wc: EMELIN_PLAN.checkpoint(wc.experiment, wc.pair, wc.variant),
        vocab=lambda wc: EMELIN_PLAN.bpe(wc.experiment, wc.pair, "vocab.txt"),
        source=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment,
            wc.pair,
            f"{EMELIN_PLAN.states_split(wc.experiment, wc.part)}.{wc.pair.split('-')[0]}",
        ),
        target=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment,
            wc.pair,
            f"{EMELIN_PLAN.states_split(wc.experiment, wc.part)}.{wc.pair.split('-')[1]}",
        ),
    output:
        temp("results/{experiment}/{pair}/{variant}/analysis/states-{part}.npz"),
    log:
        "logs/emelin2019/states/{experiment}/{pair}/{variant}-{part}.log",
    wildcard_constraints:
        part="|".join(emelin.PROBE_PARTS),
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: EMELIN_PLAN.states_mem_mb(wc.experiment, wc.part),
        runtime=grown_runtime(60),
    params:
        max_sentences=lambda wc: EMELIN_PLAN.states_sentences(wc.experiment, wc.part),
        names=[
            f"{side}.{name}"
            for side in ("encoder", "decoder")
            for name in ("embeddings", "layers.[0-9]", "output")
        ],
    shell:
        "nmtvariants extract-states --checkpoint {input.model:q} --vocab {input.vocab:q}"
        " --source {input.source:q} --target {input.target:q} --max-sentences {params.max_sentences:q}"
        " --names {params.names:q} --output {output:q} --threads {threads} > {log:q} 2>&1"


rule emelin2019_pos:
    # one UPOS per BPE token: the source's from its CoNLL-U parse, the target's from its word tags
    input:
        annotation=EMELIN_PLAN.pos_annotation,
        bpe="data/{corpus}/{pair}/bpe/{split}.{lang}",
    output:
        "data/{corpus}/{pair}/pos/{split}.{lang}",
    log:
        "logs/emelin2019/pos/{corpus}/{pair}/{split}.{lang}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(30),
    params:
        kind=lambda wc: "--conllu" if wc.lang == wc.pair.split("-")[0] else "--tags",
    shell:
        "nmtvariants emelin2019-pos {params.kind:q} {input.annotation:q} --bpe {input.bpe:q} -o {output:q}"
        " > {log:q} 2>&1"


rule emelin2019_layer_probes:
    input:
        unpack(EMELIN_PLAN.probe_inputs),
    output:
        "results/{experiment}/{pair}/{variant}/analysis/probes.csv",
    log:
        "logs/emelin2019/probes/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(8000),
        runtime=grown_runtime(240),
    params:
        label=lambda wc: EMELIN_PLAN.label(
            wc.experiment, EMELIN_PLAN.variant_of(wc.experiment, wc.variant)
        ),
        max_epochs=lambda wc: EMELIN_PLAN.caps(wc.experiment)["max_epochs"],
        lr=lambda wc: EMELIN_PLAN.caps(wc.experiment)["lr"],
        groups=lambda wc, input: [
            arg
            for part, key in (("source", "pos"), ("target", "target_pos"))
            if key in input.keys()
            for arg in (f"--{part}-group", f"pos={input[key]}")
        ],
    shell:
        "nmtvariants layer-probes --train-states {input.train_states:q}"
        " --valid-states {input.valid_states:q} --test-states {input.test_states:q} --label {params.label:q}"
        " --max-epochs {params.max_epochs:q} --lr {params.lr:q} --vocab {input.vocab:q}"
        " --source-frequency {input.source_train:q} --target-frequency {input.target_train:q}"
        " {params.groups:q} --output {output:q} --threads {threads} > {log:q} 2>&1"


rule emelin2019_similarity:
    # one replica's states on the test set: each layer's cosine similarity with the embeddings
    input:
        "results/{experiment}/{pair}/{variant}/analysis/states-test.npz",
    output:
        "results/{experiment}/{pair}/{variant}/analysis/similarity.csv",
    log:
        "logs/emelin2019/similarity/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(30),
    params:
        states=lambda wc, input: EMELIN_PLAN.label(
            wc.experiment, EMELIN_PLAN.variant_of(wc.experiment, wc.variant)
        )
        + f"={input}",
    shell:
        "nmtvariants similarity --states {params.states:q} --output {output:q} > {log:q} 2>&1"


rule emelin2019_gate_stats:
    input:
        model=lambda wc: EMELIN_PLAN.checkpoint(wc.experiment, wc.pair, wc.variant),
        vocab=lambda wc: EMELIN_PLAN.bpe(wc.experiment, wc.pair, "vocab.txt"),
        source=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment,
            wc.pair,
            f"{EMELIN_PLAN.probe_testset(wc.experiment)}.{wc.pair.split('-')[0]}",
        ),
        target=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment,
            wc.pair,
            f"{EMELIN_PLAN.probe_testset(wc.experiment)}.{wc.pair.split('-')[1]}",
        ),
    output:
        "results/{experiment}/{pair}/{variant}/analysis/gates.csv",
    log:
        "logs/emelin2019/gates/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(60),
    params:
        label=lambda wc: EMELIN_PLAN.label(
            wc.experiment, EMELIN_PLAN.variant_of(wc.experiment, wc.variant)
        ),
        max_sentences=lambda wc: EMELIN_PLAN.caps(wc.experiment)["max_sentences"],
    shell:
        "nmtvariants gate-stats --checkpoint {input.model:q} --vocab {input.vocab:q}"
        " --source {input.source:q} --target {input.target:q} --max-sentences {params.max_sentences:q}"
        " --label {params.label:q} --output {output:q} --threads {threads} > {log:q} 2>&1"


rule emelin2019_count_params:
    input:
        vocab=lambda wc: EMELIN_PLAN.bpe(wc.experiment, wc.pair, "vocab.txt"),
    output:
        config="results/{experiment}/{pair}/{variant}/analysis/model.json",
        number="results/{experiment}/{pair}/{variant}/analysis/params.txt",
    log:
        "logs/emelin2019/params/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(2000),
        runtime=grown_runtime(10),
    params:
        # the model section and the variant's model switches (its warm-up is a trainer setting)
        model=lambda wc: json.dumps(
            {
                **EMELIN_PLAN.experiments[wc.experiment]["model"],
                "variant": {
                    key: value
                    for key, value in (
                        EMELIN_PLAN.experiments[wc.experiment]["variants"][wc.variant]
                        or {}
                    ).items()
                    if key != "warmup"
                },
            },
            sort_keys=True,
        ),
    shell:
        "(printf '%s\\n' {params.model:q} > {output.config:q}"
        " && nmtvariants count-params --config {output.config:q} --vocab-size $(wc -l < {input.vocab:q})"
        " > {output.number:q}) 2> {log:q}"


# --- ContraWSD: every candidate through the model's own preprocessing chain ---------------------------


rule emelin2019_contrawsd_download:
    output:
        emelin.CONTRAWSD_DEEN,
    log:
        "logs/emelin2019/contrawsd_download.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(30),
    params:
        dest=lambda wc, output: str(Path(output[0]).parent),
        mirror=["--mirror", config["mirror"]] if config.get("mirror") else [],
    shell:
        "nmtvariants download contrawsd_deen --dest {params.dest:q} {params.mirror:q} > {log:q} 2>&1"


rule emelin2019_contrawsd_expand:
    # raw (source, candidate) lines as a split of the corpus, so that rules/preprocess.smk tokenises,
    # truecases and segments them exactly as the model's test sets: data/<corpus>/<pair>/bpe/contrawsd-*
    input:
        lambda wc: EMELIN_PLAN.contrawsd_set(wc.corpus, f"{wc.src}-{wc.tgt}"),
    output:
        source="data/{corpus}/raw/contrawsd-{src}-{tgt}.{src}",
        candidate="data/{corpus}/raw/contrawsd-{src}-{tgt}.{tgt}",
    log:
        "logs/emelin2019/contrawsd_expand/{corpus}/{src}-{tgt}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    shell:
        "nmtvariants contrawsd-expand --json {input:q} --source-out {output.source:q}"
        " --candidate-out {output.candidate:q} > {log:q} 2>&1"


rule emelin2019_contrawsd_score:
    input:
        model=lambda wc: EMELIN_PLAN.checkpoint(wc.experiment, wc.pair, wc.variant),
        vocab=lambda wc: EMELIN_PLAN.bpe(wc.experiment, wc.pair, "vocab.txt"),
        source=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment, wc.pair, f"contrawsd-{wc.pair}.{wc.pair.split('-')[0]}"
        ),
        candidate=lambda wc: EMELIN_PLAN.bpe(
            wc.experiment, wc.pair, f"contrawsd-{wc.pair}.{wc.pair.split('-')[1]}"
        ),
    output:
        "results/{experiment}/{pair}/{variant}/analysis/contrawsd.nll",
    log:
        "logs/emelin2019/contrawsd_score/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/train.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(4000),
        runtime=grown_runtime(60),
    shell:
        "nmtvariants score --checkpoint {input.model:q} --vocab {input.vocab:q} --source {input.source:q}"
        " --target {input.candidate:q} --output {output:q} --threads {threads} > {log:q} 2>&1"


rule emelin2019_contrawsd:
    input:
        testset=lambda wc: EMELIN_PLAN.contrawsd_set(
            EMELIN_PLAN.experiments[wc.experiment]["corpus"], wc.pair
        ),
        scores="results/{experiment}/{pair}/{variant}/analysis/contrawsd.nll",
    output:
        json="results/{experiment}/{pair}/{variant}/analysis/contrawsd.json",
        csv="results/{experiment}/{pair}/{variant}/analysis/contrawsd.csv",
    log:
        "logs/emelin2019/contrawsd/{experiment}/{pair}/{variant}.log",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    shell:
        "nmtvariants contrawsd --json {input.testset:q} --scores {input.scores:q}"
        " --out-json {output.json:q} --out-csv {output.csv:q} > {log:q} 2>&1"


# --- tables and figures --------------------------------------------------------------------------------


rule emelin2019_bleu:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.bleu_manifest(wc.table)),
    output:
        md=f"{emelin.TABLES}/{{table}}.md",
        csv=f"{emelin.TABLES}/{{table}}.csv",
        provenance=f"{emelin.TABLES}/{{table}}.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/{{table}}.log",
        manifest=f"logs/tables/{emelin.STUDY}/{{table}}.manifest.json",
    wildcard_constraints:
        table="table1_bleu|table2_pairs|table3_small",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.bleu_manifest(wc.table)),
        title=lambda wc: EMELIN_PLAN.bleu_tables[wc.table][0],
        mean=lambda wc: EMELIN_PLAN.mean_args(wc.table),
    shell:
        with_manifest(
            "nmtvariants emelin2019-bleu --manifest {log.manifest:q} {params.mean:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_variants:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.variants_manifest()),
    output:
        md=f"{emelin.TABLES}/table4_variants.md",
        csv=f"{emelin.TABLES}/table4_variants.csv",
        provenance=f"{emelin.TABLES}/table4_variants.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/table4_variants.log",
        manifest=f"logs/tables/{emelin.STUDY}/table4_variants.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.variants_manifest()),
        title="Table 4: shortcut variants (EN-DE)",
    shell:
        with_manifest(
            "nmtvariants emelin2019-variants --manifest {log.manifest:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_bootstrap:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.bootstrap_manifest()),
    output:
        md=f"{emelin.TABLES}/bootstrap.md",
        csv=f"{emelin.TABLES}/bootstrap.csv",
        provenance=f"{emelin.TABLES}/bootstrap.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/bootstrap.log",
        manifest=f"logs/tables/{emelin.STUDY}/bootstrap.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.bootstrap_manifest()),
        title=lambda wc: f"sacreBLEU and chrF against the baseline ({EMELIN_PLAN.analysed}, EN-DE)",
    shell:
        with_manifest(
            "nmtvariants emelin2019-bootstrap --manifest {log.manifest:q} --title {params.title:q}"
            " --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_params_speed:
    # a run's train_log.csv is tracked through the final.pt beside it (training rewrites the log as it
    # goes, so no rule declares it): nmtvariants.reporting.manifest.TRACKED_BESIDE
    input:
        manifest_files(lambda wc: EMELIN_PLAN.params_manifest()),
    output:
        md=f"{emelin.TABLES}/table5_params_speed.md",
        csv=f"{emelin.TABLES}/table5_params_speed.csv",
        provenance=f"{emelin.TABLES}/table5_params_speed.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/table5_params_speed.log",
        manifest=f"logs/tables/{emelin.STUDY}/table5_params_speed.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.params_manifest()),
        title="Table 5: parameters and training speed relative to the baseline",
        note=lambda wc: EMELIN_PLAN.first_seed_note(EMELIN_PLAN.analysed),
    shell:
        with_manifest(
            "nmtvariants emelin2019-params --manifest {log.manifest:q} {params.note:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_probes:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.analysis("probes")),
    output:
        md=f"{emelin.TABLES}/probes_{{breakdown}}.md",
        csv=f"{emelin.TABLES}/probes_{{breakdown}}.csv",
        provenance=f"{emelin.TABLES}/probes_{{breakdown}}.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/probes_{{breakdown}}.log",
        manifest=f"logs/tables/{emelin.STUDY}/probes_{{breakdown}}.manifest.json",
    wildcard_constraints:
        breakdown="frequency|pos",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.analysis("probes")),
        kind=lambda wc: {"frequency": "frequency_bin", "pos": "pos"}[wc.breakdown],
        title=lambda wc: (
            "Lexical probes by layer and frequency bin"
            if wc.breakdown == "frequency"
            else "Lexical probes by layer and POS (encoder: source POS, decoder: target POS)"
        ),
        note=lambda wc: [
            "--note",
            " ".join(
                [EMELIN_PLAN.probe_note()]
                + (
                    [emelin.NO_POS_NOTE]
                    if wc.breakdown == "frequency" and not EMELIN_PLAN.pos
                    else []
                )
            ),
        ],
    shell:
        with_manifest(
            "nmtvariants emelin2019-probes --manifest {log.manifest:q} --group-kind {params.kind:q}"
            " {params.note:q} --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_gates:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.analysis("gates", shortcuts_only=True)),
    output:
        md=f"{emelin.TABLES}/gates.md",
        csv=f"{emelin.TABLES}/gates.csv",
        provenance=f"{emelin.TABLES}/gates.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/gates.log",
        manifest=f"logs/tables/{emelin.STUDY}/gates.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(
            lambda wc: EMELIN_PLAN.analysis("gates", shortcuts_only=True)
        ),
        title="Shortcut gate activations per layer",
    shell:
        with_manifest(
            "nmtvariants emelin2019-gates --manifest {log.manifest:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_contrawsd_table:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.contrawsd_manifest()),
    output:
        md=f"{emelin.TABLES}/contrawsd.md",
        csv=f"{emelin.TABLES}/contrawsd.csv",
        provenance=f"{emelin.TABLES}/contrawsd.provenance.json",
    log:
        out=f"logs/tables/{emelin.STUDY}/contrawsd.log",
        manifest=f"logs/tables/{emelin.STUDY}/contrawsd.manifest.json",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.contrawsd_manifest()),
        title="ContraWSD: accuracy overall, per sense and per frequency class",
    shell:
        with_manifest(
            "nmtvariants emelin2019-contrawsd --manifest {log.manifest:q}"
            " --title {params.title:q} --out {output.md:q} > {log.out:q} 2>&1"
        )


rule emelin2019_curves:
    input:
        manifest_files(lambda wc: EMELIN_PLAN.curves_manifest(wc.kind)),
    output:
        f"{emelin.FIGURES}/{{kind}}_{{side}}.csv",
    log:
        out=f"logs/figures/{emelin.STUDY}/{{kind}}_{{side}}.log",
        manifest=f"logs/figures/{emelin.STUDY}/{{kind}}_{{side}}.manifest.json",
    wildcard_constraints:
        kind="probes|similarity",
        side="encoder|decoder",
    conda:
        "../../envs/nmtvariants.yaml"
    threads: 1
    resources:
        mem_mb=input_sized_mb(1000),
        runtime=grown_runtime(10),
    params:
        manifest=manifest_text(lambda wc: EMELIN_PLAN.curves_manifest(wc.kind)),
        value=lambda wc: "accuracy" if wc.kind == "probes" else "cosine",
    shell:
        with_manifest(
            "nmtvariants emelin2019-curves --manifest {log.manifest:q} --value {params.value:q}"
            " --side {wildcards.side:q} --out {output:q} > {log.out:q} 2>&1"
        )
