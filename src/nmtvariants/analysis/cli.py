"""Sub-commands ``extract-states`` (a model's states over a test set, to ``.npz``) and ``probe``
(train one probe on one representation of that file, report held-out figures as JSON); and the per-layer
analyses of Emelin et al. 2019, each a long CSV: ``similarity`` (cosine of every layer with the
embeddings), ``gate-stats`` (shortcut gate activations) and ``layer-probes`` (a lexical probe per layer);
and ``reconstruction-probes`` (Yang et al. 2020: a reconstruction probe per decoder layer and module).

One probe per call: a study's workflow runs one job per (model, representation, probe kind), and each
job reads only the one array it needs from the states file.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from nmtvariants.errors import ConfigError, InputError

STATE_DTYPES = {"float32": np.float32, "float16": np.float16}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    ex = subparsers.add_parser(
        "extract-states", help="captured states of a model over a BPE'd test set (teacher forcing) -> .npz"
    )
    _add_test_set_args(ex)
    ex.add_argument("--output", required=True, help="states file (.npz)")
    ex.add_argument(
        "--names",
        nargs="+",
        required=True,
        help="fnmatch patterns over capture names (`*` also matches dots), e.g. 'encoder.layers.[0-9]' "
        "'decoder.layers.*.cross.out'",
    )
    _add_caps(ex)
    ex.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass")
    ex.add_argument("--dtype", choices=tuple(STATE_DTYPES), default="float32", help="stored state precision")
    _add_device_args(ex)
    ex.set_defaults(func=run_extract)

    pr = subparsers.add_parser(
        "probe", help="train a probe on frozen states; held-out accuracy/perplexity JSON"
    )
    pr.add_argument("--kind", choices=("mlp", "reconstruction"), required=True)
    pr.add_argument("--states", required=True, help="states file from extract-states")
    pr.add_argument("--name", required=True, help="the representation, e.g. encoder.layers.3")
    pr.add_argument("--output", required=True, help="report (.json)")
    pr.add_argument(
        "--test-states",
        help="report on this states file (same model) instead of a test part split off --states",
    )
    pr.add_argument("--valid-fraction", type=float, default=0.1, help="sentences for early stopping")
    pr.add_argument(
        "--test-fraction", type=float, default=0.2, help="held-out sentences (without --test-states)"
    )
    pr.add_argument("--seed", type=int, default=1)
    pr.add_argument("--patience", type=int, help="epochs without improvement (mlp 5, reconstruction 3)")
    pr.add_argument("--max-epochs", type=int)
    pr.add_argument("--lr", type=float, help="Adam learning rate (mlp 2e-4, reconstruction 5e-4)")
    pr.add_argument("--dropout", type=float, help="mlp 0.5, reconstruction 0.1")
    pr.add_argument("--device", default="cpu")
    pr.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    mlp = pr.add_argument_group("mlp (lexical) probe")
    mlp.add_argument("--hidden", type=int)
    mlp.add_argument("--batch-size", type=int, help="token states per update (default 512)")
    mlp.add_argument("--keep-special", action="store_true", help="also probe the </s> / <s> states")
    mlp.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="accuracy per label of FILE (one label per BPE token, parallel to the probed side's text)",
    )
    mlp.add_argument("--frequency-bins", metavar="TEXT", help="BPE'd text whose counts define frequency bins")
    mlp.add_argument("--bins", type=int, default=10)
    mlp.add_argument("--vocab", help="vocabulary (needed by --frequency-bins)")
    rec = pr.add_argument_group("reconstruction probe")
    rec.add_argument("--decode", choices=("source", "target"), help="the sentence to force-decode")
    rec.add_argument(
        "--causal",
        choices=("auto", "on", "off"),
        default="auto",
        help="memory mask: query t sees memory positions <= t (auto: on for decoder states -> target)",
    )
    rec.add_argument("--d-model", type=int)
    rec.add_argument("--heads", dest="n_heads", type=int)
    rec.add_argument("--d-ff", type=int)
    rec.add_argument("--warmup", type=int, help="warm-up steps then inverse sqrt (0: constant rate)")
    rec.add_argument("--batch-sentences", type=int)
    pr.set_defaults(func=run_probe)
    add_layer_analysis_parsers(subparsers)
    add_reconstruction_parser(subparsers)


def run_extract(args: argparse.Namespace) -> int:
    from nmtvariants.analysis.extract import extract_states
    from nmtvariants.analysis.states import write_state_file

    model, data = _load_test_set(args)
    indices, states = extract_states(
        model, data, args.names, args.batch_size, args.device, STATE_DTYPES[args.dtype]
    )
    meta = {
        "checkpoint": str(args.checkpoint),
        "source": str(args.source),
        "target": str(args.target),
        "vocab_size": int(model.vocab_size),
        "max_sentences": args.max_sentences,
        "max_tokens": args.max_tokens,
        "dtype": args.dtype,
    }
    write_state_file(args.output, data, indices, states, meta)
    return 0


def _settings(config_type: type, args: argparse.Namespace, **extra: Any) -> Any:
    """A probe config from the flags that were given (None: the config's default)."""
    values = {
        f.name: getattr(args, f.name) for f in fields(config_type) if getattr(args, f.name, None) is not None
    }
    return config_type(**{**values, **extra})


def _groups(args: argparse.Namespace, file: Any, states: Any) -> dict[str, np.ndarray]:
    from nmtvariants.analysis.groups import frequency_bins, read_token_groups, token_counts
    from nmtvariants.data.vocab import Vocabulary

    groups: dict[str, np.ndarray] = {}
    for spec in args.group:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--group {spec!r}: expected NAME=FILE")
        groups[name] = read_token_groups(path, file.sentences, states.index, states.side)
    if args.frequency_bins:
        if not args.vocab:
            raise ConfigError("--frequency-bins needs --vocab (the model's vocabulary)")
        vocab = Vocabulary.load(args.vocab)
        if len(vocab) != file.vocab_size:
            raise InputError(f"{args.vocab}: {len(vocab)} types, but the states' model has {file.vocab_size}")
        bins = frequency_bins(token_counts(args.frequency_bins, vocab), args.bins)
        groups["frequency_bin"] = bins[states.index.tokens]
    return groups


def run_probe(args: argparse.Namespace) -> int:
    from nmtvariants.analysis.mlp_probe import MLPProbeConfig, train_mlp_probe
    from nmtvariants.analysis.probe_data import default_causal, sequence_pairs, token_set
    from nmtvariants.analysis.reconstruction_probe import ReconstructionConfig, train_reconstruction_probe
    from nmtvariants.analysis.splits import split_sentences, write_report
    from nmtvariants.analysis.states import read_state_file

    if args.threads:
        torch.set_num_threads(args.threads)
    file = read_state_file(args.states)
    states = file.load(args.name)
    test_file, test_states = file, states
    if args.test_states:
        test_file = read_state_file(args.test_states)
        test_states = test_file.load(args.name)
        if test_file.vocab_size != file.vocab_size:
            raise InputError(f"{args.test_states}: made with another vocabulary than {args.states}")
    test_fraction = 0.0 if args.test_states else args.test_fraction
    split = split_sentences(len(file.sentences), args.valid_fraction, test_fraction, args.seed)
    test_sentences = np.arange(len(test_file.sentences)) if args.test_states else split.test
    report: dict[str, Any] = {
        "states": str(args.states),
        "test_states": args.test_states,
        "name": args.name,
        "side": states.side,
        "split": {**split.sizes(), "test": len(test_sentences)},
    }
    if args.kind == "mlp":
        config = _settings(MLPProbeConfig, args, seed=args.seed)
        train = token_set(states, split.train, keep_special=args.keep_special)
        valid = token_set(states, split.valid, keep_special=args.keep_special)
        groups = _groups(args, test_file, test_states)
        test = token_set(test_states, test_sentences, groups, keep_special=args.keep_special)
        report.update(train_mlp_probe(train, valid, test, file.vocab_size, config))
    else:
        if args.decode is None:
            raise ConfigError("--kind reconstruction needs --decode source|target")
        causal = default_causal(states.side, args.decode) if args.causal == "auto" else args.causal == "on"
        config = _settings(ReconstructionConfig, args, seed=args.seed)
        parts = [
            sequence_pairs(f, s, sentences, args.decode)
            for f, s, sentences in (
                (file, states, split.train),
                (file, states, split.valid),
                (test_file, test_states, test_sentences),
            )
        ]
        report["decode"] = args.decode
        report.update(train_reconstruction_probe(*parts, file.vocab_size, causal, config))
    write_report(args.output, report)
    return 0


def _add_test_set_args(parser: argparse.ArgumentParser) -> None:
    """A trained model and a BPE'd test set to run it over under teacher forcing."""
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--source", required=True, help="BPE'd source text")
    parser.add_argument("--target", required=True, help="BPE'd reference target text (teacher forcing)")


def _add_caps(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-sentences", type=int, default=None, help="keep the first N pairs (file order)")
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="keep the first pairs whose longer sides (</s> included) sum to at most N tokens",
    )


def _add_device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")


def _check_positive(args: argparse.Namespace, *keys: str) -> None:
    for key in keys:
        value = getattr(args, key)
        if value is not None and value < 1:
            raise ConfigError(f"--{key.replace('_', '-')} must be positive, got {value}")


def _load_test_set(args: argparse.Namespace) -> tuple[Any, Any]:
    """(model, capped test pairs) from the flags of :func:`_add_test_set_args` and :func:`_add_caps`."""
    from nmtvariants.analysis.extract import cap_pairs
    from nmtvariants.data.dataset import binarize
    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.inference.translate import check_vocabulary
    from nmtvariants.models import load_model

    _check_positive(args, "max_sentences", "max_tokens", "batch_size")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = load_model(args.checkpoint, map_location=args.device)
    vocab = Vocabulary.load(args.vocab)
    check_vocabulary(model, vocab, args.vocab)
    return model, cap_pairs(binarize(args.source, args.target, vocab), args.max_sentences, args.max_tokens)


def _labelled(spec: str) -> tuple[str, str]:
    """``LABEL=FILE`` -> (label, file); a bare ``FILE`` is labelled with its stem."""
    from pathlib import Path

    label, sep, path = spec.partition("=")
    if not sep:
        return Path(spec).stem, spec
    if not label or not path:
        raise ConfigError(f"{spec!r}: expected LABEL=FILE or FILE")
    return label, path


def add_layer_analysis_parsers(subparsers: argparse._SubParsersAction) -> None:
    """``similarity``, ``gate-stats`` and ``layer-probes``: the per-layer analyses of Emelin et al. 2019."""
    sides = {"nargs": "+", "choices": ("encoder", "decoder"), "help": "default: every side in the file"}
    si = subparsers.add_parser(
        "similarity", help="cosine similarity of each layer's states with the embeddings -> long CSV"
    )
    si.add_argument(
        "--states",
        nargs="+",
        required=True,
        metavar="LABEL=FILE",
        help="states files from extract-states (embeddings, layers.*, output), one per variant",
    )
    si.add_argument("--output", required=True, help="CSV (variant, side, layer, name, cosine, ...)")
    si.add_argument("--sides", **sides)
    si.set_defaults(func=run_similarity)

    ga = subparsers.add_parser(
        "gate-stats", help="shortcut gate activations per layer over a test set (teacher forcing) -> CSV"
    )
    _add_test_set_args(ga)
    _add_caps(ga)
    ga.add_argument("--output", required=True, help="CSV (variant, side, layer, gate, mean, std, ...)")
    ga.add_argument("--label", help="the variant column (default: the checkpoint's file stem)")
    ga.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass")
    _add_device_args(ga)
    ga.set_defaults(func=run_gate_stats)

    lp = subparsers.add_parser(
        "layer-probes",
        help="a lexical probe per encoder/decoder layer, trained on training-corpus states, early-stopped "
        "on dev states; test accuracy by group -> CSV",
    )
    lp.add_argument(
        "--train-states",
        required=True,
        help="states of (a sample of) the NMT training corpus: probe training",
    )
    lp.add_argument("--valid-states", required=True, help="states of the dev set: early stopping")
    lp.add_argument("--test-states", required=True, help="states of the test set: the reported accuracy")
    lp.add_argument("--output", required=True, help="CSV (variant, side, layer, group_kind, group, ...)")
    lp.add_argument("--label", help="the variant column (default: the test states file's stem)")
    lp.add_argument("--sides", **sides)
    lp.add_argument("--seed", type=int, default=1)
    _add_caps(lp)
    lp.add_argument("--hidden", type=int, help="probe hidden units (512)")
    lp.add_argument("--lr", type=float, help="Adam learning rate (2e-4)")
    lp.add_argument("--dropout", type=float, help="probe dropout (0.5)")
    lp.add_argument("--batch-size", type=int, help="token states per update (512)")
    lp.add_argument("--patience", type=int, help="epochs without a better valid accuracy (5)")
    lp.add_argument("--max-epochs", type=int)
    _add_device_args(lp)
    for part, side in (("source", "encoder"), ("target", "decoder")):
        lp.add_argument(
            f"--{part}-group",
            action="append",
            default=[],
            metavar="NAME=FILE",
            help=f"{side} accuracy per label of FILE (one label per BPE token, parallel to the test set's "
            f"{part} text)",
        )
        lp.add_argument(
            f"--{part}-frequency",
            metavar="TEXT",
            help=f"BPE'd {part} text whose counts define the {side} frequency bins "
            "(default: the probe's training tokens)",
        )
    lp.add_argument("--bins", type=int, default=10, help="frequency bins")
    lp.add_argument("--vocab", help="vocabulary (needed by --*-frequency)")
    lp.set_defaults(func=run_layer_probes)


def run_similarity(args: argparse.Namespace) -> int:
    from nmtvariants.analysis.similarity import COLUMNS, layer_similarity, write_csv
    from nmtvariants.analysis.states import read_state_file

    rows = []
    for spec in args.states:
        label, path = _labelled(spec)
        rows += layer_similarity(read_state_file(path), label, args.sides)
    write_csv(args.output, rows, COLUMNS)
    return 0


def run_gate_stats(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nmtvariants.analysis.gates import COLUMNS, gate_statistics
    from nmtvariants.analysis.similarity import write_csv

    model, data = _load_test_set(args)
    label = args.label or Path(args.checkpoint).stem
    write_csv(args.output, gate_statistics(model, data, label, args.batch_size, args.device), COLUMNS)
    return 0


def run_layer_probes(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nmtvariants.analysis.layer_probes import COLUMNS, LayerProbeSettings, probe_layers
    from nmtvariants.analysis.mlp_probe import MLPProbeConfig
    from nmtvariants.analysis.similarity import file_sides, write_csv
    from nmtvariants.analysis.states import TokenStates, read_state_file

    _check_positive(args, "max_sentences", "max_tokens")
    for part in ("source", "target"):
        if getattr(args, f"{part}_frequency") and not args.vocab:
            raise ConfigError(f"--{part}-frequency needs --vocab (the model's vocabulary)")
        for spec in getattr(args, f"{part}_group"):
            if not all(spec.partition("=")[::2]):
                raise ConfigError(f"--{part}-group {spec!r}: expected NAME=FILE")
    if args.threads:
        torch.set_num_threads(args.threads)
    train_file = read_state_file(args.train_states)
    valid_file = read_state_file(args.valid_states)
    test_file = read_state_file(args.test_states)
    sides = file_sides(test_file, file_sides(valid_file, file_sides(train_file, args.sides)))
    groups = {}
    for part, side in (("source", "encoder"), ("target", "decoder")):
        if side in sides and (getattr(args, f"{part}_group") or getattr(args, f"{part}_frequency")):
            request = argparse.Namespace(
                group=getattr(args, f"{part}_group"),
                frequency_bins=getattr(args, f"{part}_frequency"),
                vocab=args.vocab,
                bins=args.bins,
            )
            index = TokenStates(f"{side}.embeddings", np.empty((0, 0)), test_file.indices[side])
            groups[side] = _groups(request, test_file, index)
    settings = LayerProbeSettings(
        bins=args.bins,
        max_sentences=args.max_sentences,
        max_tokens=args.max_tokens,
        probe=_settings(MLPProbeConfig, args, seed=args.seed),
    )
    rows = probe_layers(
        train_file,
        valid_file,
        test_file,
        settings,
        groups,
        args.label or Path(args.test_states).stem,
        sides,
    )
    write_csv(args.output, rows, COLUMNS)
    return 0


def add_reconstruction_parser(subparsers: argparse._SubParsersAction) -> None:
    """``reconstruction-probes``: Yang et al.'s (2020) probe per decoder layer and module, from a model."""
    from nmtvariants.analysis.reconstruction_layers import MODULES

    rp = subparsers.add_parser(
        "reconstruction-probes",
        help="a reconstruction probe per decoder layer and module (TEM, SEM, IFM, ...); held-out "
        "perplexity of the source and the target -> long CSV",
    )
    _add_test_set_args(rp)
    rp.add_argument("--test-source", help="held-out BPE'd source: report on it instead of a test part")
    rp.add_argument("--test-target", help="its BPE'd reference target")
    rp.add_argument(
        "--output", required=True, help="CSV (variant, target_side, layer, module, perplexity, ...)"
    )
    rp.add_argument("--label", help="the variant column (default: the checkpoint's file stem)")
    rp.add_argument(
        "--decode",
        nargs="+",
        choices=("source", "target"),
        default=["source", "target"],
        help="sentences to reconstruct",
    )
    rp.add_argument(
        "--modules",
        nargs="+",
        choices=MODULES,
        default=list(MODULES),
        help="what to probe (default: all the layout has; Encoder = the encoder output, at layer 0)",
    )
    rp.add_argument("--valid-fraction", type=float, default=0.1, help="sentences for early stopping")
    rp.add_argument(
        "--test-fraction", type=float, default=0.2, help="held-out sentences (without --test-source)"
    )
    rp.add_argument("--seed", type=int, default=1, help="the split's and every probe's seed")
    _add_caps(rp)
    rp.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass of the NMT model")
    rp.add_argument(
        "--dtype", choices=tuple(STATE_DTYPES), default="float32", help="extracted state precision"
    )
    rp.add_argument("--d-model", type=int, help="probe width (512)")
    rp.add_argument("--heads", dest="n_heads", type=int, help="probe attention heads (8)")
    rp.add_argument("--d-ff", type=int, help="probe FFN width (2048)")
    rp.add_argument("--dropout", type=float, help="probe dropout (0.1)")
    rp.add_argument("--lr", type=float, help="Adam learning rate (5e-4)")
    rp.add_argument("--warmup", type=int, help="warm-up steps then inverse sqrt (0: constant rate)")
    rp.add_argument("--batch-sentences", type=int, help="sentences per probe update (32)")
    rp.add_argument("--patience", type=int, help="epochs without a better valid NLL (3)")
    rp.add_argument("--max-epochs", type=int, help="(50)")
    _add_device_args(rp)
    rp.set_defaults(func=run_reconstruction_probes)


def run_reconstruction_probes(args: argparse.Namespace) -> int:
    from pathlib import Path

    from nmtvariants.analysis.reconstruction_layers import (
        ReconstructionLayerSettings,
        reconstruction_layers,
        write_csv,
    )
    from nmtvariants.analysis.reconstruction_probe import ReconstructionConfig
    from nmtvariants.data.dataset import binarize
    from nmtvariants.data.vocab import Vocabulary

    _check_positive(args, "max_sentences", "max_tokens", "batch_size")
    if (args.test_source is None) != (args.test_target is None):
        raise ConfigError("--test-source and --test-target go together (a held-out parallel test set)")
    probe = _settings(ReconstructionConfig, args, seed=args.seed, device=args.device)
    settings = ReconstructionLayerSettings(
        valid_fraction=args.valid_fraction,
        test_fraction=args.test_fraction,
        max_sentences=args.max_sentences,
        max_tokens=args.max_tokens,
        decode=tuple(dict.fromkeys(args.decode)),
        modules=tuple(dict.fromkeys(args.modules)),
        batch_size=args.batch_size,
        dtype=STATE_DTYPES[args.dtype],
        probe=probe,
    )
    model, data = _load_test_set(args)
    test_data = None
    if args.test_source:
        test_data = binarize(args.test_source, args.test_target, Vocabulary.load(args.vocab))
    rows = reconstruction_layers(model, data, settings, args.label or Path(args.checkpoint).stem, test_data)
    write_csv(args.output, rows)
    return 0
