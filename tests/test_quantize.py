"""`translate --dtype int8`: dynamic int8 quantisation of the linear layers for CPU decoding.

Checked against computations that do not go through the int8 kernels: the int8 weights and their
scales are recomputed from the float weights in float64 (symmetric, one scale per output row:
amax / 127), and a quantised layer's output is compared with the float64 product of those
dequantised weights and the input. What is left between the two is the quantisation of the input,
per call and per row on 8 bits: each input value moves by at most half its row's step,
step = max |x_row| / 127, so output j of a row moves by at most step / 2 * sum_i |W_ji|.
tests/test_int8_linear.py checks the layer's own arithmetic (native and PyTorch paths) exactly.

End to end, on the small reverser of model_fixtures through the real command (the BLEU check is
tests/test_translate_dtype.py's, beside bfloat16's): int8 changes some
logits by ~1%, so two candidates that close can swap; at most 4% of the sentences may differ from
float32, corpus BLEU may move by at most 1.5 points, and the n-best and forced-decoding scores stay
near float32's (measured: no sentence differs; mean score differences 0.027 and 0.004; since training
batches are padded to their longest sentence on CPU, 2026-11-27, the reverser, whose training rounds
with the process's MKL kernel path, gave 4 differing sentences of 200 alone, BLEU 98.94 -> 99.04, and 7
in the suite's worker). Models with
plug-ins in every seam quantise and decode too, since the pipeline decodes every variant.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch
import yaml
from model_fixtures import (
    saved_reverse_model,
    single_thread,
    translate_saved,
)
from torch import nn

from nmtvariants.cli import main
from nmtvariants.inference import cli as inference_cli
from nmtvariants.inference.beam_search import beam_search
from nmtvariants.inference.int8_linear import Int8Linear
from nmtvariants.inference.precision import DTYPE_NAMES, quantize_int8
from nmtvariants.models import build_model, model_config

SENTENCES = 200
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    with single_thread():
        yield


def independent_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer weights and per-row scales of symmetric per-row int8, computed in float64."""
    w = weight.double()
    scale = w.abs().amax(dim=1) / 127
    ints = torch.clamp(torch.round(w / scale[:, None]), -127, 127)
    return ints, scale


def activation_bound(x: torch.Tensor, dequantised: torch.Tensor) -> torch.Tensor:
    """[rows, out]: the largest change of each output that quantising ``x`` per row can cause."""
    flat = x.reshape(-1, x.size(-1)).double()
    step = flat.abs().amax(dim=1) / 127
    bound = step[:, None] / 2 * dequantised.abs().sum(dim=1)[None, :]
    return bound.view(*x.shape[:-1], -1)


def test_an_int8_layer_is_the_float64_product_of_its_dequantised_weight():
    generator = torch.Generator().manual_seed(3)
    weight = torch.randn(48, 32, generator=generator) * torch.linspace(0.1, 3.0, 48)[:, None]
    x = torch.randn(10, 32, generator=generator) * torch.linspace(0.01, 5.0, 10)[:, None]
    layer = Int8Linear(weight, None)
    ints, scale = independent_int8(weight)
    assert torch.allclose(layer.weight_scale.double(), scale, rtol=1e-6)
    # round-half cases may land one step apart in float32; no entry further
    assert (layer.weight_int8.t().double() - ints).abs().max() <= 1
    assert (layer.weight_int8.t().double() == ints).float().mean() > 0.99
    dequantised = layer.dequantized_weight().double()
    expected = x.double() @ dequantised.T
    got = layer(x).double()
    bound = activation_bound(x, dequantised)
    assert ((got - expected).abs() <= bound + 1e-5).all()
    # per row: the small rows keep their own fine step (one scale per tensor would not)
    assert ((got - expected).abs()[0] <= bound[-1] / 100).all()
    # and the int8 result is not simply the float one: the weights did move
    assert not torch.allclose(got, x.double() @ weight.double().T, atol=1e-4)


def tiny_model(share: str) -> nn.Module:
    torch.manual_seed(7)
    cfg = model_config("tiny", overrides={"share_embeddings": share})
    return build_model(cfg, 40).eval()


@pytest.mark.parametrize("share", ["all", "decoder", "none"])
def test_every_layout_of_the_output_projection_is_quantised(share):
    """Tied ("all", "decoder") the projection is the target nn.Embedding's table, untied an nn.Linear
    (models/transformer.py); either way the float weight stays and an int8 copy projects."""
    model = tiny_model(share)
    tied = model.output_projection is None
    assert tied == (share in ("all", "decoder"))
    src = torch.tensor([[5, 6, 7, 8, 2], [9, 10, 2, 0, 0]])
    tgt = torch.tensor([[1, 11, 12, 13], [1, 14, 15, 0]])
    with torch.inference_mode():
        reference = model(src, tgt)
        states = model.decode_states(tgt, model.encode_inputs(src))
    float_weight = model.output_weight.detach().clone()
    quantize_int8(model)
    # the embeddings and (untied) the float projection are untouched
    assert isinstance(model.tgt_embed.table, nn.Embedding)
    assert torch.equal(model.output_weight, float_weight)
    assert (model.src_embed.table is model.tgt_embed.table) == (share == "all")
    if not tied:
        assert type(model.output_projection) is nn.Linear
    assert model.quantized_projection is not None
    ffn = model.decoder_layers[0].ffn.w1
    assert isinstance(ffn, Int8Linear)
    with torch.inference_mode():
        projected = model.project(states)
        logits = model(src, tgt)
    ints, scale = independent_int8(float_weight)
    dequantised = ints * scale[:, None]
    expected = states.double() @ dequantised.T
    bound = activation_bound(states, dequantised)
    assert ((projected.double() - expected).abs() <= bound + 1e-5).all()
    # the whole quantised model stays near the float one (random weights: relative to the spread)
    assert (logits - reference).abs().max() < 0.1 * reference.std()


def variant_cases() -> dict[str, tuple[nn.Module, object, torch.Tensor]]:
    """Models with plug-ins in every seam (score and key/value transforms, a reordered decoder, three
    encoders with a feature grid), each with a batch of its inputs and decoder inputs."""
    from test_composed_variants import COMPOSED
    from test_composed_variants import batch as composed_batch
    from test_multi_encoder import SMALL, TWO_PLUS_FEATURES, batch_inputs, targets

    cases = {}
    torch.manual_seed(0)
    inputs, tgt_in, _ = composed_batch()
    tiny = {"d_model": 32, "n_heads": 4, "d_ff": 64}
    cases["pascal+lexical+simplified+lisa"] = (
        build_model(model_config("tiny", overrides=tiny, variant=COMPOSED), 24).eval(),
        inputs,
        tgt_in,
    )
    cases["feature-fusion shortcuts"] = (
        build_model(
            model_config("tiny", overrides=tiny, variant={"shortcuts": {"kind": "feature_fusion"}}), 24
        ),
        inputs.src,
        tgt_in,
    )
    generator = torch.Generator().manual_seed(1)
    inputs, _ = batch_inputs(generator, 3)
    cases["two sources + image features"] = (
        build_model(model_config("tiny", overrides=SMALL, variant={"multi_source": TWO_PLUS_FEATURES}), 24),
        inputs,
        targets(generator, 3, 5),
    )
    return cases


@pytest.mark.parametrize(
    "name", ["pascal+lexical+simplified+lisa", "feature-fusion shortcuts", "two sources + image features"]
)
def test_variants_quantise_and_decode(name):
    """The pipeline decodes every variant: int8 must leave the plug-ins' seams working."""
    model, inputs, tgt_in = variant_cases()[name]
    model.eval()
    with torch.inference_mode():
        reference = model(inputs, tgt_in)
    quantize_int8(model)
    if model.feature_encoder is not None:
        assert type(model.feature_encoder.proj) is nn.Linear  # its weight's dtype is read directly
    with torch.inference_mode():
        logits = model(inputs, tgt_in)
    assert (logits - reference).abs().max() < 0.1 * reference.std()
    hyps = beam_search(model, inputs, beam_size=3, max_len_a=0, max_len_b=6)
    assert len(hyps) == tgt_in.size(0) and all(h for h in hyps)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Checkpoint, vocabulary, source file and references (the reversed sources)."""
    folder = tmp_path_factory.mktemp("int8")
    return folder, saved_reverse_model(folder, SENTENCES)


def translate(folder, dtype: str, output: str, *extra: str) -> list[str]:
    return translate_saved(folder, dtype, output, *extra, "--device", "cpu")


def test_int8_nbest_scores_are_near_float32(setup):
    folder, _ = setup
    extra = ("--nbest", "3", "--beam", "3", "--length-norm", "none")
    quantised = translate(folder, "int8", "nbest8.txt", *extra)
    full = translate(folder, "float32", "nbest32.txt", *extra)
    scores = [float(line.split(" ||| ")[2]) for line in quantised]
    for start in range(0, len(scores), 3):
        assert scores[start] >= scores[start + 1] >= scores[start + 2]
    best_int8 = [float(line.split(" ||| ")[2]) for line in quantised[::3]]
    best_full = [float(line.split(" ||| ")[2]) for line in full[::3]]
    # The bound is the reverser's, whose weights move with the training's rounding: trained through
    # MKL's generic and its AVX-512 kernels (src/nmtvariants/mkl_dispatch.py) the two models gave
    # 0.018 and 0.087 (2026-11-27), the second being the less confident one (forced-decoding test).
    assert sum(abs(a - b) for a, b in zip(best_int8, best_full, strict=True)) / SENTENCES < 0.12


def test_int8_forced_decoding_scores_are_near_float32(setup):
    """`score --dtype int8` (teacher-forced, through the same int8 projection) against float32."""
    folder, references = setup
    (folder / "ref.txt").write_text("\n".join(references) + "\n", encoding="utf-8")
    scores = {}
    for dtype in ("float32", "int8"):
        code = main(
            [
                *("score", "--checkpoint", str(folder / "model.pt"), "--vocab", str(folder / "vocab.txt")),
                *("--source", str(folder / "in.txt"), "--target", str(folder / "ref.txt")),
                *("--output", str(folder / f"score.{dtype}"), "--dtype", dtype, "--device", "cpu"),
            ]
        )
        assert code == 0
        scores[dtype] = [float(x) for x in (folder / f"score.{dtype}").read_text().split()]
    differences = [abs(a - b) for a, b in zip(scores["float32"], scores["int8"], strict=True)]
    assert len(differences) == SENTENCES
    # int8's error grows with the model's uncertainty: the reverser trained through MKL's generic and
    # its AVX-512 kernels scored its references at 0.025 and 0.083 nats a sentence on average, and
    # int8 moved them by 0.003 and 0.013 on average, 0.071 and 0.172 at most (2026-11-27)
    mean_score = sum(abs(x) for x in scores["float32"]) / SENTENCES
    assert sum(differences) / SENTENCES < 0.25 * mean_score and max(differences) < 0.25


def test_int8_on_the_gpu_is_refused_in_one_line(setup, capsys):
    """Checked before the weights are read, so no GPU is needed to see the refusal."""
    folder, _ = setup
    code = main(
        [
            *("translate", "--checkpoint", str(folder / "model.pt"), "--vocab", str(folder / "vocab.txt")),
            *("--input", str(folder / "in.txt"), "--output", str(folder / "gpu.txt")),
            *("--dtype", "int8", "--device", "cuda"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "int8" in err and "--device cpu" in err
    assert not (folder / "gpu.txt").exists()


def test_dtype_names_have_one_home():
    """The workflow's evaluate.dtype (the schema cannot import the names) and both commands that load
    a model accept exactly the formats of inference/precision.py."""
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text(encoding="utf-8"))
    evaluate = schema["$defs"]["experiment"]["properties"]["evaluate"]["properties"]
    assert evaluate["dtype"]["enum"] == list(DTYPE_NAMES)
    subparsers = argparse.ArgumentParser().add_subparsers()
    inference_cli.add_parser(subparsers)
    for command in ("translate", "score"):
        action = next(a for a in subparsers.choices[command]._actions if a.dest == "dtype")
        assert tuple(action.choices) == DTYPE_NAMES
