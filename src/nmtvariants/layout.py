"""Where the workflow keeps runs, models, decodings, sub-word files and results: one home for the layout.

The rules, the study plans and the tests build these paths from here, so that a change of layout is one
edit and a study cannot drift from the rules that write what it reads (a study that spelt the BPE
folder itself missed the derived corpora of the multi-task runs). Every function takes the parts of
the path and returns it relative to the workflow's folder; a Snakemake pattern is the same call with
wildcards for parts (``averaged_model("{run}", "{last}")``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RUNS = "models/runs"


def run_folder(run_id: str) -> str:
    """One training run, shared by every experiment with its settings (its id: a content hash)."""
    return f"{RUNS}/{run_id}"


def checkpoints_folder(run_id: str) -> str:
    """A run's numbered checkpoints: what training resumes from and averaging reads."""
    return f"{run_folder(run_id)}/checkpoints"


def final_model(run_id: str) -> str:
    return f"{run_folder(run_id)}/final.pt"


def averaged_model(run_id: str, last: int | str) -> str:
    """The average of a run's last ``last`` checkpoints: the model every decoding reads."""
    return f"{run_folder(run_id)}/averaged-last{last}.pt"


def decoded_bpe(run_id: str, decode_id: str, testset: str) -> str:
    """A run's sub-word translation of a test set under one decoding's settings."""
    return f"{run_folder(run_id)}/decode/{decode_id}/{testset}.bpe.hyp"


def bpe_folder(corpus: str, pair: str, inputs: Mapping[str, Any] | None = None) -> str:
    """Where a run's BPE text and vocabulary live: ``data/<corpus>/<pair>/bpe``, or for a variant that
    trains on a derived corpus (``inputs: {derived: NAME}``, e.g. the multi-task baseline's tagged
    sources and parse targets) ``data/<corpus>/<pair>/derived/NAME``, with the same file names, written
    by the study's rules."""
    if inputs and inputs.get("derived"):
        return f"data/{corpus}/{pair}/derived/{inputs['derived']}"
    return f"data/{corpus}/{pair}/bpe"


def bpe_file(corpus: str, pair: str, name: str, inputs: Mapping[str, Any] | None = None) -> str:
    """A file of :func:`bpe_folder`: ``<split>.<lang>`` or ``vocab.txt``."""
    return f"{bpe_folder(corpus, pair, inputs)}/{name}"


def train_log(run_id: str) -> str:
    """A run's training log (training and validation rows): speed, curves and the plateau record."""
    return f"{run_folder(run_id)}/train_log.csv"


def result_folder(experiment: str, pair: str, name: str) -> str:
    """An experiment's own results for one replica (or, for a test over every seed, one variant):
    ``name`` is the replica's folder name (nmtvariants.config.replica_name) or the variant's."""
    return f"results/{experiment}/{pair}/{name}"


def scores_file(experiment: str, pair: str, replica: str, testset: str) -> str:
    """A replica's scores on a test set (rule ``evaluate``): what every BLEU table reads."""
    return f"{result_folder(experiment, pair, replica)}/{testset}.scores.json"


def significance_file(experiment: str, pair: str, variant: str, testset: str) -> str:
    """A variant's paired bootstrap against its experiment's reference over every seed of both (rule
    ``significance``): one file per variant, not per replica."""
    return f"{result_folder(experiment, pair, variant)}/{testset}.significance.json"
