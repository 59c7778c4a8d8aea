"""nmtvariants.native: small C libraries built once with the user's compiler and kept in the cache."""

from __future__ import annotations

import ctypes

from nmtvariants import native

SOURCE = "int add_one(int x) { return x + 1; }\n"


def test_a_library_is_built_once_loaded_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if native.compiler() is None:  # such a machine: the caller is told why, and keeps its own path
        assert native.built_library("plus", SOURCE, ("-O2",)) == (None, "no C compiler (cc)")
        return
    library, state = native.built_library("plus", SOURCE, ("-O2",))
    assert state == "built" and library == native.library_path("plus", SOURCE, ("-O2",))
    assert library.parent == tmp_path / "nmtvariants" / "native"
    assert ctypes.CDLL(str(library)).add_one(41) == 42
    stamp = library.stat().st_mtime_ns
    again, _ = native.built_library("plus", SOURCE, ("-O2",))
    assert again == library and library.stat().st_mtime_ns == stamp, "the cached build is reused"
    assert [path.name for path in library.parent.iterdir()] == [library.name], "no scratch left behind"


def test_a_source_that_does_not_compile_says_why_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    library, why = native.built_library("broken", "int f( {", ())
    assert library is None
    assert why.startswith(f"{native.compiler()} failed:" if native.compiler() else "no C compiler"), why
    assert not native.library_path("broken", "int f( {", ()).exists()


def test_host_specific_flags_name_the_library_by_the_cpu_kind(monkeypatch):
    plain = native.library_path("k", SOURCE, ("-O2",))
    host = native.library_path("k", SOURCE, ("-O2", "-march=native"))
    assert plain != host
    monkeypatch.setattr(native, "cpuinfo_fields", lambda: {"model name": "Other CPU", "flags": "sse2"})
    assert native.library_path("k", SOURCE, ("-O2", "-march=native")) != host, "another CPU, another build"
    assert native.library_path("k", SOURCE, ("-O2",)) == plain, "portable code is shared by every CPU"
