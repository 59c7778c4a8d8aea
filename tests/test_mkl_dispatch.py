"""MKL's AVX-512 kernels on AMD: the library binds, products stay correct, children inherit it.

Each check runs in a fresh interpreter, because the library must be loaded before torch is imported.
What MKL decided is read from MKL itself: ``mkl_serv_cpu_detect()`` (exported by PyTorch's CPU
library) gives the code path it runs, 0 for the generic one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from nmtvariants.hardware import cpuinfo_fields
from nmtvariants.mkl_dispatch import AMD_VENDOR, library_path, use_fast_mkl_kernels

PROBE = """
import ctypes, json, os, subprocess, sys
from nmtvariants.mkl_dispatch import use_fast_mkl_kernels, status
if sys.argv[1] == "use":
    use_fast_mkl_kernels()
import torch
library = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
torch.manual_seed(0)
errors = []
for rows, inner, cols in ((320, 256, 8000), (1024, 256, 1024), (64, 512, 2048)):
    a, w = torch.randn(rows, inner), torch.randn(cols, inner)
    exact = a.double() @ w.double().T
    errors.append(float(((torch.nn.functional.linear(a, w) - exact).abs().max() / exact.abs().max())))
child = None
if sys.argv[1] == "use":
    child = json.loads(subprocess.run([sys.executable, __file__, "child"], capture_output=True, text=True,
                                      check=True).stdout)
result = {"path": library.mkl_serv_cpu_detect(), "status": status(), "errors": errors, "child": child}
print(json.dumps(result))
"""


def probe(tmp_path, mode: str) -> dict:
    """The probe in a fresh interpreter, without the library this test process may have preloaded."""
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    preload = [
        path for path in os.environ.get("LD_PRELOAD", "").split(":") if path and path != str(library_path())
    ]
    env = {**os.environ, "LD_PRELOAD": ":".join(preload)}
    out = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout)


def test_amd_cpus_get_the_avx512_path_and_the_products_stay_exact(tmp_path):
    vendor_default, fast = probe(tmp_path, "plain"), probe(tmp_path, "use")
    for result in (vendor_default, fast):
        assert max(result["errors"]) < 1e-5, "fp32 products against a float64 reference"
    amd = cpuinfo_fields().get("vendor_id") == AMD_VENDOR
    compiler = shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")
    if amd and not library_path().is_file() and compiler is None:
        # a machine without a C compiler: MKL keeps its own choice, and the record says why
        assert fast["status"].startswith("vendor dispatch (no C compiler"), fast["status"]
        assert fast["path"] == vendor_default["path"]
    elif amd:
        assert fast["status"].startswith("AVX-512 kernels"), fast["status"]
        assert vendor_default["path"] == 0 and fast["path"] > 0, (vendor_default, fast)
        assert fast["child"]["path"] == fast["path"], "a child process inherits the library (LD_PRELOAD)"
        assert fast["child"]["status"].startswith("AVX-512 kernels")
    else:  # MKL picks its kernels itself: nothing is loaded, and MKL's choice is the same both ways
        assert fast["status"].startswith("vendor dispatch"), fast["status"]
        assert fast["path"] == vendor_default["path"]


def test_other_vendors_and_a_late_call_change_nothing():
    intel = "vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R)\n"
    assert use_fast_mkl_kernels(intel).startswith("vendor dispatch (GenuineIntel")
    import torch  # noqa: F401  (this test process has imported it: too late to bind MKL's call)

    amd = "vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\n"
    assert use_fast_mkl_kernels(amd) == "vendor dispatch (torch was imported first)"
