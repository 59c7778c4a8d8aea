"""nmtvariants.hardware: where a result was computed."""

from __future__ import annotations

import os
import platform
from pathlib import Path

import torch

from nmtvariants.hardware import cpu_model, hardware_info


def test_hardware_info_reports_this_machine():
    info = hardware_info()
    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    model = next(
        line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")
    )
    assert info["cpu"].startswith(f"{model} (family ")
    assert info["cores"] == os.cpu_count()
    assert info["torch"] == torch.__version__
    assert info["gpus"] == [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]


ZEN4_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni
processor\t: 1
model name\t: another core's line, not read
"""


def test_cpu_model_tells_two_cpus_of_one_model_name_apart():
    """A virtual machine's "AMD EPYC" is a Zen 3 or a Zen 4: family, model and flags say which."""
    assert cpu_model(ZEN4_CPUINFO) == (
        "AMD EPYC (family 25, model 17; has avx2, avx512f, avx512_vnni, avx512_bf16; lacks amx_bf16)"
    )
    zen3 = ZEN4_CPUINFO.replace("model\t\t: 17", "model\t\t: 1").replace(
        " avx512f avx512_bf16 avx512_vnni", ""
    )
    assert cpu_model(zen3) == (
        "AMD EPYC (family 25, model 1; has avx2; lacks avx512f, avx512_vnni, avx512_bf16, amx_bf16)"
    )
    assert cpu_model("") == (platform.processor() or platform.machine())
