"""Keep freed memory in the process instead of handing it back to the kernel after every step.

Why: glibc's ``malloc`` serves blocks above its mmap threshold (at most 32 MB) with a fresh ``mmap``
and unmaps them on ``free``. A CPU training step allocates and frees such blocks, so every step
page-faults them back in and the kernel zeroes them again. With full ``[tokens, vocabulary]`` logits
(~130 MB for 4k tokens and 8k types) that was ~12% of the wall time on the peers' benchmark model;
since the loss works in row blocks (training/loss.py) the gain is smaller: kernel time over 30 fp32
updates 6-8 s -> 3 s, tokens/s +1-6% (noisy), and nothing measurable under bf16 autocast.
PyTorch's CPU tuning guide cures this by preloading jemalloc or tcmalloc; the same effect is had
from glibc itself by turning mmap-backed blocks off (large blocks then come from the main heap,
glibc's fallback for every arena) and not trimming the heap top, so freed blocks are reused.
The cost is a higher steady resident size (~5-10% on that benchmark), since freed blocks stay mapped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

# mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_done = False


def keep_freed_memory() -> bool:
    """Tune glibc malloc as described above; True if it took effect (False off glibc, e.g. macOS)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and other C libraries have no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = mallopt(_M_MMAP_MAX, 0) == 1 and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1
    if not ok:
        log.debug("mallopt refused the allocator settings; keeping the defaults")
    _done = ok
    return ok
