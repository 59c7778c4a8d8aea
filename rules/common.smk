# Shared names, wildcard constraints and target lists. Rules pass paths and parameters; all logic
# lives in src/nmtvariants.

SPLITS = ["train", "valid", "test"]
TOY_LANGS = ["en", "de", "ru", "fr"]  # en is the source; de, ru (Cyrillic), fr are targets
TOY_TARGETS = ["de", "ru", "fr"]
CORPORA = config.get("corpora", {})
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


def all_tables():
    """Every table of the enabled stages; `rule all` builds these."""
    tables = ["results/tables/data_statistics.md"]
    if CORPORA:
        tables.append("results/tables/preprocessing.md")
    return tables
