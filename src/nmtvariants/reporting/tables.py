"""Writing result tables: one pandas DataFrame -> a markdown table, a CSV and a provenance record.

Under the table and its notes, the markdown carries the table's "Deviations from the paper"
(:mod:`nmtvariants.reporting.deviations`), and the provenance record their keys.

The provenance record ``<stem>.provenance.json`` says which code wrote the table and, for each
file the table was built from, the commit that computed it and its sacreBLEU signatures. Library
edits never re-run jobs, so the report must show these -- the table's own commits -- rather than
the commit at report time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.provenance import provenance
from nmtvariants.reporting.deviations import Deviation, deviations_markdown
from nmtvariants.reporting.results import metric_label, score_signatures


def provenance_path(md_path: PathLike) -> Path:
    """``results/tables/x.md`` -> ``results/tables/x.provenance.json``."""
    return Path(md_path).with_suffix(".provenance.json")


def source_record(path: PathLike) -> dict[str, Any]:
    """What the report needs from one input of a table: its commit and signatures (JSON inputs),
    and, for score files, system, test set and scores."""
    path = Path(path)
    record: dict[str, Any] = {"path": path.as_posix(), "provenance": None}
    if path.suffix != ".json":
        return record
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise InputError(
            f"{path}: cannot read this table input ({error}); re-run the stage that wrote it"
        ) from None
    if not isinstance(document, dict):
        return record
    record["provenance"] = document.get("provenance")
    signatures = score_signatures(document)
    if signatures:
        record["signatures"] = signatures
        record["scores"] = {
            metric_label(name, result): result.get("score")
            for name, result in document["scores"].items()
            if isinstance(result, dict)
        }
    for key in ("system", "testset"):
        if isinstance(document.get(key), str):
            record[key] = document[key]
    return record


def write_table(
    frame: pd.DataFrame,
    md_path: PathLike,
    title: str,
    notes: str = "",
    sources: Sequence[PathLike] = (),
    deviations: Sequence[Deviation] = (),
    markdown: pd.DataFrame | None = None,
    floatfmt: dict[str, str] | None = None,
) -> None:
    """Write ``frame`` as ``md_path`` (markdown, with a title, notes and the ``deviations`` from the
    paper that apply to it), the same stem as CSV, and the provenance record of the table and of
    ``sources`` (the files it was built from).

    ``markdown``, when given, is what the markdown shows instead of ``frame`` (e.g. ``mean ± sd``
    cells over seeds, while the CSV keeps the numbers and each seed's score). ``floatfmt`` names the
    columns shown otherwise than with two decimals (p-values: three)."""
    md_path = Path(md_path)
    with atomic_write(md_path.with_suffix(".csv")) as out:
        frame.to_csv(out, index=False)
    record = {
        "title": title,
        "written_by": provenance(),
        "sources": [source_record(source) for source in sources],
        "deviations": [deviation.key for deviation in deviations],
    }
    with atomic_write(provenance_path(md_path)) as out:
        json.dump(record, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")
    with atomic_write(md_path) as out:
        out.write(f"# {title}\n\n")
        shown = frame if markdown is None else markdown
        formats = [(floatfmt or {}).get(str(column), ".2f") for column in shown.columns]
        out.write(shown.to_markdown(index=False, floatfmt=formats))
        out.write("\n")
        if notes:
            out.write(f"\n{notes.strip()}\n")
        if deviations:
            out.write(f"\n{deviations_markdown(deviations)}\n")
