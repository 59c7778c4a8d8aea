"""Where a result was computed: the CPU (with what tells two CPUs of one model name apart), cores,
memory, GPUs, and the torch and Python versions.

Training and decoding stamp this into their JSON (``run.json``'s ``"hardware"``) and the benchmarks
into their records, so that a figure is compared only with figures from the same kind of machine.
Light on purpose (no torch until a GPU is asked about, no pandas): every training job imports it.
"""

from __future__ import annotations

import os
import platform
from typing import Any

# The instruction sets that decide which kernels a CPU runs (bf16 autocast is fast only with
# avx512_bf16 or AMX): a figure is comparable only with figures from a CPU of the same set.
CPU_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def cpuinfo_fields(cpuinfo: str | None = None) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (``cpuinfo``: the file's text; default: read
    it; no file: no fields)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                cpuinfo = handle.read()
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields


def cpu_model(cpuinfo: str | None = None) -> str:
    """The CPU as /proc/cpuinfo names it, with its family, model and :data:`CPU_FLAGS`.

    A virtual machine may give only "AMD EPYC" as the model name, and two such machines (a Zen 3
    without AVX-512 and a Zen 4 with it) then differ by several times in bf16 speed: the family and
    model numbers and the flags tell them apart. ``cpuinfo``: the file's text (default: read it)."""
    fields = cpuinfo_fields(cpuinfo)
    if "model name" not in fields:
        return platform.processor() or platform.machine()
    flags = set(fields.get("flags", "").split())
    present = [name for name in CPU_FLAGS if name in flags]
    absent = [name for name in CPU_FLAGS if name not in flags]
    return (
        f"{fields['model name']} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}; "
        f"has {', '.join(present) or 'none of ' + ', '.join(CPU_FLAGS)}; lacks {', '.join(absent) or '-'})"
    )


def benchmark_machine() -> dict[str, Any]:
    """The machine a benchmark record names beside its figures (benchmarks/): CPU model, Python, cores."""
    return {"cpu": cpu_model(), "python": platform.python_version(), "cpus": os.cpu_count()}


def hardware_info() -> dict[str, Any]:
    """What this process runs on: CPU model and cores, memory, GPUs, torch and Python versions.

    Jobs that train or decode call this and store the result under ``"hardware"`` in their JSON,
    so that the report can say where each number was computed, not only where it was collected.
    """
    info: dict[str, Any] = {
        "host": platform.node(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    from nmtvariants.mkl_dispatch import status  # imports this module

    info["mkl_kernels"] = status()
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        info["memory_gb"] = round(pages * page_size / 1024**3, 1)
    except (ValueError, OSError):
        pass
    try:
        import torch
    except ImportError:
        info["torch"] = None
        info["gpus"] = []
        return info
    info["torch"] = torch.__version__
    if torch.cuda.is_available():
        info["cuda"] = torch.version.cuda
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    else:
        info["gpus"] = []
    return info
