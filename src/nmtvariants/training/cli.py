"""Sub-commands ``train``, ``average`` and ``binarize``.

``nmtvariants train --config RUN.yaml --outdir DIR`` resumes by itself from the newest valid
checkpoint in ``DIR/checkpoints``, so a Snakemake re-run (which deletes only the declared
``DIR/final.pt``) continues instead of starting over. Under ``torchrun --nproc_per_node N`` the
same command trains data-parallel.
"""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

from nmtvariants.errors import InputError

log = logging.getLogger(__name__)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    train = subparsers.add_parser("train", help="train (or resume) a model from a run config")
    source = train.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", type=Path, help="run config (YAML): data, model, variant, train")
    source.add_argument("--config-json", help="the same config inline as JSON")
    train.add_argument(
        "--outdir",
        type=Path,
        required=True,
        help="run directory: checkpoints/, train_log.csv, tensorboard/, final.pt",
    )
    train.add_argument(
        "--threads", type=int, help="torch CPU threads (default: train.threads, OMP_NUM_THREADS)"
    )
    train.add_argument("--max-updates", type=int, help="override train.max_updates")
    train.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    train.set_defaults(func=run_train)

    average = subparsers.add_parser("average", help="uniform average of checkpoints (fairseq style)")
    inputs = average.add_mutually_exclusive_group(required=True)
    inputs.add_argument("--inputs", nargs="+", type=Path, help="checkpoint files to average")
    inputs.add_argument("--dir", type=Path, help="a checkpoints/ directory; with --last K")
    average.add_argument(
        "--last", type=int, default=5, help="how many of the newest checkpoints (with --dir)"
    )
    average.add_argument("--output", type=Path, required=True, help="averaged model file (load_model format)")
    average.set_defaults(func=run_average)

    binar = subparsers.add_parser("binarize", help="encode BPE'd parallel text into a .npz for training")
    binar.add_argument("--src", type=Path, required=True)
    binar.add_argument("--tgt", type=Path, required=True)
    binar.add_argument("--vocab", type=Path, required=True)
    binar.add_argument("--max-len", type=int, help="drop pairs with more tokens than this on either side")
    binar.add_argument("--output", type=Path, required=True, help=".npz file")
    add_extra_input_args(binar, sources="--extra-source")
    binar.set_defaults(func=run_binarize)


def add_extra_input_args(parser: argparse.ArgumentParser, sources: str | None) -> None:
    """The options naming an example's extra inputs (data/extra_inputs.py); shared with translate/score."""
    parser.add_argument(
        "--aux",
        action="append",
        metavar="NAME=FILE",
        help="integer stream aligned with the first source's BPE tokens (repeatable), e.g. parents=FILE",
    )
    parser.add_argument(
        "--aux-labels",
        action="append",
        metavar="NAME=COUNT",
        help="the stream NAME holds label ids < COUNT (</s> gets COUNT), not positions",
    )
    if sources:
        parser.add_argument(
            sources, action="append", metavar="FILE", help="a further BPE source, line-parallel (repeatable)"
        )
    parser.add_argument("--features", metavar="FILE.npy", help="feature grid [sentences, regions, channels]")
    parser.add_argument(
        "--feature-index", metavar="FILE", help="1-based feature row per line (the .kept file of `clean`)"
    )


def extra_input_files(
    args: argparse.Namespace,
    sources: list[str] | None = None,
    channels: int | None = None,
    labels: dict[str, int] | None = None,
):
    """An :class:`ExtraInputFiles` from the options of :func:`add_extra_input_args`; ``labels``: the
    label streams known already (a model's training config), which ``--aux-labels`` extends."""
    from nmtvariants.data.extra_inputs import ExtraInputFiles, parse_named

    labels = dict(labels or {})
    for name, count in parse_named(args.aux_labels, "--aux-labels").items():
        if not count.isdigit() or int(count) < 1:
            raise InputError(f"--aux-labels {name}={count}: COUNT must be a positive integer")
        labels[name] = int(count)
    return ExtraInputFiles(
        aux=parse_named(args.aux, "--aux"),
        aux_labels=labels,
        sources=list(sources if sources is not None else getattr(args, "extra_source", None) or []),
        features=args.features,
        feature_index=args.feature_index,
        feature_channels=channels,
    )


def run_train(args: argparse.Namespace) -> None:
    """Read the config, then :func:`~nmtvariants.training.trainer.train`: process set-up once
    (``setup_process``: threads, allocator, kernel caches, process group), the trainer, shutdown."""
    from nmtvariants.kernel_caches import bound_kernel_caches

    # already before the config is read (setup_process repeats it, harmlessly): the bounds hold in
    # this process even when the config is refused, which keeps their test cheap
    bound_kernel_caches()
    from nmtvariants.training.train_config import load_run_config
    from nmtvariants.training.trainer import train

    config = load_run_config(args.config, args.config_json)
    if args.threads is not None:
        config.train.threads = args.threads
    if args.max_updates is not None:
        config.train.max_updates = args.max_updates
    if args.no_progress:
        config.train.progress = False
    result = train(config, args.outdir)
    log.info("finished at update %d (%s); model: %s", result.update, result.stop_reason, result.final_path)
    if os.environ.get("RANK", "0") == "0":
        write_run_summary(args.outdir, result)


def write_run_summary(outdir: Path, result) -> None:
    """``run.json`` beside the model: where, how far and with which code (commit, dirty flag) it
    trained, and whether its validation perplexity levelled off; the report cites all three."""
    from nmtvariants.evaluation.results import write_json
    from nmtvariants.hardware import hardware_info
    from nmtvariants.provenance import provenance
    from nmtvariants.training.plateau import plateau_record

    train_log = Path(outdir) / "train_log.csv"

    write_json(
        Path(outdir) / "run.json",
        {
            "updates": result.update,
            "stop_reason": result.stop_reason,
            "best": result.best,
            "last_valid": result.last_valid,
            "plateau": plateau_record(train_log) if train_log.is_file() else None,
            "processes": int(os.environ.get("WORLD_SIZE", "1")),
            "hardware": hardware_info(),
            "provenance": provenance(),
        },
    )


def run_average(args: argparse.Namespace) -> None:
    from nmtvariants.training.checkpoints import average_checkpoints, last_checkpoints

    if args.inputs:
        paths = list(args.inputs)
    else:
        if not args.dir.is_dir():
            raise InputError(f"{args.dir}: no such checkpoint directory")
        paths = last_checkpoints(args.dir, args.last)
    average_checkpoints(paths, args.output)


def run_binarize(args: argparse.Namespace) -> None:
    from nmtvariants.data.dataset import binarize
    from nmtvariants.data.vocab import Vocabulary

    vocab = Vocabulary.load(args.vocab)
    data = binarize(args.src, args.tgt, vocab, max_len=args.max_len, extras=extra_input_files(args))
    data.save(args.output)
    log.info("%s: %d pairs, %d target tokens", args.output, len(data), data.target_token_count())
