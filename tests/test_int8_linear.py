"""inference/int8_linear.py: the int8 layer of ``--dtype int8``, its C passes and its PyTorch ones.

Its arithmetic is checked against an independent computation: the input's integers and scales
recomputed in float64, the integer product in int64 (exact), the rescaling in float64. The native
path (C, built for this CPU) and the PyTorch path (no compiler) must give the same bits.
"""

from __future__ import annotations

import pytest
import torch
from native_fixtures import NO_COMPILER, library_without_compiler

from nmtvariants import native
from nmtvariants.inference import int8_linear
from nmtvariants.inference.int8_linear import Int8Linear, quantize_rows

SHAPES = [(1, 1, 1), (7, 33, 19), (64, 256, 256), (5, 1024, 40)]


@pytest.fixture()
def pytorch_only(tmp_path, monkeypatch):
    """The layer as on a machine without a C compiler: its PyTorch operators."""
    fresh = library_without_compiler(int8_linear, tmp_path, monkeypatch)
    yield
    assert fresh.status == NO_COMPILER


def inputs(rows: int, width: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, width, generator=generator) * torch.logspace(-3, 2, rows)[:, None]
    x[0, : width // 2] = 0.0
    if rows > 2:
        x[2] = 0.0  # a row of zeros: scale 1, integers 0
    return x


def layer(width: int, out: int, bias: bool, seed: int) -> Int8Linear:
    generator = torch.Generator().manual_seed(seed)
    weight = torch.randn(out, width, generator=generator) * torch.linspace(0.01, 2.0, out)[:, None]
    return Int8Linear(weight, torch.randn(out, generator=generator) if bias else None)


def independent(x: torch.Tensor, module: Int8Linear) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Integers and scales of ``x`` per row, and the layer's output, in float64 and int64."""
    x64 = x.double()
    largest = x64.abs().amax(dim=1)
    scales = torch.where(largest > 0, largest / 127, torch.ones_like(largest))
    ints = torch.round(x64 / scales[:, None])
    sums = ints.long() @ module.weight_int8.long()  # exact
    out = sums.double() * scales[:, None] * module.weight_scale.double()
    if module.bias is not None:
        out = out + module.bias.double()
    return ints, scales, out


@pytest.mark.parametrize(("rows", "width", "out"), SHAPES)
def test_the_input_is_quantised_per_row_as_the_float64_computation(rows, width, out):
    x = inputs(rows, width, seed=rows)
    ints, scales = quantize_rows(x)
    want_ints, want_scales, _ = independent(x, layer(width, out, True, seed=1))
    assert ints.dtype == torch.int8 and ints.abs().max() <= 127
    assert torch.allclose(scales.double(), want_scales, rtol=1e-6)
    # float32 and float64 may round a value near a half-step apart: by one, and rarely
    assert (ints.double() - want_ints).abs().max() <= 1
    assert (ints.double() == want_ints).float().mean() >= 0.99


@pytest.mark.parametrize(("rows", "width", "out"), SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_the_output_is_the_exact_integer_product_rescaled(rows, width, out, bias):
    x = inputs(rows, width, seed=rows + 1)
    module = layer(width, out, bias, seed=2)
    got = module(x)
    ints, scales = quantize_rows(x)
    sums = ints.long() @ module.weight_int8.long()
    want = sums.double() * scales.double()[:, None] * module.weight_scale.double()
    if bias:
        want = want + module.bias.double()
    assert got.dtype == torch.float32 and got.shape == (rows, out)
    assert torch.allclose(got.double(), want, rtol=1e-6, atol=1e-6 * want.abs().max().item())
    if rows > 2:  # the row of zeros gives the bias (or zeros)
        assert torch.equal(got[2], module.bias if bias else torch.zeros(out))


def test_leading_axes_are_kept_and_an_empty_input_gives_an_empty_output():
    module = layer(16, 8, True, seed=3)
    x = torch.randn(2, 3, 16)
    assert torch.equal(module(x), module(x.reshape(6, 16)).view(2, 3, 8))
    assert module(torch.empty(0, 4, 16)).shape == (0, 4, 8)


def native_results() -> list[torch.Tensor]:
    results = []
    for rows, width, out in SHAPES:
        x = inputs(rows, width, seed=rows)
        results += [*quantize_rows(x), layer(width, out, True, 4)(x), layer(width, out, False, 4)(x)]
    return results


def test_the_native_and_the_pytorch_path_give_the_same_bits(request):
    if native.compiler() is None:
        pytest.skip("no C compiler: the PyTorch path is the only one (the next test runs it)")
    assert int8_linear.LIBRARY.status.startswith("native kernel (int8_linear-")
    built = native_results()
    request.getfixturevalue("pytorch_only")
    assert all(torch.equal(a, b) for a, b in zip(built, native_results(), strict=True))


def test_without_a_compiler_the_layer_runs_on_pytorch_and_says_why(pytorch_only):
    x = inputs(7, 33, seed=5)
    module = layer(33, 19, True, seed=5)
    _, _, want = independent(x, module)
    assert torch.allclose(module(x).double(), want, rtol=1e-5, atol=1e-5)


def test_with_more_threads_than_the_kernels_take_pytorch_gives_the_same_bits():
    """Over native.NATIVE_MAX_THREADS threads the passes run as PyTorch operators (parallel)."""
    before = torch.get_num_threads()
    single = native_results()
    torch.set_num_threads(native.NATIVE_MAX_THREADS + 1)
    try:
        assert int8_linear._kernels() is None
        many = native_results()
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(a, b) for a, b in zip(single, many, strict=True))
