"""Writing result tables: one pandas DataFrame -> a markdown table and a CSV beside it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from nmtvariants.fileio import atomic_write


def write_table(frame: pd.DataFrame, md_path: str | Path, title: str, notes: str = "") -> None:
    """Write ``frame`` as ``md_path`` (markdown, with a title and notes) and the same stem as CSV."""
    md_path = Path(md_path)
    with atomic_write(md_path.with_suffix(".csv")) as out:
        frame.to_csv(out, index=False)
    with atomic_write(md_path) as out:
        out.write(f"# {title}\n\n")
        out.write(frame.to_markdown(index=False, floatfmt=".2f"))
        out.write("\n")
        if notes:
            out.write(f"\n{notes.strip()}\n")
