"""Let Intel MKL, inside PyTorch's CPU build, run its AVX-512 kernels on AMD CPUs too.

Why: MKL chooses its code path by CPU *vendor*, not by instruction set. On an AMD CPU its internal
``mkl_serv_intel_cpu_true()`` answers 0 and every fp32 matrix product (``F.linear``, ``torch.mm``)
runs a generic AVX2 path. On the Zen 4 machine of the speed benchmarks (AVX-512) that path is
1.2-1.3x slower at the models' shapes than MKL's AVX-512 one (``benchmarks/results/mkl_dispatch.md``),
and the products are most of the time of a CPU training step or beam-search step. CTranslate2 avoids
MKL on AMD for this reason. The remedy used, e.g., in PyTorch Docker images for AMD servers: a
library that defines ``mkl_serv_intel_cpu_true`` to answer 1, loaded before MKL, so that the dynamic
linker binds MKL's call to it (PyTorch's library calls it through its symbol table).

:func:`use_fast_mkl_kernels` compiles that one-function library once with the system's C compiler,
loads it into this process before torch is imported, and adds it to ``LD_PRELOAD`` so that child
processes (DDP workers, ...) load it too. It does nothing on other vendors, off Linux, after torch
has been imported (its symbols are bound then), or without a C compiler; :func:`status` says which.
Results move only by floating-point rounding (another summation order), as between two CPU kinds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from nmtvariants import native
from nmtvariants.hardware import cpuinfo_fields

SOURCE = "int mkl_serv_intel_cpu_true(void) { return 1; }\n"
LIBRARY_NAME = "mkl_intel_cpu_true"
AMD_VENDOR = "AuthenticAMD"

_status = "not asked for"


def library_path() -> Path:
    """Where the compiled library is kept: the user's cache, named by the source's hash."""
    return native.library_path(LIBRARY_NAME, SOURCE)


def use_fast_mkl_kernels(cpuinfo: str | None = None) -> str:
    """Load the library into this process and its children if the CPU is AMD; what was done.

    Call before ``import torch``. ``cpuinfo``: /proc/cpuinfo's text (default: read it)."""
    global _status
    vendor = cpuinfo_fields(cpuinfo).get("vendor_id", "")
    if not sys.platform.startswith("linux"):
        _status = "vendor dispatch (not Linux)"
    elif vendor != AMD_VENDOR:
        _status = f"vendor dispatch ({vendor or 'unknown vendor'}: MKL picks its kernels itself)"
    elif "torch" in sys.modules:
        _status = "vendor dispatch (torch was imported first)"
    else:
        _status = _load(library_path())
    return _status


def _load(library: Path) -> str:
    import ctypes

    try:
        if not library.is_file() and (why := native.build(library, SOURCE)) is not None:
            return f"vendor dispatch ({why})"
        ctypes.CDLL(str(library), mode=os.RTLD_GLOBAL)
    except OSError as error:
        return f"vendor dispatch ({error})"
    if not set(str(library)) & {" ", ":"}:  # LD_PRELOAD separates paths by either
        preload = os.environ.get("LD_PRELOAD", "")
        if str(library) not in preload.split(":"):
            os.environ["LD_PRELOAD"] = f"{library}:{preload}" if preload else str(library)
    return "AVX-512 kernels on AMD (mkl_serv_intel_cpu_true answers 1)"


def status() -> str:
    """What :func:`use_fast_mkl_kernels` did in this process, or inherited (for run records)."""
    if _status == "not asked for" and str(library_path()) in os.environ.get("LD_PRELOAD", "").split(":"):
        return "AVX-512 kernels on AMD (LD_PRELOAD from the parent process)"
    return _status
