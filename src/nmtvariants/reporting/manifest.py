"""The one way a table command learns what it is built from: a manifest file.

Every study's table and figure-data command takes ``--manifest FILE`` and nothing else for its inputs
(its title, thresholds and other options stay options). The manifest is a JSON list with one entry per
run (or per system, or per file) that the table reads::

    [{"experiment": "toy", "pair": "en-de", "variant": "lexical", "seed": 1, "testset": "test",
      "label": "lexical", "files": {"scores": "results/toy/en-de/lexical/test.scores.json"},
      "info": {"switches": {"shortcuts": {}}}}, ...]

``files`` (required) maps a role (``scores``, ``significance``, ``train_log``, ``probes``, ...) to a
path relative to the workflow's folder. The other keys name what the files belong to, as far as they
are specific to it: a significance test over every seed has no ``seed``; a similarity CSV of every
analysed variant has no ``variant``. ``label`` is what the table calls the row where that is not the
variant, and ``info`` holds the study's facts about the system that the table shows (its switches,
layout, ...), which this module does not interpret. ``toy`` is true for a run on a generated toy
corpus: the workflow sets it on every entry of such an experiment, and the table then says what a
toy run can show (:func:`nmtvariants.reporting.replicas.seeds_note`).

Why one file rather than options: the study's planner builds the entries once from the config, and
the rule takes both its ``input:`` (:func:`manifest_inputs`, so Snakemake tracks every file) and the
manifest it writes (:func:`manifest_json`) from those entries, so that what Snakemake tracks and what
the table reads cannot drift; the command validates the whole manifest (:func:`read_manifest`) before
it reads a result, and a failed table can be rebuilt by hand from the manifest kept beside its log.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nmtvariants.errors import InputError
from nmtvariants.fileio import PathLike, atomic_write

# Keys an entry may have besides ``files`` and ``info``, and the JSON types each accepts.
NAMES: dict[str, tuple[type, ...]] = {
    "experiment": (str,),
    "pair": (str,),
    "variant": (str,),
    "seed": (int,),
    "testset": (str,),
    "label": (str,),
    "toy": (bool,),
}
# A role whose file no rule declares (training rewrites train_log.csv as it goes, and writes run.json
# with it): Snakemake tracks the file beside it that the same job declares instead (the run's final.pt).
TRACKED_BESIDE = {"train_log": "final.pt", "run": "final.pt"}
MISSING_SHOWN = 5  # missing files named in the error; the rest are counted


@dataclass(frozen=True)
class Entry:
    """One entry of a manifest: the files of one run (or system, or analysis) and what they belong to."""

    files: Mapping[str, str]
    experiment: str | None = None
    pair: str | None = None
    variant: str | None = None
    seed: int | None = None
    testset: str | None = None
    label: str | None = None
    toy: bool | None = None  # trained on a generated toy corpus (the workflow sets it: toy_marked)
    info: Mapping[str, Any] = field(default_factory=dict)
    where: str = field(default="", compare=False)  # "<manifest>, entry N" for messages

    def file(self, role: str) -> str:
        """The path of ``role``; a one-line error naming the manifest and the entry when it is absent."""
        if role not in self.files:
            raise InputError(f"{self.where}: no {role!r} file (it has {', '.join(self.files) or 'none'})")
        return self.files[role]

    @property
    def system(self) -> tuple[str | None, str | None, str | None, str | None]:
        """(experiment, pair, variant, testset): the replicas of one system on one test set share it."""
        return self.experiment, self.pair, self.variant, self.testset

    def to_json(self) -> dict[str, Any]:
        """The entry as the manifest holds it: unset names and an empty ``info`` left out."""
        record: dict[str, Any] = {key: getattr(self, key) for key in NAMES if getattr(self, key) is not None}
        record["files"] = dict(self.files)
        if self.info:
            record["info"] = dict(self.info)
        return record


def toy_runs(entries: Iterable[Entry]) -> bool:
    """Whether the table reads toy-world runs (its note then says so)."""
    return any(entry.toy for entry in entries)


def manifest_json(entries: Iterable[Entry]) -> str:
    """The manifest a rule writes for its command (one line of canonical JSON)."""
    return json.dumps([entry.to_json() for entry in entries], sort_keys=True, ensure_ascii=False)


def write_manifest(path: PathLike, entries: Iterable[Entry]) -> Path:
    """Write a manifest file (the tests' and a user's way to run a table command by hand)."""
    with atomic_write(path) as out:
        out.write(manifest_json(entries) + "\n")
    return Path(path)


def manifest_inputs(entries: Iterable[Entry]) -> list[str]:
    """Every file the manifest names, once, in order: the rule's ``input:``. A role of
    :data:`TRACKED_BESIDE` is tracked through the declared file beside it."""
    paths = []
    for entry in entries:
        for role, path in entry.files.items():
            beside = TRACKED_BESIDE.get(role)
            paths.append(str(Path(path).with_name(beside)) if beside else path)
    return list(dict.fromkeys(paths))


def add_manifest_command(
    subparsers: argparse._SubParsersAction,
    name: str,
    help: str,
    manifest: str,
    func: Callable[[argparse.Namespace], Any],
    out: str | None = "markdown table; its CSV and provenance JSON go beside it",
) -> argparse.ArgumentParser:
    """A table or figure-data command of the manifest convention: ``--manifest FILE`` (``manifest``:
    what its entries hold) and ``--out FILE`` (``out``: what is written there; None: the command names
    its outputs itself). Every study registers its table commands through it, so that they read their
    inputs and name their output alike; the command adds its own options to the parser returned."""
    parser = subparsers.add_parser(name, help=help)
    parser.add_argument(
        "--manifest", required=True, help=f"JSON manifest (nmtvariants.reporting.manifest): {manifest}"
    )
    if out is not None:
        parser.add_argument("--out", required=True, help=out)
    parser.set_defaults(func=func)
    return parser


def read_manifest(path: PathLike, roles: Sequence[str] = (), names: Sequence[str] = ()) -> list[Entry]:
    """The entries of the manifest at ``path``, checked: every entry an object of known keys and types,
    with the ``names`` (e.g. ``variant``) and file ``roles`` the command needs, and every file there.
    Each problem is one :class:`InputError` line naming the manifest, the entry and what is wrong."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such manifest; the table's rule writes it") from None
    except json.JSONDecodeError as error:
        raise InputError(f"{path}:{error.lineno}: manifest is not JSON ({error.msg})") from None
    if not isinstance(document, list) or not document:
        raise InputError(f"{path}: a manifest is a non-empty JSON list of entries")
    entries = [_entry(item, f"{path}, entry {number}") for number, item in enumerate(document, start=1)]
    for entry in entries:
        for name in names:
            if getattr(entry, name) is None:
                raise InputError(f"{entry.where}: no {name!r}; this table needs it for every entry")
        for role in roles:
            entry.file(role)
    _check_files(path, entries)
    return entries


def _entry(item: Any, where: str) -> Entry:
    """One entry, its keys and types checked."""
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(item).__name__}")
    unknown = sorted(set(item) - {*NAMES, "files", "info"})
    if unknown:
        raise InputError(
            f"{where}: unknown key(s) {', '.join(unknown)} (known: {', '.join([*NAMES, 'files', 'info'])})"
        )
    for key, types in NAMES.items():
        value = item.get(key)
        is_bool = isinstance(value, bool)  # a bool is an int to isinstance: only `toy` takes one
        if value is not None and (not isinstance(value, types) or (is_bool and bool not in types)):
            raise InputError(f"{where}: {key!r} must be a {types[0].__name__}, got {value!r}")
    names = {key: item.get(key) for key in NAMES}
    where = _describe(where, names)
    files = item.get("files")
    if not isinstance(files, dict) or not files:
        raise InputError(f"{where}: 'files' must be a non-empty object of role -> path")
    for role, file in files.items():
        if not isinstance(file, str) or not file:
            raise InputError(f"{where}: file {role!r} must be a path, got {file!r}")
    info = item.get("info", {})
    if not isinstance(info, dict):
        raise InputError(f"{where}: 'info' must be an object, got {info!r}")
    return Entry(files=dict(files), info=dict(info), where=where, **names)


def _describe(where: str, names: Mapping[str, Any]) -> str:
    """``<manifest>, entry 3 (toy/en-de/lexical seed 2 on test)``: where an error points."""
    system = "/".join(str(names[key]) for key in ("experiment", "pair", "variant") if names[key] is not None)
    if names["seed"] is not None:
        system += f" seed {names['seed']}"
    if names["testset"] is not None:
        system += f" on {names['testset']}"
    return f"{where} ({system.strip()})" if system else where


def _check_files(path: Path, entries: Sequence[Entry]) -> None:
    """Stop before reading anything when a named file is absent, naming the missing ones."""
    missing = [
        file
        for file in dict.fromkeys(f for e in entries for f in e.files.values())
        if not Path(file).is_file()
    ]
    if missing:
        shown = ", ".join(missing[:MISSING_SHOWN])
        more = f" and {len(missing) - MISSING_SHOWN} more" if len(missing) > MISSING_SHOWN else ""
        raise InputError(
            f"{path}: {len(missing)} file(s) it names are missing: {shown}{more}; run the steps first"
        )


def groups(entries: Iterable[Entry]) -> dict[tuple[str | None, ...], list[Entry]]:
    """The entries of each system on each test set (:attr:`Entry.system`), in first-seen order: the
    replicas a table row averages over."""
    grouped: dict[tuple[str | None, ...], list[Entry]] = {}
    for entry in entries:
        grouped.setdefault(entry.system, []).append(entry)
    return grouped
