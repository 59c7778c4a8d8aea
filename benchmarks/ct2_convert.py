"""Convert a baseline nmtvariants checkpoint into a CTranslate2 model, and check the conversion.

Why: issue 23 compares our beam search with CTranslate2's, and a fair comparison decodes the *same*
weights. CTranslate2 is not a dependency of the project (it is not in the lock); install it beside it
(``pip install --target DIR ctranslate2==4.8.5`` and put DIR on PYTHONPATH) to run this script.

The model is described with CTranslate2's public ``ctranslate2.specs`` API (TransformerSpec with a
TransformerEncoderSpec and a TransformerDecoderSpec), filled as its own converters fill it, from our
architecture (models/transformer.py, layers.py, attention.py, embeddings.py):

* pre-norm (``x + f(LN(x))``) with a final LayerNorm per stack, or post-norm (``LN(x + f(x))``) with
  none (``ModelConfig.norm``, ``final_norm``); LayerNorm epsilon ``layer_norm_eps`` (1e-5; CTranslate2's
  default differs, so it is written into the model's config);
* token embeddings scaled by sqrt(d), then the T2T sinusoids added (first half sines, second half
  cosines): the table ``sinusoidal_positions`` computes is stored in the model (PositionEncoderSpec
  ``encodings``), because CTranslate2's own sinusoids are not these (the self-check's control: 31 of
  50 greedy outputs identical without the table); positions start at 0 on both sides (the decoder's
  ``<s>`` is position 0);
* attention: Q, K, V (fused into one matrix for self-attention, K and V fused for cross-attention)
  and the output projection, biases only where the model has them (``attention_bias``), scores scaled
  by 1/sqrt(d_head) (CTranslate2's default ``queries_scale``); FFN Linear-ReLU-Linear with biases;
* embeddings: one table for source, target and output (``share_embeddings: all``), target = output with
  its own source table (``decoder``), or three (``none``); the output projection has no bias;
* vocabulary: ours is joint, registered on both sides; sources are ``tokens + </s>``
  (``add_source_eos``), decoding starts from ``<s>``.

What CTranslate2 cannot express, refused with one line: every study's variant plug-in (lexical shortcuts'
gated keys/values, PASCAL's and LISA's score transforms, S&H's extra inputs, reordered or simplified
decoder layouts, multi-source and image encoders); a baseline checkpoint converts.

Usage:
  python benchmarks/ct2_convert.py --checkpoint CKPT --vocab VOCAB --out DIR [--check SRC] [--n 50]
``--check`` decodes the first ``--n`` lines of SRC (BPE'd text, one sentence a line) greedily with our
beam search (beam 1) and with CTranslate2 in float32, and exits 1 unless every output is identical
(scores are compared too and reported).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from nmtvariants.data.vocab import BOS, EOS, PAD, UNK, Vocabulary
from nmtvariants.errors import ConfigError, NMTVariantsError
from nmtvariants.models import Transformer, load_model
from nmtvariants.models.embeddings import sinusoidal_positions
from nmtvariants.models.variants import SUBLAYER_KINDS


def unsupported(model: Transformer) -> list[str]:
    """What this model has that a CTranslate2 TransformerSpec cannot hold (empty: it converts)."""
    problems = []
    cfg = model.cfg
    if cfg.variant:
        problems.append(f"variant switches {sorted(cfg.variant)} (CTranslate2 has no plug-in seams)")
    if model.n_memories != 1 or model.feature_encoder is not None or len(model.source_encoders):
        problems.append("more than one encoder or a feature encoder")
    for layer in model.decoder_layers:
        if tuple(layer.layout) != SUBLAYER_KINDS:
            problems.append(f"decoder layout {','.join(layer.layout)} (CTranslate2: self,cross,ffn only)")
            break
    for name, module in model.named_modules():
        seams = (getattr(module, "kv_transform", None), getattr(module, "score_transform", None))
        if any(seam is not None for seam in seams):
            problems.append(f"{name}: a key/value or score transform")
        if getattr(module, "residual_from_normed", False):
            problems.append(f"{name}: residual from the normalised input")
        if getattr(module, "feature_transform", None) is not None:
            problems.append(f"{name}: an embedding feature transform")
    return problems


def numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().float().cpu().numpy()


def set_linear(spec: Any, module: torch.nn.Module) -> None:
    spec.weight = numpy(module.weight)
    if module.bias is not None:
        spec.bias = numpy(module.bias)


def fused_linear(spec: Any, modules: list[torch.nn.Module]) -> None:
    """One Linear whose output is the concatenation of ``modules``' outputs (CTranslate2's fused QKV)."""
    spec.weight = np.concatenate([numpy(m.weight) for m in modules])
    if modules[0].bias is not None:
        spec.bias = np.concatenate([numpy(m.bias) for m in modules])


def set_norm(spec: Any, norm: torch.nn.LayerNorm) -> None:
    spec.gamma = numpy(norm.weight)
    spec.beta = numpy(norm.bias)


def set_attention(spec: Any, block: torch.nn.Module, self_attention: bool) -> None:
    attn = block.attn if self_attention else block.attns[0]
    if self_attention:
        fused_linear(spec.linear[0], [attn.q_proj, attn.k_proj, attn.v_proj])
    else:
        set_linear(spec.linear[0], attn.q_proj)
        fused_linear(spec.linear[1], [attn.k_proj, attn.v_proj])
    set_linear(spec.linear[-1], attn.o_proj)
    set_norm(spec.layer_norm, block.norm)


def set_ffn(spec: Any, block: torch.nn.Module) -> None:
    set_linear(spec.linear_0, block.w1)
    set_linear(spec.linear_1, block.w2)
    set_norm(spec.layer_norm, block.norm)


def set_inputs(spec: Any, embedder: torch.nn.Module, positions: np.ndarray) -> None:
    table = numpy(embedder.table.weight)
    if isinstance(spec.embeddings, list):
        spec.embeddings[0].weight = table
    else:
        spec.embeddings.weight = table
    spec.scale_embeddings = embedder.scale != 1.0  # True: sqrt(d), CTranslate2's own factor
    spec.position_encodings.encodings = positions


def build_spec(model: Transformer, tokens: list[str]) -> Any:
    """A validated CTranslate2 TransformerSpec holding ``model``'s weights and vocabulary ``tokens``."""
    from ctranslate2.specs import common_spec, transformer_spec

    problems = unsupported(model)
    if problems:
        raise ConfigError("CTranslate2 cannot express this model: " + "; ".join(problems))
    cfg = model.cfg
    pre = cfg.norm == "pre"
    no_final = not (pre and cfg.final_norm)
    layout = {"pre_norm": pre, "no_final_norm": no_final, "activation": common_spec.Activation.RELU}
    encoder = transformer_spec.TransformerEncoderSpec(len(model.encoder_layers), cfg.n_heads, **layout)
    decoder = transformer_spec.TransformerDecoderSpec(len(model.decoder_layers), cfg.n_heads, **layout)
    positions = sinusoidal_positions(cfg.max_positions, cfg.d_model).numpy()
    set_inputs(encoder, model.src_embed, positions)
    set_inputs(decoder, model.tgt_embed, positions)
    for spec, layer in zip(encoder.layer, model.encoder_layers, strict=True):
        set_attention(spec.self_attention, layer.self_attn, self_attention=True)
        set_ffn(spec.ffn, layer.ffn)
    for spec, layer in zip(decoder.layer, model.decoder_layers, strict=True):
        set_attention(spec.self_attention, layer.self_attn, self_attention=True)
        set_attention(spec.attention, layer.cross_attn, self_attention=False)
        set_ffn(spec.ffn, layer.ffn)
    if not no_final:
        set_norm(encoder.layer_norm, model.encoder_norm)
        set_norm(decoder.layer_norm, model.decoder_norm)
    decoder.projection.weight = numpy(model.output_weight)  # tied: the target table itself
    spec = transformer_spec.TransformerSpec(encoder, decoder)
    spec.config.layer_norm_epsilon = cfg.layer_norm_eps
    spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = UNK, BOS, EOS
    spec.config.decoder_start_token = BOS
    spec.config.add_source_eos = True
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    spec.validate()
    return spec


def convert(
    checkpoint: str | Path, vocab: str | Path, out: str | Path, spoil: Callable[[Any], None] | None = None
) -> Path:
    """Write the CTranslate2 model of ``checkpoint`` (float32 weights) into ``out``; returns ``out``.
    ``spoil`` changes the spec before it is saved (the self-check's controls)."""
    model = load_model(checkpoint).float().eval()
    tokens = Vocabulary.load(vocab).itos
    if len(tokens) != model.vocab_size:
        raise ConfigError(f"{vocab}: {len(tokens)} tokens, but the model has {model.vocab_size}")
    spec = build_spec(model, tokens)
    if spoil is not None:
        spoil(spec)
        spec.validate()
    spec.optimize(quantization=None)  # float32 on disk: compute_type picks int8 at load time
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    spec.save(str(out))
    return out


def greedy_ours(model: Transformer, vocab: Vocabulary, lines: list[str], cap: int) -> list[str]:
    from nmtvariants.inference.beam_search import beam_search
    from nmtvariants.inference.scorer import pad_batch

    outputs = []
    for line in lines:  # one at a time: no padding, as CTranslate2 sees each sentence
        src = pad_batch([vocab.encode(line)])
        (hyp,) = beam_search(model, src, beam_size=1, max_len_a=0, max_len_b=cap, length_norm="none")
        outputs.append(vocab.decode(hyp[0].tokens))
    return outputs


def token_log_probs(model: Transformer, vocab: Vocabulary, line: str, output: str) -> list[float]:
    """Our model's log-probability of each token of ``output`` (and its </s>), teacher-forced."""
    from nmtvariants.inference.scorer import pad_batch

    target = vocab.encode(output)
    src = pad_batch([vocab.encode(line)])
    with torch.inference_mode():
        logits = model(src, torch.tensor([[vocab.stoi[BOS], *target[:-1]]]))
    return torch.log_softmax(logits[0].float(), -1)[torch.arange(len(target)), torch.tensor(target)].tolist()


def check(checkpoint: str | Path, vocab_path: str | Path, model_dir: Path, lines: list[str]) -> dict:
    """Ours and CTranslate2 (float32, one thread) on ``lines``: greedy outputs, which must be identical,
    and every output token's log-probability under both (CTranslate2's ``score_batch``, teacher-forced),
    which must agree to float32 rounding. CTranslate2 decodes with our rules: <pad> and <s> are never
    produced, and at most ``cap`` tokens before </s>."""
    import ctranslate2

    model = load_model(checkpoint).float().eval()
    vocab = Vocabulary.load(vocab_path)
    cap = 40
    ours = greedy_ours(model, vocab, lines, cap)
    translator = ctranslate2.Translator(str(model_dir), device="cpu", compute_type="float32", intra_threads=1)
    theirs = [
        " ".join(result.hypotheses[0])
        for result in translator.translate_batch(
            [line.split() for line in lines],
            beam_size=1,
            max_decoding_length=cap,
            suppress_sequences=[[PAD], [BOS]],
        )
    ]
    scored = translator.score_batch([line.split() for line in lines], [output.split() for output in ours])
    differences = [
        abs(a - b)
        for line, output, result in zip(lines, ours, scored, strict=True)
        for a, b in zip(token_log_probs(model, vocab, line, output), result.log_probs, strict=True)
    ]
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b), None)
    return {
        "sentences": len(lines),
        "identical_greedy_outputs": sum(a == b for a, b in zip(ours, theirs, strict=True)),
        "output_tokens": sum(len(output.split()) for output in ours),
        "max_abs_token_log_prob_difference": max(differences),
        "first_difference": None
        if first is None
        else {"line": first, "ours": ours[first], "ct2": theirs[first]},
    }


# Layouts of the self-check: each switch the conversion reads, in at least one model.
SELFCHECK_MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "small, pre-norm, one table (the decode benchmark's model)": ("small", {}),
    "tiny, post-norm, biased attention, no final norm, three tables": (
        "tiny",
        {"norm": "post", "final_norm": False, "attention_bias": True, "share_embeddings": "none"},
    ),
    "tiny, pre-norm without final norm, unscaled embeddings, own source table": (
        "tiny",
        {"final_norm": False, "scale_embeddings": False, "share_embeddings": "decoder"},
    ),
}


def _builtin_positions(spec: Any) -> None:
    from ctranslate2.specs import model_spec

    spec.encoder.position_encodings.encodings = model_spec.OPTIONAL
    spec.decoder.position_encodings.encodings = model_spec.OPTIONAL


def _unscaled(spec: Any) -> None:
    spec.encoder.scale_embeddings = spec.decoder.scale_embeddings = False


def _shifted_decoder_positions(spec: Any) -> None:
    table = sinusoidal_positions(1025, spec.decoder.embeddings.weight.shape[1]).numpy()
    spec.decoder.position_encodings.encodings = table[1:]


def _epsilon(spec: Any) -> None:
    spec.config.layer_norm_epsilon = 1e-6


# Controls: the first model of SELFCHECK_MODELS converted wrongly on purpose, so that the check is seen
# to catch each mistake (CTranslate2's own sinusoids are not T2T's, so the table must be stored).
CONTROLS: dict[str, Callable[[Any], None]] = {
    "control: positions left to CTranslate2's own sinusoids": _builtin_positions,
    "control: embeddings not scaled by sqrt(d)": _unscaled,
    "control: decoder positions shifted by one": _shifted_decoder_positions,
    "control: LayerNorm epsilon 1e-6 instead of 1e-5": _epsilon,
}


def selfcheck(folder: Path, sentences: int) -> list[dict]:
    """Convert and check random-weight models of every layout in SELFCHECK_MODELS, and the small
    reverser the tests train (tests/model_fixtures.py: a trained model, whose outputs end by choice)."""
    from nmtvariants.data.vocab import SPECIALS
    from nmtvariants.models import build_model, model_config

    reports = []
    generator = torch.Generator().manual_seed(11)
    for index, (name, (preset, overrides)) in enumerate(SELFCHECK_MODELS.items()):
        torch.manual_seed(index)
        model = build_model(model_config(preset, overrides=overrides), 4 + 2000).eval()
        with torch.no_grad():  # biases start at 0 and norms at 1: move them, so that each is read
            for parameter in model.parameters():
                parameter.add_(0.1 * torch.randn(parameter.shape, generator=generator))
        tokens = [*SPECIALS, *(f"w{i}" for i in range(2000))]
        lengths = torch.randint(3, 25, (sentences,), generator=generator).tolist()
        lines = [
            " ".join(tokens[4 + int(t)] for t in torch.randint(0, 2000, (n,), generator=generator))
            for n in lengths
        ]
        reports.append(_check_model(folder / f"model{index}", name, model, tokens, lines))
        if index == 0:
            for number, (control, spoil) in enumerate(CONTROLS.items()):
                path = folder / f"control{number}"
                reports.append(_check_model(path, control, model, tokens, lines, spoil))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from model_fixtures import REVERSE_VOCAB, reverse_batch, trained_reverse_model

    tokens = [*SPECIALS, *(f"w{i}" for i in range(REVERSE_VOCAB - 4))]
    *_, sources = reverse_batch(torch.Generator().manual_seed(5), sentences)
    lines = [" ".join(tokens[int(t)] for t in source[:-1]) for source in sources]
    name = "trained reverser of the tests (d 32, pre-norm, one table)"
    reports.append(_check_model(folder / "reverser", name, trained_reverse_model(), tokens, lines))
    return reports


def _check_model(
    folder: Path,
    name: str,
    model: Transformer,
    tokens: list[str],
    lines: list[str],
    spoil: Callable[[Any], None] | None = None,
) -> dict:
    import dataclasses

    folder.mkdir(parents=True, exist_ok=True)
    checkpoint, vocab = folder / "model.pt", folder / "vocab.txt"
    state = {"model_config": dataclasses.asdict(model.cfg), "vocab_size": len(tokens)}
    torch.save({**state, "model": model.state_dict()}, checkpoint)
    Vocabulary(tokens).save(vocab)
    report = check(checkpoint, vocab, convert(checkpoint, vocab, folder / "ct2", spoil), lines)
    return {"model": name, **report}


def selfcheck_markdown(reports: list[dict], command: str, beside: str) -> str:
    import ctranslate2

    lines = [
        "# CTranslate2 conversion check (benchmarks/ct2_convert.py)",
        "",
        f"Command: `{command}`; ctranslate2 {ctranslate2.__version__}, torch {torch.__version__}, one "
        "thread, float32. Greedy outputs of our beam search (beam 1) and of CTranslate2 on the same "
        "converted weights, and each output token's log-probability under both (teacher-forced; "
        f"CTranslate2's `score_batch`). What else ran: {beside} "
        "The control rows convert the first model wrongly on purpose: "
        "the check must fail there. It does, except for the LayerNorm epsilon: 1e-6 instead of 1e-5 "
        "moves log-probabilities by ~1e-5, the size of float32 rounding here, so the check cannot see "
        "it (the converter writes the model's epsilon into config.json, which CTranslate2 reads).",
        "",
        "| model | sentences | output tokens | identical greedy outputs "
        "| max abs token log-prob difference |",
        "|---|---|---|---|---|",
    ]
    for r in reports:
        lines.append(
            f"| {r['model']} | {r['sentences']} | {r['output_tokens']} | {r['identical_greedy_outputs']} "
            f"| {r['max_abs_token_log_prob_difference']:.1e} |"
        )
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint")
    parser.add_argument("--vocab")
    parser.add_argument("--out", help="folder for the CTranslate2 model (--selfcheck: a temporary one)")
    parser.add_argument(
        "--selfcheck",
        help="instead of converting one checkpoint: convert and check the layouts of SELFCHECK_MODELS "
        "and the tests' trained reverser; writes SELFCHECK.json and SELFCHECK.md",
    )
    parser.add_argument("--check", help="source text: compare greedy outputs of ours and CTranslate2")
    parser.add_argument(
        "--beside",
        default="nothing was started beside it on purpose (no speed is measured here).",
        help="what else ran on the machine, written into the self-check's results",
    )
    parser.add_argument("--n", type=int, default=50, help="lines of --check to decode")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    if args.selfcheck:
        with tempfile.TemporaryDirectory() as tmp:
            reports = selfcheck(Path(args.out or tmp), args.n)
        result = Path(args.selfcheck)
        result.with_suffix(".json").write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")
        given = sys.argv[1:] if argv is None else argv
        command = shlex.join(["python", "benchmarks/ct2_convert.py", *given])
        text = selfcheck_markdown(reports, command, args.beside)
        result.with_suffix(".md").write_text(text, encoding="utf-8")
        print(text)
        right = [r for r in reports if not r["model"].startswith("control:")]
        return 0 if all(r["identical_greedy_outputs"] == r["sentences"] for r in right) else 1
    if not (args.checkpoint and args.vocab and args.out):
        parser.error("--checkpoint, --vocab and --out are needed (or --selfcheck)")
    try:
        out = convert(args.checkpoint, args.vocab, args.out)
        if args.check:
            lines = Path(args.check).read_text(encoding="utf-8").splitlines()[: args.n]
            report = check(args.checkpoint, args.vocab, out, lines)
            print(json.dumps(report))
            return 0 if report["identical_greedy_outputs"] == report["sentences"] else 1
    except NMTVariantsError as error:
        print(f"ct2_convert: error: {error}", file=sys.stderr)
        return 2
    print(f"converted {args.checkpoint} -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
