# Shared names and target lists. Rules pass paths and parameters; logic lives in src/nmtvariants.

SPLITS = ["train", "valid", "test"]
TOY_LANGS = ["en", "de", "ru", "fr"]  # en is the source; de, ru (Cyrillic), fr are targets
TOY_SOURCE = "en"
TOY_TARGETS = ["de", "ru", "fr"]


def all_tables():
    """Every table of the enabled stages; `rule all` builds these."""
    return ["results/tables/data_statistics.md"]


# How a job starts the CLI (use in `shell:` as NMTV_LAUNCH + " train ..."; the rule must declare
# `resources: gpu=N`). With N > 1 the job runs under torchrun, one DDP process per GPU of the
# allocation (SLURM gives the job N GPUs through the profile's --gpus=N); otherwise it runs the
# CLI directly. The GPU count lives in resources, not params, so moving a run to more GPUs does not
# by itself re-run it.
NMTV_LAUNCH = (
    "$(test {resources.gpu} -gt 1"
    " && echo torchrun --standalone --nproc_per_node={resources.gpu} -m) nmtvariants"
)
