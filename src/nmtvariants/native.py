"""Small C libraries built on the user's machine with its C compiler, once, and kept in the cache.

Why here and not as a compiled extension: the pipeline installs from pip alone, and its native
pieces are a few lines each (MKL's vendor check, ``mkl_dispatch``; beam search's pass over the
vocabulary, ``inference.vocab_topk``; the element-wise passes of the int8 layers,
``inference.int8_linear``). Each is optional: without a compiler, or where the library does not build
or load, the caller keeps its pure-PyTorch path and records why.

A library is named by the hash of its source, its compiler flags and, for flags that depend on the
host (``-march=native``), the CPU's model and instruction-set flags, so that a cache shared by
several machine kinds (a cluster's home folder) holds one build per kind and never hands one CPU
code for another.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from nmtvariants.hardware import cpuinfo_fields

NATIVE_MAX_THREADS = 2
"""The single-threaded kernels run while PyTorch has at most this many intra-op threads; with more, the
callers take PyTorch's own (parallel) operators: measured for the vocabulary pass
(``inference.vocab_topk``: at two threads PyTorch's passes were still 1.35-2.6x slower than the kernel
on one), and taken over for the int8 layers' passes, which give the same bits either way."""

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


class NativeLibrary:
    """The functions of one C source file, built (if need be) and loaded on first use, once per process.

    ``signatures`` maps each function's name to its argument types (ctypes); every function returns
    nothing. Where the library cannot be built or loaded, :meth:`functions` is None and :attr:`status`
    says why, for the caller's record of which path it took.
    """

    def __init__(
        self,
        name: str,
        source_file: Path,
        flags: Sequence[str],
        signatures: Mapping[str, Sequence[type]],
        libraries: Sequence[str] = (),
    ) -> None:
        self.name, self.source_file, self.flags = name, source_file, tuple(flags)
        self.signatures, self.libraries = signatures, tuple(libraries)
        self._lock = threading.Lock()
        self._functions: dict[str, ctypes._CFuncPtr] | None = None
        self._status = "not loaded yet"

    def functions(self) -> dict[str, ctypes._CFuncPtr] | None:
        """The library's functions by name, or None (see :attr:`status`)."""
        with self._lock:
            if self._status == "not loaded yet":
                self._functions, self._status = self._load()
            return self._functions

    @property
    def status(self) -> str:
        """``native kernel (<library file>)``, or ``PyTorch ops (<why not>)``; loads on first use."""
        self.functions()
        return self._status

    def _load(self) -> tuple[dict[str, ctypes._CFuncPtr] | None, str]:
        try:
            library, why = built_library(self.name, self.source_file.read_text(), self.flags, self.libraries)
            if library is None:
                return None, f"PyTorch ops ({why})"
            loaded = ctypes.CDLL(str(library))
            functions = {name: getattr(loaded, name) for name in self.signatures}
        except (OSError, AttributeError) as error:
            return None, f"PyTorch ops ({error})"
        for name, argtypes in self.signatures.items():
            functions[name].argtypes = list(argtypes)
            functions[name].restype = None
        return functions, f"native kernel ({library.name})"
