import json
import shlex

# Shared names, wildcard constraints and target lists. Rules pass paths and parameters; all logic
# lives in src/nmtvariants.

SPLITS = ["train", "valid", "test"]
TOY_LANGS = [
    "en",
    "de",
    "ru",
    "fr",
]  # en is the source; de, ru (Cyrillic), fr are targets
TOY_TARGETS = ["de", "ru", "fr"]
CORPORA = config.get("corpora", {})
TOYWORLD = {
    "seed": 1234,
    "image_size": 64,
    **config.get("toyworld", {}),
    "sizes": {
        "train": 20000,
        "valid": 500,
        "test": 500,
        **config.get("toyworld", {}).get("sizes", {}),
    },
}
DOWNLOADED_CORPORA = {
    name: corpus for name, corpus in CORPORA.items() if corpus["source"] != "toyworld"
}


wildcard_constraints:
    corpus="[a-z0-9_]+",
    pair="[a-z]+-[a-z]+",
    src="[a-z]+",
    tgt="[a-z]+",
    lang="[a-z]+",
    split="[A-Za-z0-9_-]+",


def as_list(value):
    return value if isinstance(value, list) else [value]


def corpus_languages(name):
    """Languages of a corpus's pairs, in first-seen order."""
    langs = []
    for pair in CORPORA[name]["pairs"]:
        for lang in pair.split("-"):
            if lang not in langs:
                langs.append(lang)
    return langs


def corpus_splits(name):
    corpus = CORPORA[name]
    return [corpus["train"], corpus["valid"], *corpus["testsets"]]


def raw_files(name):
    return expand(
        "data/{corpus}/raw/{split}.{lang}",
        corpus=name,
        split=corpus_splits(name),
        lang=corpus_languages(name),
    )


def preprocess_setting(wildcards, *keys):
    value = CORPORA[wildcards.corpus]["preprocess"]
    for key in keys:
        value = value[key]
    return value


def pair_split_files(name, pair, stage):
    """data/<corpus>/<pair>/<stage>/<split>.<lang> for every split and both languages."""
    return expand(
        "data/{corpus}/{pair}/{stage}/{split}.{lang}",
        corpus=name,
        pair=pair,
        stage=stage,
        split=corpus_splits(name),
        lang=pair.split("-"),
    )


def statistics_inputs():
    """Raw text of every configured corpus (all of toyworld's languages when it is one of them)."""
    files = []
    if len(DOWNLOADED_CORPORA) < len(CORPORA) or not CORPORA:
        files += expand(
            "data/toyworld/raw/{split}.{lang}", split=SPLITS, lang=TOY_LANGS
        )
    for name in DOWNLOADED_CORPORA:
        files += raw_files(name)
    return files


def all_tables():
    """Every table of the enabled stages; `rule all` builds these."""
    tables = ["results/tables/data_statistics.md"]
    if CORPORA:
        tables.append("results/tables/preprocessing.md")
    tables += [f"results/tables/{name}.md" for name in config.get("experiments", {})]
    return tables


# --- figures -----------------------------------------------------------------------------------
# A study registers each figure it draws: results/figures/<study>/<name>.png, drawn by rule
# `figure` (rules/report.smk) with `nmtvariants figure` from the long-format CSV beside it (the
# study's own rule writes that CSV). The report waits for every registered figure.
FIGURES = {}


def register_figure(png, kind, **options):
    """``register_figure("results/figures/yang2020/probe.png", "layers", title="...", y="acc")``:
    ``kind`` is layers|bars|heatmap; ``options`` are the command's column options (x, y, group,
    title, ylabel, row_index, ...)."""
    FIGURES[png] = {"kind": kind, **options}


def all_figures():
    """Every registered figure; `rule report` depends on them."""
    return sorted(FIGURES)


def figure_arguments(wildcards):
    """The `nmtvariants figure` options registered for this figure (register_figure in common.smk)."""
    png = f"results/figures/{wildcards.study}/{wildcards.name}.png"
    if png not in FIGURES:
        raise ValueError(
            f"{png}: no such figure registered (see register_figure in rules/common.smk)"
        )
    options = FIGURES[png]
    args = []
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return shlex.join(args)


# --- preprocess --------------------------------------------------------------------------------


def translit_langs(wildcards):
    pair_langs = (
        wildcards.pair.split("-")
        if "pair" in wildcards.keys()
        else [wildcards.src, wildcards.tgt]
    )
    return [
        lang
        for lang in preprocess_setting(wildcards, "bpe", "translit")
        if lang in pair_langs
    ]


def truecase_input(wildcards):
    corpus = CORPORA[wildcards.corpus]
    if wildcards.split == corpus["train"]:
        return f"data/{wildcards.corpus}/{wildcards.pair}/clean/{wildcards.split}.{wildcards.lang}"
    return f"data/{wildcards.corpus}/tok/{wildcards.split}.{wildcards.lang}"


def bpe_codes_for(wildcards):
    """Transliterated pairs segment the other language with the Latin merges (<codes>.latin)."""
    codes = f"data/{wildcards.corpus}/{wildcards.pair}/bpe/codes"
    langs = translit_langs(wildcards)
    return codes if not langs or wildcards.lang in langs else f"{codes}.latin"


# --- train -------------------------------------------------------------------------------------

EXPERIMENTS = config.get("experiments", {})


def run_settings(wildcards):
    """The run config handed to `nmtvariants train`: data paths, model, variant, train settings."""
    experiment = EXPERIMENTS[wildcards.experiment]
    corpus, pair = experiment["corpus"], wildcards.pair
    src, tgt = pair.split("-")
    splits = CORPORA[corpus]
    bpe = f"data/{corpus}/{pair}/bpe"
    variant = dict(experiment["variants"][wildcards.variant] or {})
    return {
        "data": {
            "train_src": f"{bpe}/{splits['train']}.{src}",
            "train_tgt": f"{bpe}/{splits['train']}.{tgt}",
            "valid_src": f"{bpe}/{splits['valid']}.{src}",
            "valid_tgt": f"{bpe}/{splits['valid']}.{tgt}",
            "vocab": f"{bpe}/vocab.txt",
        },
        "model": experiment["model"],
        "variant": variant,
        "train": {**experiment["train"], "seed": config["seed"]},
    }


def train_inputs(wildcards):
    return list(run_settings(wildcards)["data"].values())


def gpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["resources"]["gpus"]


# --- evaluate ----------------------------------------------------------------------------------


def experiment_corpus(wildcards):
    return EXPERIMENTS[wildcards.experiment]["corpus"]


def decode_setting(wildcards, key):
    return EXPERIMENTS[wildcards.experiment]["evaluate"][key]


# --- tables ------------------------------------------------------------------------------------


def preprocessing_table_inputs(wildcards):
    inputs = {}
    for name, corpus in CORPORA.items():
        train = corpus["train"]
        for pair in corpus["pairs"]:
            key = f"{name}_{pair.replace('-', '_')}"
            base = f"data/{name}/{pair}"
            inputs[f"{key}_drops"] = f"{base}/clean/drops.json"
            inputs[f"{key}_vocab"] = f"{base}/bpe/vocab.txt"
            for lang in pair.split("-"):
                inputs[f"{key}_tok_{lang}"] = f"data/{name}/tok/{train}.{lang}"
                inputs[f"{key}_tc_{lang}"] = f"{base}/tc/{train}.{lang}"
                inputs[f"{key}_bpe_{lang}"] = f"{base}/bpe/{train}.{lang}"
                inputs[f"{key}_roundtrip_{lang}"] = expand(
                    "results/{corpus}/{pair}/roundtrip/{testset}.{lang}.json",
                    corpus=name,
                    pair=pair,
                    testset=corpus["testsets"],
                    lang=lang,
                )
    return inputs


# How a job starts the CLI: `shell: launch("train ...")`, with gpu=N among the job's resources.
# With N > 1 the job runs under torchrun, one DDP process per GPU of the allocation (SLURM gives
# the job N GPUs through the profile's --gpus=N); otherwise it runs the CLI directly. The GPU count
# lives in resources, not params, so moving a run to more GPUs does not by itself retrain it.
NMTV_LAUNCH = (
    "$(test {resources.gpu} -gt 1"
    " && echo torchrun --standalone --nproc_per_node={resources.gpu} -m) nmtvariants"
)


def launch(command):
    """The shell command `nmtvariants <command>`, under torchrun when the job asks for > 1 GPU."""
    return f"{NMTV_LAUNCH} {command}"
