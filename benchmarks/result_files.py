"""Where a benchmark's record goes: ``<results>/<name>.json`` and ``<name>.md``, each written to a
temporary name and renamed, so that an interrupted run never leaves half a record beside an old one."""

from __future__ import annotations

import json
from pathlib import Path

from nmtvariants.fileio import atomic_write


def write_record(results: Path, name: str, record: dict, markdown: str) -> None:
    """The JSON record and its markdown table, side by side in ``results``."""
    results.mkdir(parents=True, exist_ok=True)
    with atomic_write(results / f"{name}.json") as handle:
        json.dump(record, handle, indent=1)
    with atomic_write(results / f"{name}.md") as handle:
        handle.write(markdown)
