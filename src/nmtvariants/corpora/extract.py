"""Archive checks and extraction of a corpus into ``{split}.{lang}`` files, all or nothing.

A download is only accepted after its archive has been read to the end (gzip CRC and length, every
tar member, zip CRCs), so a truncated file is caught before anything is extracted; an archive that
is damaged anyway (no pin, replaced after the check) is reported in one line naming it by every
reader here, never as a traceback from ``tarfile``, ``zipfile`` or ``gzip``. Outputs are
written into a temporary folder inside the destination and moved into place only when every output
exists and its line count matches the published one, so an interrupted or failed extraction never
leaves a half corpus that looks complete.
"""

from __future__ import annotations

import contextlib
import fnmatch
import gzip
import logging
import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from nmtvariants.corpora.catalogue import Extract, Recipe
from nmtvariants.corpora.formats import read_stream
from nmtvariants.errors import InputError
from nmtvariants.fileio import atomic_write

log = logging.getLogger(__name__)

_CHUNK = 1 << 20
# What the standard library raises on a truncated or corrupt archive (BadGzipFile is an OSError).
_DAMAGED = (EOFError, OSError, tarfile.TarError, zipfile.BadZipFile, zlib.error)


def archive_kind(name: str) -> str:
    """``tar``, ``zip``, ``gz`` or ``plain``, from the file name."""
    lower = name.lower()
    if lower.endswith((".tgz", ".tar.gz", ".tar", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")):
        return "tar"
    if lower.endswith(".zip"):
        return "zip"
    if lower.endswith(".gz"):
        return "gz"
    return "plain"


def verify_integrity(path: str | Path, name: str | None = None) -> None:
    """Read the whole archive so that truncation or corruption surfaces now, not mid-extraction.

    Raises :class:`InputError` naming the file and what is wrong with it.
    """
    path = Path(path)
    label = name or path.name
    kind = archive_kind(label)
    with damaged_archive_is_input_error(label):
        if kind == "gz":
            with gzip.open(path, "rb") as handle:
                while handle.read(_CHUNK):
                    pass
        elif kind == "tar":
            with tarfile.open(path, "r:*") as archive:
                for member in archive:
                    if member.isfile():
                        stream = archive.extractfile(member)
                        assert stream is not None
                        while stream.read(_CHUNK):
                            pass
        elif kind == "zip":
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
                if bad is not None:
                    raise InputError(f"{label}: member {bad!r} fails its CRC check (corrupt archive)")


@contextlib.contextmanager
def damaged_archive_is_input_error(label: str | Path) -> Iterator[None]:
    """Turn what a truncated or corrupt archive raises inside the block into one :class:`InputError`.

    ``label`` names the file in the message; its suffix gives the kind of archive.
    """
    try:
        yield
    except FileNotFoundError:
        raise InputError(f"{label}: file not found; run the download again") from None
    except _DAMAGED as error:
        raise InputError(
            f"{label}: truncated or corrupt {archive_kind(str(label))} archive "
            f"({type(error).__name__}: {error}); delete it and download again"
        ) from None


def _member_matches(name: str, pattern: str) -> bool:
    """A pattern with a ``/`` matches the full member path; one without matches the base name."""
    if "/" in pattern:
        return fnmatch.fnmatchcase(name, pattern)
    return fnmatch.fnmatchcase(name.rsplit("/", 1)[-1], pattern)


@contextlib.contextmanager
def _opened(path: Path) -> Iterator[IO[bytes]]:
    with open(path, "rb") as handle:
        yield handle


def open_members(path: str | Path, pattern: str | None) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield ``(label, stream)`` for the members of ``path`` that match ``pattern``, sorted by name.

    ``pattern=None`` means the file itself. A pattern that matches nothing is an error naming the
    archive and a few of its members, since it almost always means a wrong catalogue entry.
    """
    path = Path(path)
    kind = archive_kind(path.name)
    if pattern is None:
        with _opened(path) as handle:
            yield str(path), handle
        return
    if kind == "tar":
        with tarfile.open(path, "r:*") as archive:
            members = sorted((m for m in archive.getmembers() if m.isfile()), key=lambda m: m.name)
            chosen = [m for m in members if _member_matches(m.name, pattern)]
            _check_found(path, pattern, chosen, [m.name for m in members])
            for member in chosen:
                stream = archive.extractfile(member)
                assert stream is not None
                yield f"{path}:{member.name}", stream
    elif kind == "zip":
        with zipfile.ZipFile(path) as archive:
            names = sorted(n for n in archive.namelist() if not n.endswith("/"))
            chosen_names = [n for n in names if _member_matches(n, pattern)]
            _check_found(path, pattern, chosen_names, names)
            for name in chosen_names:
                with archive.open(name) as stream:
                    yield f"{path}:{name}", stream
    else:
        raise InputError(f"{path}: not an archive, but the catalogue asks for member {pattern!r}")


def _check_found(path: Path, pattern: str, chosen: list, names: list[str]) -> None:
    if not chosen:
        shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
        raise InputError(f"{path}: no member matches {pattern!r} (members: {shown}); fix the catalogue entry")


def extract_lines(path: str | Path, extract: Extract) -> Iterator[str]:
    """The lines one :class:`Extract` contributes, read from the downloaded file at ``path``."""
    with damaged_archive_is_input_error(path):
        for label, stream in open_members(path, extract.member):
            yield from read_stream(
                stream, label, extract.fmt, column=extract.column, field=extract.field, lang=extract.lang
            )


def unpack_archive(path: str | Path, target: str | Path) -> int:
    """Unpack a whole archive (images, features) into ``target`` via a temporary folder; return files.

    Tar members are filtered with the ``data`` policy (no absolute paths, links out or devices).
    """
    path, target = Path(path), Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        if archive_kind(path.name) == "tar":
            with damaged_archive_is_input_error(path), tarfile.open(path, "r:*") as archive:
                archive.extractall(tmp, filter="data")
        elif archive_kind(path.name) == "zip":
            with damaged_archive_is_input_error(path), zipfile.ZipFile(path) as archive:
                archive.extractall(tmp)
        else:
            raise InputError(f"{path}: cannot unpack a {archive_kind(path.name)} file; expected tar or zip")
        count = sum(1 for p in tmp.rglob("*") if p.is_file())
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
        return count
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def extract_recipe(
    recipe: Recipe, downloads: str | Path, dest: str | Path, expected: Mapping[str, int] | None = None
) -> dict[str, int]:
    """Write every output of ``recipe`` into ``dest``; return ``{output: lines}`` (-1 for folders).

    Outputs of the same split (the part before the last dot) must have the same number of lines,
    and every output listed in ``expected`` must have exactly that many; otherwise nothing is moved
    into ``dest`` and :class:`InputError` says which file disagrees.
    """
    downloads, dest = Path(downloads), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    expected = expected or {}
    tmp = Path(tempfile.mkdtemp(prefix=".extract.", dir=dest))
    counts: dict[str, int] = {}
    try:
        by_output: dict[str, list[Extract]] = {}
        for extract in recipe.extracts:
            by_output.setdefault(extract.output, []).append(extract)
        for output, extracts in by_output.items():
            if extracts[0].fmt == "unpack":
                unpack_archive(downloads / extracts[0].file, tmp / output)
                counts[output] = -1
                continue
            with atomic_write(tmp / output) as out:
                count = 0
                for extract in extracts:
                    for line in extract_lines(downloads / extract.file, extract):
                        out.write(line.replace("\n", " "))
                        out.write("\n")
                        count += 1
            counts[output] = count
            log.debug("%s: %d lines", output, count)
        _check_counts(dest, counts, expected)
        for output in counts:
            final = dest / output
            if final.is_dir():
                shutil.rmtree(final)
            os.replace(tmp / output, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return counts


def _check_counts(dest: Path, counts: Mapping[str, int], expected: Mapping[str, int]) -> None:
    for output, lines in expected.items():
        if output in counts and counts[output] != lines:
            raise InputError(
                f"{dest / output}: {counts[output]} lines extracted, but the published size is {lines}; "
                "the download is incomplete or a different version - delete it and download again"
            )
    splits: dict[str, dict[str, int]] = {}
    for output, lines in counts.items():
        if lines >= 0 and "." in output and not output.endswith(".json"):
            splits.setdefault(output.rsplit(".", 1)[0], {})[output] = lines
    for split, found in splits.items():
        if len(set(found.values())) > 1:
            raise InputError(
                f"{dest}: the files of split {split!r} are not parallel ("
                + ", ".join(f"{name}: {n} lines" for name, n in found.items())
                + "); check the catalogue entry's members and formats"
            )
