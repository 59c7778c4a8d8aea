"""Manifests for the table commands' tests (nmtvariants.reporting.manifest): what a study's rule would
write, made from the test's own small files."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nmtvariants.reporting.manifest import Entry, write_manifest
from nmtvariants.reporting.results import replica_seed


def files_manifest(path: Path, role: str, files: Sequence[Path | str], **names: Any) -> str:
    """One entry per file, each with the file as ``role`` and the same ``names`` (variant, ...)."""
    return str(write_manifest(path, [Entry({role: str(file)}, **names) for file in files]))


def score_manifest(
    path: Path,
    score_files: Sequence[Path | str],
    seeds: Sequence[int | None] | None = None,
    switches: Mapping[str, Any] | None = None,
) -> str:
    """One entry per score file, its system and test set read from the file as a rule would name them
    (``<experiment>/<pair>/<replica>``, a replica folder ``<variant>-seed<N>`` read back as its variant and
    seed unless ``seeds`` gives them); ``switches``: Table 4's variant switches, by variant."""
    entries = []
    for index, file in enumerate(score_files):
        record = json.loads(Path(file).read_text(encoding="utf-8"))
        experiment, pair, replica = record["system"].split("/")
        variant, seed = replica_seed(replica, None if seeds is None else seeds[index])
        seed = seed if isinstance(seed, int) else None
        info = {"switches": switches.get(variant)} if switches is not None else {}
        testset = record["testset"]
        entries.append(Entry({"scores": str(file)}, experiment, pair, variant, seed, testset, info=info))
    return str(write_manifest(path, entries))


def planned_manifest(shell: str) -> list[dict[str, Any]]:
    """The manifest a planned table job writes (``snakemake -n -p``: the argument of the rule's
    ``printf '%s\\n' MANIFEST > FILE``, rules/common.smk WRITE_MANIFEST)."""
    words = shlex.split(shell)
    return json.loads(words[words.index("printf") + 2])
