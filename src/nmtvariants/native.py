"""Small C libraries built on the user's machine with its C compiler, once, and kept in the cache.

Why here and not as a compiled extension: the pipeline installs from pip alone, and its two native
pieces are a few lines each (MKL's vendor check, ``mkl_dispatch``; beam search's pass over the
vocabulary, ``inference.vocab_topk``). Each is optional: without a compiler, or where the library does
not build or load, the caller keeps its pure-PyTorch path and records why.

A library is named by the hash of its source, its compiler flags and, for flags that depend on the
host (``-march=native``), the CPU's model and instruction-set flags, so that a cache shared by
several machine kinds (a cluster's home folder) holds one build per kind and never hands one CPU
code for another.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from nmtvariants.hardware import cpuinfo_fields

HOST_FLAGS = ("-march=native",)
"""Flags whose code depends on the machine that builds it: their libraries are named per CPU kind."""


def cache_folder() -> Path:
    """Where built libraries are kept: ``$XDG_CACHE_HOME/nmtvariants/native`` (or ``~/.cache/...``)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "nmtvariants" / "native"


def library_path(name: str, source: str, flags: Sequence[str] = ()) -> Path:
    """The cache path of library ``name`` built from ``source`` with ``flags``."""
    key = [source, *flags]
    if set(flags) & set(HOST_FLAGS):
        cpu = cpuinfo_fields()
        key += [cpu.get("model name", ""), cpu.get("flags", "")]
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()[:12]
    return cache_folder() / f"{name}-{digest}.so"


def compiler() -> str | None:
    """The C compiler: ``$CC``, else ``cc``, else ``gcc``; None if there is none."""
    return shutil.which(os.environ.get("CC") or "cc") or shutil.which("gcc")


def build(target: Path, source: str, flags: Sequence[str] = (), libraries: Sequence[str] = ()) -> str | None:
    """Compile ``source`` into the shared library ``target`` (atomically); None, or why not.

    Compiling and linking are two steps, so that no compile flag reaches the link (with GCC before
    13, ``-ffast-math`` at link time would change the floating-point mode of the whole process)."""
    cc = compiler()
    if cc is None:
        return "no C compiler (cc)"
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        folder = Path(scratch)
        (folder / "source.c").write_text(source)
        steps = (
            [cc, "-c", "-fPIC", *flags, "-o", str(folder / "source.o"), str(folder / "source.c")],
            [cc, "-shared", "-o", str(folder / target.name), str(folder / "source.o"), *libraries],
        )
        for step in steps:
            result = subprocess.run(step, capture_output=True, text=True)
            if result.returncode != 0:
                return f"{cc} failed: {result.stderr.strip()[:200]}"
        os.replace(folder / target.name, target)
    return None


def built_library(
    name: str, source: str, flags: Sequence[str] = (), libraries: Sequence[str] = ()
) -> tuple[Path | None, str]:
    """The cached library (built first if missing), or None and why it could not be built."""
    target = library_path(name, source, flags)
    if not target.is_file() and (why := build(target, source, flags, libraries)) is not None:
        return None, why
    return target, "built"
