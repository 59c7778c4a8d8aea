"""A machine without a C compiler, for the tests of the native kernels' PyTorch paths."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest

from nmtvariants import native

NO_COMPILER = "PyTorch ops (no C compiler (cc))"


def library_without_compiler(module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Replace ``module.LIBRARY`` by a fresh, not yet loaded copy on a machine where no compiler is
    found and nothing is cached (``XDG_CACHE_HOME`` empty): it will fall back and say why."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-compiler"))
    monkeypatch.setenv("PATH", str(tmp_path))  # neither cc nor gcc
    assert shutil.which("cc") is None
    library = module.LIBRARY
    fresh = native.NativeLibrary(
        library.name, library.source_file, library.flags, library.signatures, library.libraries
    )
    monkeypatch.setattr(module, "LIBRARY", fresh)
    return fresh
