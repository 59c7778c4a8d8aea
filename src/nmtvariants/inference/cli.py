"""Sub-commands ``translate``, ``score`` and ``count-params``.

``translate`` and ``score`` take a sentence's extra inputs as files, exactly as ``binarize`` does:
``--aux NAME=FILE`` (repeatable; ``--aux-labels NAME=COUNT`` for label streams), further sources
(``--extra-source FILE`` for translate, a repeated ``--source`` for score), ``--features FILE.npy``
with an optional ``--feature-index FILE`` (data/extra_inputs.py has the rules and the checks).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch
import yaml

from nmtvariants.data.vocab import Vocabulary
from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import atomic_write, read_lines
from nmtvariants.inference.defaults import BEAM_SIZE, DECODER_CACHE_MB, MAX_LEN_A, MAX_LEN_B
from nmtvariants.inference.precision import DTYPE_NAMES
from nmtvariants.training.cli import add_extra_input_args, extra_input_files


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    tr = subparsers.add_parser("translate", help="beam-search translation of BPE'd text with a checkpoint")
    _model_args(tr)
    tr.add_argument("--input", default="-", help="source text, one sentence per line (default stdin)")
    tr.add_argument("--output", default="-", help="translations (default stdout)")
    tr.add_argument("--beam", type=int, default=BEAM_SIZE)
    tr.add_argument("--alpha", type=float, default=0.6, help="GNMT length-penalty exponent")
    tr.add_argument("--length-norm", choices=("gnmt", "average", "none"), default="gnmt")
    tr.add_argument("--max-len-a", type=float, default=MAX_LEN_A)
    tr.add_argument("--max-len-b", type=float, default=MAX_LEN_B)
    tr.add_argument("--min-len", type=int, default=0)
    tr.add_argument("--nbest", type=int, default=1, help=">1 writes Moses n-best lines `i ||| hyp ||| score`")
    tr.add_argument("--batch-size", type=int, default=64, help="sentences per batch, at most")
    tr.add_argument(
        "--cache-mb", type=float, default=DECODER_CACHE_MB,
        help="decoder cache per batch, at most (MB): long sentences and wide beams get smaller batches",
    )  # fmt: skip
    add_extra_input_args(tr, sources="--extra-source")
    tr.set_defaults(func=run_translate)

    sc = subparsers.add_parser("score", help="forced-decoding scores of (source, target) pairs")
    _model_args(sc)
    sc.add_argument(
        "--source", required=True, action="append", help="source text; repeat for further sources, in order"
    )
    sc.add_argument("--target", required=True)
    sc.add_argument("--output", required=True)
    sc.add_argument("--sum", action="store_true", help="sum of token NLLs instead of the mean")
    sc.add_argument("--per-token", action="store_true", help="write each token's NLL (incl. </s>) per line")
    sc.add_argument("--batch-size", type=int, default=64)
    add_extra_input_args(sc, sources=None)
    sc.set_defaults(func=run_score)

    cp = subparsers.add_parser("count-params", help="parameter count of a model configuration")
    cp.add_argument("--preset", default="base")
    cp.add_argument("--variant", default="{}", help="variant switches as JSON")
    cp.add_argument("--vocab-size", type=int, default=41138)
    cp.add_argument(
        "--config", help="YAML with preset, core overrides and variant (optionally under `model:`)"
    )
    cp.add_argument("-v", "--verbose", dest="breakdown", action="store_true", help="per-module breakdown")
    cp.set_defaults(func=run_count_params)


def _model_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument(
        "--device", default="auto", help="cpu, cuda, or auto (default): the GPU when torch sees one"
    )
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    parser.add_argument(
        "--dtype",
        choices=DTYPE_NAMES,
        default="float32",
        help="weights and activations (bfloat16: ~1.7x faster beam search on CPUs with AVX512-BF16 or "
        "AMX, and on GPUs; int8: dynamic int8 quantisation of the linear layers, CPU only; output "
        "scores are computed in float32 either way)",
    )


def resolve_device(requested: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``: a workflow job on a GPU node decodes
    there without the rule knowing where it runs (rule translate passes no device)."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return requested


def _load(args: argparse.Namespace) -> tuple[Any, Vocabulary]:
    from nmtvariants.allocator import keep_freed_memory
    from nmtvariants.inference.precision import check_dtype, prepare_model
    from nmtvariants.inference.translate import check_vocabulary
    from nmtvariants.kernel_caches import bound_kernel_caches, no_attention_plans_per_shape
    from nmtvariants.models import load_model

    args.device = resolve_device(args.device)
    check_dtype(args.dtype, args.device)  # before the weights are read: int8 runs on the CPU only
    bound_kernel_caches()
    no_attention_plans_per_shape()
    keep_freed_memory()
    if args.threads:
        torch.set_num_threads(args.threads)
    model = prepare_model(load_model(args.checkpoint, map_location=args.device), args.dtype, args.device)
    vocab = Vocabulary.load(args.vocab)
    check_vocabulary(model, vocab, args.vocab)
    return model, vocab


def trained_aux_labels(checkpoint: str) -> dict[str, int]:
    """The label streams (``data.aux_labels``) the model was trained with, so that a stream gets the
    same ``</s>`` value at test time without repeating ``--aux-labels`` (memory-mapped: no weights read)."""
    state = torch.load(checkpoint, map_location="cpu", weights_only=True, mmap=True)
    data = (state.get("train_config") or {}).get("data") or {}
    return dict(data.get("aux_labels") or {})


def run_translate(args: argparse.Namespace) -> int:
    from nmtvariants.data.extra_inputs import model_feature_channels
    from nmtvariants.inference.translate import translate_lines

    model, vocab = _load(args)
    source_path = "/dev/stdin" if args.input == "-" else args.input
    lines = list(read_lines(source_path))
    outputs = translate_lines(
        model,
        vocab,
        lines,
        extras=extra_input_files(
            args, channels=model_feature_channels(model), labels=trained_aux_labels(args.checkpoint)
        ),
        source_path=args.input if args.input != "-" else "<stdin>",
        nbest=args.nbest,
        batch_size=args.batch_size,
        cache_mb=args.cache_mb,
        device=args.device,
        beam_size=args.beam,
        length_norm=args.length_norm,
        alpha=args.alpha,
        max_len_a=args.max_len_a,
        max_len_b=args.max_len_b,
        min_len=args.min_len,
    )
    _write(args.output, outputs)
    return 0


def run_score(args: argparse.Namespace) -> int:
    from nmtvariants.data.extra_inputs import model_feature_channels
    from nmtvariants.inference.examples import read_examples, score_examples
    from nmtvariants.inference.scorer import PairScore

    model, vocab = _load(args)
    first, *further = args.source
    sources = list(read_lines(first))
    targets = list(read_lines(args.target))
    if len(sources) != len(targets):
        raise InputError(
            f"{first} has {len(sources)} lines but {args.target} has {len(targets)}; "
            "source and target must be line-parallel"
        )
    extras = extra_input_files(
        args, further, model_feature_channels(model), trained_aux_labels(args.checkpoint)
    )
    data = read_examples(vocab, first, sources, targets, extras)
    scored = score_examples(model, data, batch_size=args.batch_size, device=args.device)
    scores = [PairScore(token_log_probs) for token_log_probs in scored]
    if args.per_token:
        outputs = [" ".join(f"{-p:.6f}" for p in s.token_log_probs) for s in scores]
    else:
        outputs = [f"{-(s.sum if args.sum else s.mean):.6f}" for s in scores]
    _write(args.output, outputs)
    return 0


def _write(path: str, lines: list[str]) -> None:
    if path == "-":
        sys.stdout.write("".join(line + "\n" for line in lines))
        return
    with atomic_write(path) as out:
        for line in lines:
            out.write(line + "\n")


def model_settings(path: str | Path) -> dict[str, Any]:
    """Read ``preset``, core overrides and ``variant`` from a YAML file (optionally under ``model:``)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as error:
        raise InputError(f"{path}: not valid YAML ({error})") from None
    if isinstance(data, dict) and isinstance(data.get("model"), dict):
        data = data["model"]
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping with `preset` and optional `variant` and overrides")
    return dict(data)


def run_count_params(args: argparse.Namespace) -> int:
    from nmtvariants.models import build_model, count_parameters, model_config, parameter_breakdown

    if args.config:
        settings = model_settings(args.config)
        preset = settings.pop("preset", args.preset)
        variant = settings.pop("variant", {}) or {}
        overrides = settings
    else:
        preset, overrides = args.preset, {}
        try:
            variant = json.loads(args.variant)
        except json.JSONDecodeError as error:
            raise ConfigError(f"--variant: not valid JSON ({error.msg} at character {error.pos})") from None
    cfg = model_config(preset, overrides=overrides, variant=variant)
    with torch.device("meta"):
        model = build_model(cfg, args.vocab_size)
    print(count_parameters(model))
    if args.breakdown:
        for name, count in parameter_breakdown(model).items():
            print(f"{name}\t{count}")
    return 0
