"""Figures of the studies, drawn from long-format CSV files and written as PNG beside them.

A figure is only as trustworthy as the numbers under it, so each one is drawn from a CSV that a
rule wrote (the numbers stay readable and diffable) and saved under the same stem:
``results/figures/<study>/<name>.csv`` -> ``<name>.png``. Three kinds, one long-format table each:

- ``layers``: a metric per layer, one line per variant. Columns (defaults): ``layer`` (x),
  ``value`` (y), ``variant`` (one line each, in first-seen order). Probing accuracy per layer,
  attention entropy per layer, ... Replicas (several rows of one variant and layer, one per seed)
  are drawn as their mean with a ± sd band.
- ``bars``: one bar per category, grouped by an optional column. Columns: ``label`` (x), ``value``
  (height), optional ``variant`` (bars side by side). BLEU per variant, accuracy per class, ...
- ``heatmap``: an attention matrix, one row per cell. Columns: ``target_index``, ``target_token``
  (rows), ``source_index``, ``source_token`` (columns), ``weight``. Indices order the axes and
  keep repeated tokens apart.

Matplotlib runs on the Agg backend (set here, on import): jobs have no display. Figures are
built as ``matplotlib.figure.Figure`` objects, not through pyplot's global state, and the library
functions return them so that tests can inspect what was drawn before saving.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.provenance import PNG_COMMIT_KEY, describe, provenance

KINDS = ("layers", "bars", "heatmap")
SIZE = (6.4, 4.8)  # inches; at DPI this is the PNG size of line and bar plots
DPI = 100
HEATMAP_INCHES_PER_TOKEN = 0.4
HEATMAP_MIN_INCHES = 4.0


def read_figure_csv(path: PathLike, columns: Sequence[str], numeric: Sequence[str] = ()) -> pd.DataFrame:
    """The CSV at ``path``, checked to hold ``columns`` (and numbers in ``numeric``)."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except FileNotFoundError:
        raise InputError(f"{path}: no such CSV file; run the rule that writes it first") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a readable CSV ({error}); re-run the rule that writes it") from None
    for column in columns:
        if column not in frame.columns:
            raise InputError(
                f"{path}: no column {column!r} (it has {', '.join(map(str, frame.columns))}); "
                "pass the column options of `nmtvariants figure` or fix the CSV"
            )
    if frame.empty:
        raise InputError(f"{path}: no rows to draw; re-run the rule that writes it")
    for column in numeric:
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = values.isna()
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"{path}:{row + 2}: column {column!r} holds {frame[column].iloc[row]!r}, not a number"
            )
        frame[column] = values
    return frame


def _new_figure(size: tuple[float, float] = SIZE) -> tuple[Figure, Axes]:
    figure = Figure(figsize=size, dpi=DPI)
    return figure, figure.add_subplot()


def layer_figure(
    csv: PathLike,
    x: str = "layer",
    y: str = "value",
    group: str = "variant",
    title: str = "",
    ylabel: str | None = None,
) -> Figure:
    """One line per ``group`` value, ``y`` against ``x`` (sorted by ``x`` within a line).

    Several rows of one (group, x) are replicas (one per training seed, e.g. a ``seed`` column):
    the line is their mean and a band of ± one sample standard deviation is drawn around it, so a
    difference between two lines can be read against the spread of seeds; the legend says how many
    seeds each line averages."""
    frame = read_figure_csv(csv, [x, y, group], numeric=[x, y])
    figure, axes = _new_figure()
    for name, rows in frame.groupby(group, sort=False):
        stats = rows.groupby(x, sort=True)[y].agg(["mean", "std", "count"])
        xs, mean = stats.index.to_numpy(), stats["mean"].to_numpy()
        replicas = int(stats["count"].min())
        label = str(name) if stats["count"].max() == 1 else f"{name} (mean ± sd, n={replicas})"
        (line,) = axes.plot(xs, mean, marker="o", label=label)
        if replicas > 1:
            sd = stats["std"].to_numpy()
            axes.fill_between(xs, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, linewidth=0)
    axes.set_xlabel(x)
    axes.set_ylabel(ylabel or y)
    if frame[x].round().eq(frame[x]).all():
        axes.set_xticks(sorted(frame[x].unique()))
    axes.legend(title=group)
    axes.grid(alpha=0.3)
    axes.set_title(title)
    figure.tight_layout()
    return figure


def bar_figure(
    csv: PathLike,
    x: str = "label",
    y: str = "value",
    group: str | None = None,
    title: str = "",
    ylabel: str | None = None,
) -> Figure:
    """Bars of ``y`` per ``x`` category (first-seen order); with ``group``, grouped side by side."""
    frame = read_figure_csv(csv, [x, y] + ([group] if group else []), numeric=[y])
    figure, axes = _new_figure()
    labels = list(dict.fromkeys(frame[x].astype(str)))
    positions = np.arange(len(labels))
    groups = list(dict.fromkeys(frame[group])) if group else [None]
    width = 0.8 / len(groups)
    for number, name in enumerate(groups):
        rows = frame if name is None else frame[frame[group] == name]
        heights = rows.groupby(rows[x].astype(str), sort=False)[y].mean().reindex(labels)
        offset = (number - (len(groups) - 1) / 2) * width
        axes.bar(positions + offset, heights.to_numpy(), width, label=None if name is None else str(name))
    rotated = max(map(len, labels)) > 8  # long names (test sets, variants) would overlap
    axes.set_xticks(positions, labels, rotation=30 if rotated else 0, ha="right" if rotated else "center")
    axes.set_xlabel(x)
    axes.set_ylabel(ylabel or y)
    if group:
        axes.legend(title=group)
    axes.set_title(title)
    figure.tight_layout()
    return figure


def attention_matrix(
    frame: pd.DataFrame, row_index: str, row_label: str, col_index: str, col_label: str, value: str
) -> tuple[np.ndarray, list[str], list[str]]:
    """Dense matrix (rows x columns, ordered by the index columns) and the two token label lists."""
    rows = frame.drop_duplicates(row_index).sort_values(row_index)
    cols = frame.drop_duplicates(col_index).sort_values(col_index)
    matrix = (
        frame.pivot_table(index=row_index, columns=col_index, values=value, aggfunc="mean")
        .reindex(index=rows[row_index], columns=cols[col_index])
        .to_numpy(dtype=float)
    )
    return matrix, rows[row_label].astype(str).tolist(), cols[col_label].astype(str).tolist()


def heatmap_figure(
    csv: PathLike,
    row_index: str = "target_index",
    row_label: str = "target_token",
    col_index: str = "source_index",
    col_label: str = "source_token",
    value: str = "weight",
    title: str = "",
) -> Figure:
    """Attention heat map: target tokens down, source tokens across, ``value`` as colour."""
    frame = read_figure_csv(
        csv, [row_index, row_label, col_index, col_label, value], numeric=[row_index, col_index, value]
    )
    matrix, row_labels, col_labels = attention_matrix(
        frame, row_index, row_label, col_index, col_label, value
    )
    size = tuple(
        max(HEATMAP_MIN_INCHES, HEATMAP_INCHES_PER_TOKEN * count + 1.5)
        for count in (len(col_labels), len(row_labels))
    )
    figure, axes = _new_figure(size)
    image = axes.imshow(np.ma.masked_invalid(matrix), cmap="viridis", aspect="auto")
    axes.set_xticks(np.arange(len(col_labels)), col_labels, rotation=90)
    axes.set_yticks(np.arange(len(row_labels)), row_labels)
    axes.set_xlabel("source")
    axes.set_ylabel("target")
    figure.colorbar(image, ax=axes, label=value)
    axes.set_title(title)
    figure.tight_layout()
    return figure


def save_png(figure: Figure, out: PathLike) -> Path:
    """Write ``figure`` as PNG atomically (temporary name, then rename); return the path.

    The PNG records the commit of the code that drew it in a text chunk (``PNG_COMMIT_KEY``),
    which the report shows beside the figure.
    """
    out = Path(out)
    with atomic_write(out, "wb") as handle:
        figure.savefig(handle, format="png", dpi=DPI, metadata={PNG_COMMIT_KEY: describe(provenance())})
    return out


def png_path(csv: PathLike) -> Path:
    """Where the figure of ``csv`` goes: beside it, same stem."""
    return Path(csv).with_suffix(".png")
