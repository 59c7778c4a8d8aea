"""Sub-commands of the evaluation stage: evaluate, significance, derange, adversarial-summary, aer, ...

Each command is a thin wrapper: parse paths, call one library function, write JSON atomically, print
a one-line summary on stdout for humans and logs.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmtvariants.errors import ConfigError
from nmtvariants.text.subword_map import SEPARATOR


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("evaluate", help="sacreBLEU/chrF/TER, tokenised BLEU, METEOR, RIBES -> JSON")
    p.add_argument("--hyp", type=Path, required=True, help="detokenised hypothesis, one sentence per line")
    p.add_argument("--ref", type=Path, action="append", required=True, help="reference (repeat for more)")
    p.add_argument("-l", "--lang", required=True, help="target language code (picks the BLEU tokenizer)")
    p.add_argument(
        "--metrics",
        default="bleu,chrf,ter",
        help="comma list of bleu,chrf,chrf++,ter,tok-bleu,meteor,ribes (default bleu,chrf,ter)",
    )
    p.add_argument(
        "--tokenize", default=None, help="override the sacreBLEU tokenizer (13a, zh, ja-mecab, ...)"
    )
    p.add_argument(
        "--nltk-data",
        type=Path,
        default=None,
        help="folder for the WordNet copy METEOR needs (default $NMTVARIANTS_NLTK_DATA or ~/.cache)",
    )
    p.add_argument(
        "--wordnet",
        type=Path,
        default=None,
        help="WordNet 3.0 dict folder NLTK's METEOR reads (default /usr/share/wordnet, Debian's)",
    )
    p.add_argument(
        "--meteor-home",
        type=Path,
        default=None,
        help="folder of the Meteor 1.5 release (meteor-1.5.jar, data/); METEOR is then Meteor 1.5 run "
        "with java, as the paper's MultEval, instead of NLTK's METEOR",
    )
    p.add_argument(
        "--preprocess",
        choices=["none", "multi30k"],
        default="none",
        help="multi30k: lowercase + Moses-normalise + tokenise hypothesis and raw references, then score "
        "whitespace tokens (the WMT multimodal evaluation; see evaluation/evaluate.py)",
    )
    p.add_argument("--system", required=True, help="system name recorded in the JSON")
    p.add_argument("--testset", required=True, help="test-set name recorded in the JSON")
    p.add_argument("--json", type=Path, required=True, help="output JSON")
    p.set_defaults(func=run_evaluate)

    p = subparsers.add_parser(
        "derange", help="adversarial input: a seeded derangement of a test set's lines or image features"
    )
    p.add_argument("--input", type=Path, required=True, help="text file, or F.npy with --kind features")
    p.add_argument("--output", type=Path, required=True, help="deranged text, or a feature index file")
    p.add_argument("--seed", type=int, required=True, help="seed of the derangement (one file per seed)")
    p.add_argument(
        "--kind",
        choices=["text", "features"],
        default="text",
        help="text: permute lines; features: write a 1-based --feature-index file for translate",
    )
    p.add_argument(
        "--feature-index", type=Path, default=None, help="features: the clean run's feature index, if any"
    )
    p.add_argument("--ids-output", type=Path, default=None, help="features: image id of each line")
    p.set_defaults(func=run_derange)

    p = subparsers.add_parser(
        "adversarial-summary", help="clean vs mean/std adversarial scores per randomised input (CSV/JSON)"
    )
    p.add_argument("--clean", type=Path, required=True, help="score JSON of the clean run (evaluate)")
    p.add_argument(
        "--run",
        action="append",
        required=True,
        help="NAME=SCORES.json of one adversarial run (repeat: one per seed and randomised input)",
    )
    p.add_argument("--metrics", default="bleu,meteor", help="comma list of metrics (default bleu,meteor)")
    p.add_argument("--json", type=Path, default=None, help="output JSON")
    p.add_argument("--csv", type=Path, default=None, help="output CSV")
    p.set_defaults(func=run_adversarial_summary)

    p = subparsers.add_parser(
        "significance",
        help="paired bootstrap of a system against a baseline over sentences and, with one output per "
        "training seed, over replicas (one output each: sacreBLEU's paired bootstrap)",
    )
    p.add_argument(
        "--baseline", type=Path, action="append", required=True, help="one output per seed (repeat)"
    )
    p.add_argument("--system", type=Path, action="append", required=True, help="one output per seed (repeat)")
    p.add_argument("--ref", type=Path, action="append", required=True)
    p.add_argument("-l", "--lang", default="", help="target language (picks the BLEU tokenizer)")
    p.add_argument("--metrics", default="bleu", help="comma list of bleu,chrf,chrf++,ter (default bleu)")
    p.add_argument("--samples", type=int, default=1000)
    p.add_argument("--seed", type=int, default=12345)
    p.add_argument("--json", type=Path, required=True)
    p.set_defaults(func=run_significance)

    p = subparsers.add_parser("bleu-by-length", help="BLEU per source-length bucket (PASCAL Figure 2)")
    p.add_argument("--src", type=Path, required=True, help="tokenised source (lengths = whitespace tokens)")
    p.add_argument("--hyp", type=Path, required=True)
    p.add_argument("--ref", type=Path, action="append", required=True)
    p.add_argument("-l", "--lang", required=True)
    p.add_argument("--edges", default="10,20,30,40,50", help="bucket edges, e.g. 10,20,30,40,50")
    p.add_argument("--json", type=Path, required=True)
    p.set_defaults(func=run_bleu_by_length)

    p = subparsers.add_parser("contrawsd-expand", help="ContraWSD JSON -> (source, candidate) text files")
    p.add_argument("--json", type=Path, required=True, help="ContraWSD test set (JSON array)")
    p.add_argument("--source-out", type=Path, required=True)
    p.add_argument("--candidate-out", type=Path, required=True)
    p.set_defaults(func=run_contrawsd_expand)

    p = subparsers.add_parser("contrawsd", help="ContraWSD accuracy from one score per expanded line")
    p.add_argument("--json", type=Path, required=True, help="ContraWSD test set (JSON array)")
    p.add_argument("--scores", type=Path, required=True, help="one score per line, in expansion order")
    p.add_argument("--out-json", type=Path, required=True)
    p.add_argument("--out-csv", type=Path, required=True)
    p.add_argument("--maximize", action="store_true", help="higher is better (log-probabilities)")
    p.set_defaults(func=run_contrawsd)

    p = subparsers.add_parser("aer", help="alignment error rate against gold sure/possible links")
    p.add_argument("--hyp", type=Path, required=True, help="Pharaoh i-j links, 0-based, source-target")
    _add_gold_arguments(p)
    p.add_argument("--src", type=Path, help="tokenised source sentences: reject gold links outside them")
    p.add_argument("--tgt", type=Path, help="tokenised target sentences (with --src)")
    p.add_argument("--json", type=Path, default=None, help="also write the result as JSON")
    p.set_defaults(func=run_aer)

    p = subparsers.add_parser(
        "layer-aer",
        help="AER and cumulative coverage of the cross-attention (SEM) alignment of every decoder layer",
    )
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--vocab", type=Path, required=True)
    p.add_argument("--src", type=Path, required=True, help="BPE'd source, one gold sentence per line")
    p.add_argument("--tgt", type=Path, required=True, help="BPE'd target (teacher forcing)")
    _add_gold_arguments(p)
    p.add_argument(
        "--src-words", type=Path, help="source in the gold's tokenisation: check the word count per line"
    )
    p.add_argument("--tgt-words", type=Path, help="target in the gold's tokenisation (with --src-words)")
    p.add_argument("--head-merge", choices=["mean", "max"], default="mean", help="merge of the heads")
    p.add_argument("--separator", default=SEPARATOR, help=f"BPE continuation marker (default {SEPARATOR})")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass")
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--output", type=Path, required=True, help="CSV, one row per decoder layer")
    p.set_defaults(func=run_layer_aer)

    p = subparsers.add_parser("symmetrize", help="grow-diag-final-and of forward and reverse alignments")
    p.add_argument("--fwd", type=Path, required=True)
    p.add_argument("--rev", type=Path, required=True)
    p.add_argument("-o", "--out", type=Path, required=True)
    p.add_argument(
        "--method",
        default="grow-diag-final-and",
        choices=["intersect", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and"],
    )
    p.set_defaults(func=run_symmetrize)


def _add_gold_arguments(p: argparse.ArgumentParser) -> None:
    """The gold file, its format and index base, its direction (shared by aer and layer-aer)."""
    p.add_argument("--gold", type=Path, required=True)
    p.add_argument(
        "--format",
        default="pharaoh",
        choices=["hansards", "pharaoh", "talp", "berkeley"],
        help="gold format (default pharaoh: i-j sure, i?j possible); the format implies its index base: "
        "talp and hansards 1-based, pharaoh and berkeley 0-based",
    )
    base = p.add_mutually_exclusive_group()
    base.add_argument(
        "--one-based", dest="one_based", action="store_const", const=True, help="gold indices start at 1"
    )
    base.add_argument(
        "--zero-based",
        dest="one_based",
        action="store_const",
        const=False,
        help="gold indices start at 0 (e.g. KFTT's jaen.talp, a 0-based talp file)",
    )
    p.add_argument("--reverse-gold", action="store_true", help="gold lists target position first")
    p.add_argument(
        "--keep-out-of-range",
        action="store_true",
        help="keep gold links outside their sentence (warning) instead of failing",
    )


def _comma_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def run_evaluate(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.evaluate import evaluate
    from nmtvariants.evaluation.results import write_scores_json

    scores = evaluate(
        args.hyp,
        args.ref,
        args.lang,
        _comma_list(args.metrics),
        args.tokenize,
        args.nltk_data,
        args.preprocess,
        args.meteor_home,
        args.wordnet,
    )
    write_scores_json(args.json, args.system, args.testset, scores)
    summary = " ".join(f"{name}={record['score']:.2f}" for name, record in scores["scores"].items())
    print(f"{args.system} {args.testset}: {summary}")


def run_derange(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.adversarial import derange_features, derange_text_file

    if args.kind == "text":
        if args.feature_index is not None or args.ids_output is not None:
            raise ConfigError("derange: --feature-index and --ids-output go with --kind features")
        report = derange_text_file(args.input, args.output, args.seed)
    else:
        report = derange_features(args.input, args.output, args.seed, args.feature_index, args.ids_output)
    print(
        f"{report['items']} {args.kind} items deranged (seed {args.seed}) -> {args.output}; "
        f"{report['identical_copies']} unavoidable identical copies"
    )


def run_adversarial_summary(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.adversarial import parse_runs, summarize_adversarial, write_summary

    if args.json is None and args.csv is None:
        raise ConfigError("adversarial-summary: give --json and/or --csv")
    summary = summarize_adversarial(args.clean, parse_runs(args.run), _comma_list(args.metrics))
    write_summary(summary, args.json, args.csv)
    for row in summary["rows"]:
        parts = [f"{m} {row[f'{m}_clean']:.2f} -> {row[f'{m}_adv_mean']:.2f}" for m in summary["metrics"]]
        print(f"{row['randomised']} ({row['runs']} runs): " + ", ".join(parts))


def run_significance(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.inputs import read_text
    from nmtvariants.evaluation.results import file_record, write_json
    from nmtvariants.evaluation.significance import replica_bootstrap

    refs = [read_text(ref) for ref in args.ref]
    result = replica_bootstrap(
        [read_text(path) for path in args.baseline],
        [read_text(path) for path in args.system],
        refs,
        args.lang,
        _comma_list(args.metrics),
        args.samples,
        args.seed,
    )
    result["baseline_files"] = [file_record(path) for path in args.baseline]
    result["system_files"] = [file_record(path) for path in args.system]
    result["references"] = [file_record(ref) for ref in args.ref]
    write_json(args.json, result)
    for name, record in result["metrics"].items():
        print(
            f"{name}: {record['baseline']['mean']:.2f} -> {record['system']['mean']:.2f} over "
            f"{len(args.baseline)}/{len(args.system)} replicas (p = {record['p_value']:.4f})"
        )


def run_bleu_by_length(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.inputs import read_hyp_refs, read_text
    from nmtvariants.evaluation.length_buckets import bleu_by_source_length
    from nmtvariants.evaluation.results import write_json

    try:
        edges = [int(edge) for edge in _comma_list(args.edges)]
    except ValueError:
        raise ConfigError(f"--edges: expected comma-separated integers, got {args.edges!r}") from None
    hyps, refs = read_hyp_refs(args.hyp, args.ref)
    result = bleu_by_source_length(read_text(args.src), hyps, refs, args.lang, edges)
    write_json(args.json, result)
    print(
        " ".join(
            f"{row['bucket']}:{row['bleu'] if row['bleu'] is None else round(row['bleu'], 2)}"
            for row in result["buckets"]
        )
    )


def run_contrawsd_expand(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.contrawsd import write_expansion

    count = write_expansion(args.json, args.source_out, args.candidate_out)
    print(f"{count} (source, candidate) lines")


def run_contrawsd(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.contrawsd import evaluate_contrawsd

    result = evaluate_contrawsd(args.json, args.scores, args.out_json, args.out_csv, args.maximize)
    print(f"total : {result['correct']} {result['n_elements']} {result['accuracy']}")


def run_aer(args: argparse.Namespace) -> None:
    from nmtvariants.corpora.alignments import read_alignments, read_token_counts
    from nmtvariants.evaluation.alignment import alignment_error_rate
    from nmtvariants.evaluation.results import write_json

    lengths = None
    if (args.src is None) != (args.tgt is None):
        raise ConfigError("aer: give both --src and --tgt (the tokenised sentences) or neither")
    if args.src is not None:
        lengths = (read_token_counts(args.src), read_token_counts(args.tgt))
    gold = read_alignments(
        args.gold,
        args.format,
        one_based=args.one_based,
        reverse=args.reverse_gold,
        lengths=lengths,
        keep_out_of_range=args.keep_out_of_range,
    )
    hyp = [g.possible for g in read_alignments(args.hyp, "pharaoh")]
    result = alignment_error_rate(hyp, gold)
    if args.json is not None:
        write_json(args.json, {**result, "gold": str(args.gold), "hyp": str(args.hyp), "format": args.format})
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}))


def run_layer_aer(args: argparse.Namespace) -> None:
    import torch

    from nmtvariants.data.vocab import Vocabulary
    from nmtvariants.evaluation.layer_alignment import layer_aer, read_alignment_set, write_layer_csv
    from nmtvariants.inference.translate import check_vocabulary
    from nmtvariants.models import load_model

    if args.batch_size < 1:
        raise ConfigError(f"--batch-size must be positive, got {args.batch_size}")
    if (args.src_words is None) != (args.tgt_words is None):
        raise ConfigError("layer-aer: give both --src-words and --tgt-words or neither")
    if args.threads:
        torch.set_num_threads(args.threads)
    test_set = read_alignment_set(
        args.src,
        args.tgt,
        args.gold,
        args.format,
        one_based=args.one_based,
        reverse=args.reverse_gold,
        keep_out_of_range=args.keep_out_of_range,
        separator=args.separator,
        words=None if args.src_words is None else (args.src_words, args.tgt_words),
    )
    model = load_model(args.checkpoint, map_location=args.device)
    vocab = Vocabulary.load(args.vocab)
    check_vocabulary(model, vocab, args.vocab)
    rows = layer_aer(model, vocab, test_set, args.batch_size, args.device, args.head_merge)
    write_layer_csv(args.output, rows)
    print(" ".join(f"L{row['layer']}: aer={row['aer']:.3f} cc={row['coverage']:.3f}" for row in rows))


def run_symmetrize(args: argparse.Namespace) -> None:
    from nmtvariants.evaluation.symmetrize import symmetrize_files

    count = symmetrize_files(args.fwd, args.rev, args.out, args.method)
    print(f"{count} sentence pairs symmetrised ({args.method})")
