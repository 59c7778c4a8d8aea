# Shared names and target lists. Rules pass paths and parameters; logic lives in src/nmtvariants.

SPLITS = ["train", "valid", "test"]
TOY_LANGS = ["en", "de", "ru", "fr"]  # en is the source; de, ru (Cyrillic), fr are targets
TOY_SOURCE = "en"
TOY_TARGETS = ["de", "ru", "fr"]


def all_tables():
    """Every table of the enabled stages; `rule all` builds these."""
    return ["results/tables/data_statistics.md"]
