"""A linear layer that multiplies in int8: ``translate --dtype int8``'s replacement for ``nn.Linear``.

Each call quantises its input per row, symmetric, to [-127, 127] (row scale: the row's largest
magnitude / 127), multiplies with the weight quantised the same way per output row once at load
time (``torch._int_mm``: int8 x int8 with exact int32 sums, VNNI where the CPU has it), and rescales
the sums to float32: ``sum * row_scale * column_scale + bias``.

Why not ``torch.ao``'s dynamic quantisation, which this replaces: on the decode benchmark's shapes
(320 rows, d 256, one Intel Xeon core, 2026-11-28) its ``quantized::linear_dynamic`` took 139-153 us
for a 256 x 256 product of which the integer product itself is ~70 us (``torch._int_mm``), and 3.4 ms
for the 8,004-type output projection against ~2.0 ms; it also quantises the input per tensor on 7 bits
(fbgemm's ``reduce_range``), where one scale per row on 8 bits halves the rounding error of most rows.
The two element-wise passes are a small C library (``int8_linear.c``, built by
:mod:`nmtvariants.native`), single-threaded, one read and one write each; the rescaled output is
written over the int32 sums (same size), so a call allocates nothing else of the output's size.
Without a compiler, or with more PyTorch threads than ``native.NATIVE_MAX_THREADS``, the same
arithmetic runs in PyTorch operators, to the same bits.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch
from torch import nn

from nmtvariants import native

SOURCE_FILE = Path(__file__).with_name("int8_linear.c")
# -ffp-contract=off: no fused multiply-add, so the C path rounds as PyTorch's operators do
FLAGS = ("-O3", "-march=native", "-fopenmp-simd", "-ffp-contract=off")
PROFILER_LABEL = "nmtvariants::int8_linear"
LEVELS = 127.0

_pointer, _size = ctypes.c_void_p, ctypes.c_int64
LIBRARY = native.NativeLibrary(
    "int8_linear",
    SOURCE_FILE,
    FLAGS,
    {
        "quantize_rows": [_pointer, _size, _size, _pointer, _pointer],
        "dequantize_rows": [_pointer, _size, _size, _pointer, _pointer, _pointer, _pointer],
    },
    libraries=("-lm",),
)


def _kernels() -> dict | None:
    """The C passes, or None where PyTorch's operators run them (no compiler, or many threads: the C
    passes are single-threaded, PyTorch's are parallel; both give the same bits)."""
    return LIBRARY.functions() if torch.get_num_threads() <= native.NATIVE_MAX_THREADS else None


def quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` [m, k] float32 as int8 [m, k] and per-row float32 scales [m] (see the module's text)."""
    functions = _kernels()
    if functions is None:
        return _torch_quantize_rows(x)
    x = x.contiguous()
    rows, width = x.shape
    ints = torch.empty(rows, width, dtype=torch.int8)
    scales = torch.empty(rows)
    functions["quantize_rows"](x.data_ptr(), rows, width, ints.data_ptr(), scales.data_ptr())
    return ints, scales


def _torch_quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    largest = x.abs().amax(dim=1)
    scales = torch.where(largest > 0, largest / LEVELS, torch.ones_like(largest))
    ints = torch.round(x * scales.reciprocal()[:, None]).clamp_(-LEVELS, LEVELS).to(torch.int8)
    return ints, scales


def _dequantize(
    sums: torch.Tensor, row_scales: torch.Tensor, column_scales: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """``sums * row_scales[:, None] * column_scales + bias`` as float32, written over ``sums``."""
    functions = _kernels()
    if functions is None:
        out = sums.float() * row_scales[:, None] * column_scales
        return out if bias is None else out + bias
    rows, columns = sums.shape
    out = sums.view(torch.float32)
    functions["dequantize_rows"](
        sums.data_ptr(), rows, columns, row_scales.data_ptr(), column_scales.data_ptr(),
        None if bias is None else bias.data_ptr(), out.data_ptr(),
    )  # fmt: skip
    return out


class Int8Linear(nn.Module):
    """``x @ weight.T + bias`` with int8 products (inference on the CPU only; no gradients)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__()
        ints, scales = _torch_quantize_rows(weight.detach().float())
        self.in_features, self.out_features = weight.size(1), weight.size(0)
        # [in, out]: the layout torch._int_mm takes without a copy
        self.register_buffer("weight_int8", ints.t().contiguous())
        self.register_buffer("weight_scale", scales)
        self.register_buffer("bias", None if bias is None else bias.detach().float().contiguous())

    @classmethod
    def from_float(cls, linear: nn.Linear) -> Int8Linear:
        return cls(linear.weight, linear.bias)

    def dequantized_weight(self) -> torch.Tensor:
        """The weight this layer multiplies by, [out, in] float32 (what quantising it kept)."""
        return self.weight_int8.t().float() * self.weight_scale[:, None]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        leading = x.shape[:-1]
        flat = x.reshape(-1, self.in_features)
        if flat.size(0) == 0:
            return x.new_zeros(*leading, self.out_features)
        with torch.profiler.record_function(PROFILER_LABEL):
            ints, row_scales = quantize_rows(flat.float())
            sums = torch._int_mm(ints, self.weight_int8)
            out = _dequantize(sums, row_scales, self.weight_scale, self.bias)
        return out.view(*leading, self.out_features)

    def extra_repr(self) -> str:
        biased = self.bias is not None
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={biased}"
