"""Every benchmark script imports: the library moves under them (a constant that changes module, a
renamed function) and most of them run only by hand, on a quiet machine, long after the change."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


SCRIPTS = sorted(path for path in BENCHMARKS.glob("*.py") if '__name__ == "__main__"' in path.read_text())


def test_every_module_but_the_shared_helpers_is_a_script() -> None:
    helpers = {path.name for path in BENCHMARKS.glob("*.py")} - {path.name for path in SCRIPTS}
    assert helpers == {"result_files.py"}


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_the_script_imports_with_the_library_as_it_is(script: Path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name}: no main()"
