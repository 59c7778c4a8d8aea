"""benchmarks/cpu_gemm.py: every backend computes the linear layer's product, checked in float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from benchmark_loader import load_benchmark

bench = load_benchmark("cpu_gemm")


@pytest.mark.parametrize("backend", ["torch_mm", "onednn_linear", "numpy"])
def test_each_backend_multiplies_as_a_linear_layer(backend):
    if not bench.available(backend):
        pytest.skip(f"{backend} is not in this torch build")  # the benchmark then leaves it out too
    x, weight = bench.operands(37, 19, 23)
    expected = x.double().numpy() @ weight.double().numpy().T
    result = bench.product(backend, x, weight)()
    result = result.numpy() if isinstance(result, torch.Tensor) else result
    assert result.shape == (37, 23)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


def test_the_table_gives_rates_and_ratios_to_torch():
    row = {"what": "FFN in", "rows": 4, "in": 2, "out": 3}
    row["gflops"] = {"torch_mm": 50.0, "numpy": 75.0}
    row["ratios"] = {"torch_mm": [1.0, 1.0], "numpy": [1.4, 1.6]}
    row["ratio"] = {"torch_mm": 1.0, "numpy": 1.5}
    meta = dict(date="2026-11-27", cpu="cpu", torch="2", numpy="2", numpy_blas="openblas", rounds=2)
    meta.update(min_seconds=0.3, beside="nothing", command="c", backends=["torch_mm", "numpy"])
    lines = bench.markdown({"meta": meta, "shapes": [row]}).splitlines()
    assert "| FFN in | 4 x 2 x 3 | 50.0 | 75.0 | 1.50 (1.40-1.60) |" in lines


def test_the_avx512_child_measures_a_product():
    child = bench.Avx512Child()
    try:
        assert child.status.startswith(("AVX-512 kernels", "vendor dispatch")), child.status
        assert child.rate(64, 32, 48, 0.01) > 0
    finally:
        child.close()


def test_the_bf16_backend_multiplies_as_a_linear_layer_within_bf16_rounding():
    """bfloat16 keeps 8 bits of mantissa: each operand is off by up to 2^-9 relatively, so the
    product is checked against float64 on the rounded operands, with fp32 accumulation's tolerance."""
    x, weight = bench.operands(37, 19, 23)
    rounded = x.bfloat16().double().numpy() @ weight.bfloat16().double().numpy().T
    result = bench.product("torch_mm_bf16", x, weight)()
    assert result.dtype == torch.bfloat16 and result.shape == (37, 23)
    np.testing.assert_allclose(result.double().numpy(), rounded, rtol=2**-7, atol=2**-6)
