"""Adversarial evaluation inputs (Libovický et al. 2018, after Elliott 2018) and their summary.

The question is whether a model *uses* an input: translate the same test set once more with that
input replaced by the input of another test sentence, and see how far the score drops. Replacing
must never hand a sentence its own input, so the replacement is a **derangement** (a permutation
without fixed points) of the test set, drawn from an explicit seed; several seeds give several
files, and :func:`summarize_adversarial` reports the mean and standard deviation over them.

* A source language: :func:`derange_text_file` writes the deranged text file (line ``i`` is line
  ``perm[i]`` of the input), given to ``translate`` in place of that source (``--input`` or one
  ``--extra-source``).
* The image: :func:`derange_features` writes a **feature index** (``translate --feature-index``:
  1-based row numbers), not a permuted copy of the feature array. The index is a few kilobytes where
  a copy of a test split's ResNet grid is hundreds of megabytes, and the rows ``translate`` reads
  through it are exactly those of a permuted copy (``data/extra_inputs.py``). When the clean run
  already reads the features through an index (a cleaned test set: the ``.kept`` file), that index is
  deranged instead, so sentence ``i`` gets the image of sentence ``perm[i]``. With the features'
  ``F.ids.txt`` an ids file can be written too: the image id each line now receives.

**Identical items.** A test set can hold the same sentence twice (or, in MSCOCO lists, the same image
under two caption ids); a derangement by position could then give a line an identical copy of its
own input, which is no perturbation at all. Items are therefore compared by a key (the line's text;
the image *file* of the id, or the feature row when there are no ids) and :func:`derangement`
avoids equal keys: it first draws uniform random permutations (``TRIES`` draws from the seeded
generator) and keeps the first with no fixed point and no equal key; when duplicates make that
unlikely it builds one: items grouped by key (largest group first, groups and members in random
order), each mapped to the item ``m`` places further round the cycle, ``m`` being the largest group's
size. That never maps an item into its own group when ``m <= n/2``; when one key holds more than
half of the set, equal-key pairs cannot all be avoided and the construction leaves the minimum,
``2m - n``; the count is returned and recorded. Only a set of a single item cannot be deranged.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nmtvariants.errors import ConfigError, InputError
from nmtvariants.fileio import PathLike, atomic_write, read_lines, write_lines

TRIES = 100
STD_DDOF = 1
DEFAULT_METRICS: tuple[str, ...] = ("bleu", "meteor")


def check_seed(seed: int) -> int:
    """Seeds are explicit non-negative integers (numpy's ``default_rng`` rejects negative ones)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"derangement seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _constructed(rng: np.random.Generator, groups: np.ndarray, n: int) -> np.ndarray:
    """Group-shift derangement (module docstring): fewest equal-key pairs, no fixed point."""
    sizes = np.bincount(groups)
    order_of_groups = rng.permutation(len(sizes))
    largest = int(np.argmax(sizes))
    order_of_groups = np.concatenate([[largest], order_of_groups[order_of_groups != largest]])
    order = np.concatenate([rng.permutation(np.flatnonzero(groups == g)) for g in order_of_groups])
    shift = int(sizes.max())
    perm = np.empty(n, dtype=np.int64)
    perm[order] = order[(np.arange(n) + shift) % n]
    return perm


def derangement(
    n: int, seed: int, keys: Sequence[Hashable] | None = None, where: str = "input"
) -> np.ndarray:
    """A permutation ``perm`` of ``range(n)`` with ``perm[i] != i``, avoiding ``keys[perm[i]] == keys[i]``.

    Deterministic for a seed; different seeds give (for ``n > 3``) different derangements. ``where``
    names the input in the error for ``n < 2``.
    """
    seed = check_seed(seed)
    if n < 2:
        raise InputError(
            f"{where}: {n} item(s); a derangement needs at least 2 (no other item can replace a single one)"
        )
    if keys is not None and len(keys) != n:
        raise ValueError(f"{len(keys)} keys for {n} items")
    rng = np.random.default_rng(seed)
    positions = np.arange(n)
    groups = (
        positions if keys is None else np.unique(np.asarray(list(keys), dtype=object), return_inverse=True)[1]
    )
    groups = np.asarray(groups, dtype=np.int64).reshape(-1)
    for _ in range(TRIES):
        perm = rng.permutation(n)
        if np.all(perm != positions) and np.all(groups[perm] != groups):
            return perm
    if int(np.bincount(groups).max()) == n:  # one key only: avoid fixed points, nothing else is possible
        return _constructed(rng, positions, n)
    return _constructed(rng, groups, n)


def identical_copies(perm: np.ndarray, keys: Sequence[Hashable]) -> int:
    """How many items the derangement replaced by an item with the same key."""
    return sum(keys[int(j)] == keys[i] for i, j in enumerate(perm))


def derange_text_file(input_path: PathLike, output_path: PathLike, seed: int) -> dict[str, Any]:
    """Write the lines of ``input_path`` in deranged order (line ``i`` = input line ``perm[i] + 1``)."""
    lines = list(read_lines(input_path))
    perm = derangement(len(lines), seed, lines, where=str(input_path))
    write_lines(output_path, (lines[int(j)] for j in perm))
    return {
        "kind": "text",
        "input": str(input_path),
        "output": str(output_path),
        "seed": int(seed),
        "items": len(lines),
        "identical_copies": identical_copies(perm, lines),
    }


def _read_index(path: PathLike, rows: int, features: PathLike) -> list[int]:
    """A feature index file: 1-based row numbers of ``features`` (the rules of data/extra_inputs.py)."""
    numbers = []
    for number, line in enumerate(read_lines(path), start=1):
        try:
            value = int(line)
        except ValueError:
            raise InputError(
                f"{path}:{number}: expected a 1-based feature row number, got {line!r}"
            ) from None
        if not 1 <= value <= rows:
            raise InputError(
                f"{path}:{number}: feature row {value} is outside {features}, which has {rows} rows"
            )
        numbers.append(value)
    return numbers


def derange_features(
    features: PathLike,
    output_index: PathLike,
    seed: int,
    feature_index: PathLike | None = None,
    ids_output: PathLike | None = None,
) -> dict[str, Any]:
    """Write a deranged feature index for ``translate --features FEATURES --feature-index OUTPUT``.

    The sentences are the feature rows in order, or the lines of ``feature_index`` when the clean run
    uses one. Keys for "identical" are the image files of ``F.ids.txt`` beside ``features`` when it
    exists, else the row numbers. ``ids_output`` (needs the ids file): the image id of each line.
    """
    from nmtvariants.data.extra_inputs import open_features
    from nmtvariants.vision.features import image_file, sidecars

    features = Path(features)
    rows = int(open_features(features).shape[0])
    numbers = (
        list(range(1, rows + 1)) if feature_index is None else _read_index(feature_index, rows, features)
    )
    ids_path = sidecars(features)[0]
    ids = list(read_lines(ids_path)) if ids_path.is_file() else None
    if ids is not None and len(ids) != rows:
        raise InputError(
            f"{ids_path}: {len(ids)} image ids but {features} has {rows} rows; re-extract the features"
        )
    if ids_output is not None and ids is None:
        raise InputError(f"{features}: no ids file {ids_path}; an ids output needs the features' image ids")
    keys = [number if ids is None else image_file(ids[number - 1]) for number in numbers]
    perm = derangement(len(numbers), seed, keys, where=str(feature_index or features))
    deranged = [numbers[int(j)] for j in perm]
    write_lines(output_index, (str(number) for number in deranged))
    if ids_output is not None and ids is not None:
        write_lines(ids_output, (ids[number - 1] for number in deranged))
    return {
        "kind": "features",
        "input": str(features),
        "feature_index": None if feature_index is None else str(feature_index),
        "output": str(output_index),
        "seed": int(seed),
        "items": len(numbers),
        "identical_copies": identical_copies(perm, keys),
    }


# --- summary over seeds ---------------------------------------------------------------------------


def _metric_score(record: Mapping[str, Any], metric: str, path: PathLike) -> tuple[float, str]:
    entry = record.get("scores", {}).get(metric)
    if not isinstance(entry, Mapping) or "score" not in entry:
        raise InputError(f"{path}: no {metric!r} score; evaluate with --metrics including {metric}")
    return float(entry["score"]), str(entry.get("signature", ""))


def _test_set(record: Mapping[str, Any]) -> tuple[Any, list[Any]]:
    """What makes two score files comparable: line count and reference contents (paths may differ)."""
    return record.get("n_lines"), [ref.get("sha256") for ref in record.get("references", [])]


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (``ddof=1``: the spread between seeds); None for one value."""
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), (float(array.std(ddof=STD_DDOF)) if len(array) > 1 else None)


def summarize_adversarial(
    clean: PathLike, runs: Mapping[str, Sequence[PathLike]], metrics: Sequence[str] = DEFAULT_METRICS
) -> dict[str, Any]:
    """Clean scores and mean/std of the adversarial scores per randomised input (Tables 1 and 2).

    ``clean`` and every file of ``runs`` (randomised input name -> score JSONs, one per seed) are
    ``evaluate`` outputs. They must agree on each metric's signature, the references and the line
    count; otherwise the numbers would not be comparable and the file is named.
    """
    from nmtvariants.evaluation.results import read_scores_json

    if not runs:
        raise ConfigError("adversarial summary: no adversarial runs given (--run NAME=SCORES.json)")
    if not metrics:
        raise ConfigError("adversarial summary: no metrics given")
    clean_record = read_scores_json(clean)
    clean_scores = {m: _metric_score(clean_record, m, clean) for m in metrics}
    rows = []
    for name, paths in runs.items():
        row: dict[str, Any] = {"randomised": name, "runs": len(paths), "files": [str(p) for p in paths]}
        for metric in metrics:
            values = []
            for path in paths:
                record = read_scores_json(path)
                if _test_set(record) != _test_set(clean_record):
                    raise InputError(
                        f"{path}: line count or reference files (sha256) differ from the clean run {clean}; "
                        "score both against the same references"
                    )
                score, signature = _metric_score(record, metric, path)
                if signature != clean_scores[metric][1]:
                    raise InputError(
                        f"{path}: {metric} signature {signature!r} differs from the clean run's "
                        f"{clean_scores[metric][1]!r} ({clean}); evaluate both the same way"
                    )
                values.append(score)
            mean, std = mean_std(values)
            row.update({f"{metric}_clean": clean_scores[metric][0], f"{metric}_adv_mean": mean})
            row.update({f"{metric}_adv_std": std, f"{metric}_adv_scores": values})
        rows.append(row)
    return {
        "system": clean_record.get("system"),
        "testset": clean_record.get("testset"),
        "clean": str(clean),
        "metrics": list(metrics),
        "std_ddof": STD_DDOF,
        "signatures": {m: clean_scores[m][1] for m in metrics},
        "rows": rows,
    }


def summary_csv(summary: Mapping[str, Any]) -> str:
    """One CSV row per randomised input: clean score, adversarial mean and std per metric."""
    columns = ["randomised", "runs"]
    for metric in summary["metrics"]:
        columns += [f"{metric}_clean", f"{metric}_adv_mean", f"{metric}_adv_std"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in summary["rows"]:
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    return buffer.getvalue()


def write_summary(summary: Mapping[str, Any], json_path: PathLike | None, csv_path: PathLike | None) -> None:
    """Write the summary as JSON (with provenance) and/or CSV, each atomically."""
    from nmtvariants.evaluation.results import write_json

    if json_path is not None:
        write_json(json_path, dict(summary))
    if csv_path is not None:
        with atomic_write(csv_path) as out:
            out.write(summary_csv(summary))


def parse_runs(items: Sequence[str]) -> dict[str, list[Path]]:
    """``NAME=FILE`` items (repeatable per name, one per seed) -> ordered name -> files."""
    runs: dict[str, list[Path]] = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--run {item!r}: expected NAME=SCORES.json (e.g. image=adv.seed1.json)")
        runs.setdefault(name, []).append(Path(path))
    return runs
