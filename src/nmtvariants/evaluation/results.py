"""One JSON file per (system, test set): the scores plus what is needed to trust them later.

A score without its sacreBLEU signature and the hash of the files it was computed on cannot be
compared across runs; the reporting stage reads these files and nothing else. Every record written
here also carries ``provenance``: the git commit (and dirty flag) of the code that computed it,
because library edits never re-run jobs and the report must show the commit of each number.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.evaluation.inputs import sha256_file
from nmtvariants.fileio import PathLike, atomic_write
from nmtvariants.provenance import provenance

SCHEMA_VERSION = 1


def file_record(path: PathLike) -> dict[str, str]:
    """Path and sha256 of one scored file."""
    return {"path": str(path), "sha256": sha256_file(path)}


def write_scores_json(
    path: PathLike,
    system: str,
    testset: str,
    scores: Mapping[str, Any],
    hyp_path: PathLike | None = None,
    ref_paths: Sequence[PathLike] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``scores`` (as returned by :func:`evaluate`) for one system and test set; return the record.

    If ``scores`` carries ``hypothesis``/``references`` file records (``evaluate`` adds them) they are
    kept; otherwise they are computed from ``hyp_path``/``ref_paths``.
    """
    record: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "system": system, "testset": testset}
    body = dict(scores)
    if hyp_path is not None:
        body["hypothesis"] = file_record(hyp_path)
    if ref_paths:
        body["references"] = [file_record(ref) for ref in ref_paths]
    record.update(body)
    if extra:
        record.update(extra)
    write_json(path, record)
    return record


def write_json(path: PathLike, data: Any) -> None:
    """Pretty, key-sorted JSON written atomically (stable bytes for equal content).

    A mapping gets a ``provenance`` entry (the commit of this process's code) unless it has one.
    """
    if isinstance(data, Mapping):
        data = {"provenance": provenance(), **data}
    with atomic_write(path) as out:
        json.dump(data, out, indent=2, sort_keys=True, ensure_ascii=False)
        out.write("\n")


def read_scores_json(path: PathLike) -> dict[str, Any]:
    """Read a score JSON written by :func:`write_scores_json`."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: score file not found")
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        raise InputError(
            f"{path}:{error.lineno}: invalid JSON ({error.msg}); re-run the evaluate step"
        ) from None
