"""Fetch a corpus's files (mirror first, then upstream), verify them, extract them, write a manifest.

Why each step:
- the **mirror** (a local folder or a URL prefix laid out like ``shared/data``) is tried first so
  that offline machines and clusters without internet run the same rules as a laptop online;
- **sha256/md5 pins** make "the same data" checkable; a mismatch names the file, the source, and the
  expected and actual digests;
- **retries with bounded exponential back-off** ride out flaky servers without hanging a job;
  missing files (404, absent in the mirror) are not retried but fall through to the next source;
- every file is downloaded to a **temporary name** and renamed only after its checksum and its
  archive integrity (read to the end) are verified, and extraction is all-or-nothing
  (:mod:`nmtvariants.corpora.extract`), so an interrupted job never leaves a file that looks complete.

Only the standard library's ``urllib`` is used for HTTP(S)/FTP.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import logging
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from nmtvariants.corpora.catalogue import Corpus, Recipe, RemoteFile, get_corpus
from nmtvariants.corpora.extract import archive_kind, extract_recipe, verify_integrity
from nmtvariants.errors import InputError, MissingResourceError
from nmtvariants.fileio import atomic_write

log = logging.getLogger(__name__)

DOWNLOADS = "downloads"
MANIFEST = "manifest.json"
_URL_SCHEMES = ("http://", "https://", "ftp://", "file://")
_CHUNK = 1 << 20
_NOT_FOUND = {401, 403, 404, 410}


def is_url(location: str) -> bool:
    return location.startswith(_URL_SCHEMES)


def sha256_of(path: str | Path) -> str:
    return _digest(path, "sha256")


def _digest(path: str | Path, algorithm: str) -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass
class Attempt:
    source: str
    outcome: str


@dataclass
class FetchResult:
    path: Path
    source: str
    sha256: str
    attempts: list[Attempt] = field(default_factory=list)


class _Missing(Exception):
    """The source does not have the file: try the next one without retrying."""


class _Transient(Exception):
    """A failure worth retrying (network error, 5xx, truncated transfer)."""


class _Corrupt(Exception):
    """The bytes arrived but fail a checksum or integrity check."""


def mirror_location(mirror: str, relative: str) -> str:
    """Where ``relative`` lives in ``mirror`` (URL prefix or folder)."""
    if is_url(mirror):
        return mirror.rstrip("/") + "/" + urllib.parse.quote(relative)
    return str(Path(mirror) / relative)


def _copy_local(source: str, tmp: Path) -> None:
    if not Path(source).is_file():
        raise _Missing("not found")
    shutil.copyfile(source, tmp)


def _download_url(url: str, tmp: Path, timeout: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": "nmtvariants-corpora/1"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as out:
            expected = response.headers.get("Content-Length")
            received = 0
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                out.write(chunk)
                received += len(chunk)
            if expected is not None and received != int(expected):
                raise _Transient(f"truncated transfer: {received} of {expected} bytes")
    except urllib.error.HTTPError as error:
        if error.code in _NOT_FOUND:
            raise _Missing(f"HTTP {error.code} {error.reason}") from None
        raise _Transient(f"HTTP {error.code} {error.reason}") from None
    except (
        urllib.error.URLError,
        TimeoutError,
        ConnectionError,
        http.client.HTTPException,
        OSError,
    ) as error:
        reason = getattr(error, "reason", error)
        raise _Transient(f"{type(error).__name__}: {reason}") from None


def _verify(remote: RemoteFile, tmp: Path, source: str) -> str:
    """Check pins and archive integrity of a fetched file; return its sha256."""
    actual = sha256_of(tmp)
    if remote.sha256 and actual != remote.sha256:
        raise _Corrupt(
            f"sha256 mismatch for {remote.name} from {source}: expected {remote.sha256}, got {actual}"
        )
    if remote.md5:
        md5 = _digest(tmp, "md5")
        if md5 != remote.md5:
            raise _Corrupt(f"md5 mismatch for {remote.name} from {source}: expected {remote.md5}, got {md5}")
    if archive_kind(remote.name) != "plain":
        try:
            verify_integrity(tmp, remote.name)
        except InputError as error:
            raise _Corrupt(f"{error} (from {source})") from None
    return actual


def _cached(remote: RemoteFile, target: Path) -> str | None:
    """sha256 of a previously downloaded copy if it is still valid, else None (and remove it)."""
    if not target.is_file():
        return None
    try:
        return _verify(remote, target, str(target))
    except _Corrupt as error:
        log.warning("discarding cached %s: %s", target, error)
        target.unlink()
        return None


def fetch(
    remote: RemoteFile,
    folder: str | Path,
    *,
    mirror: str | None = None,
    retries: int = 3,
    backoff: float = 1.0,
    max_backoff: float = 30.0,
    timeout: float = 60.0,
    mirror_only: bool = False,
) -> FetchResult:
    """Obtain ``remote`` as ``folder/remote.name``: cache, then mirror, then each upstream URL.

    Each source is tried up to ``retries`` times on transient errors, sleeping
    ``min(backoff * 2**k, max_backoff)`` seconds before retry k+1. Raises
    :class:`MissingResourceError` when no source had the file (the message lists every source tried
    and what happened), :class:`InputError` when a file arrived but failed its checksum or
    integrity check everywhere.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / remote.name
    cached = _cached(remote, target)
    if cached:
        return FetchResult(target, f"cache:{target}", cached)

    sources: list[str] = []
    if mirror and remote.mirror:
        sources.append(mirror_location(mirror, remote.mirror))
    if not mirror_only and not remote.gate:
        sources.extend(remote.urls)
    attempts: list[Attempt] = []
    if mirror and not remote.mirror:
        attempts.append(
            Attempt(f"mirror {mirror}", "not in the mirror layout (no mirror path in the catalogue)")
        )

    for source in sources:
        for attempt in range(max(1, retries)):
            fd, tmp_name = tempfile.mkstemp(prefix=f".{remote.name}.", suffix=".part", dir=folder)
            os.close(fd)
            tmp = Path(tmp_name)
            try:
                if is_url(source):
                    _download_url(source, tmp, timeout)
                else:
                    _copy_local(source, tmp)
                digest = _verify(remote, tmp, source)
                os.replace(tmp, target)
                attempts.append(Attempt(source, "ok"))
                log.debug("fetched %s from %s", remote.name, source)
                return FetchResult(target, source, digest, attempts)
            except _Missing as error:
                attempts.append(Attempt(source, str(error)))
                break
            except _Corrupt as error:
                attempts.append(Attempt(source, str(error)))
                if not is_url(source):
                    break
            except _Transient as error:
                attempts.append(Attempt(source, str(error)))
            finally:
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
            if attempt + 1 < max(1, retries):
                delay = min(backoff * 2**attempt, max_backoff)
                log.warning(
                    "%s: %s; retry %d/%d in %.2fs",
                    remote.name,
                    attempts[-1].outcome,
                    attempt + 1,
                    retries - 1,
                    delay,
                )
                time.sleep(delay)

    tried = "; ".join(f"{a.source}: {a.outcome}" for a in attempts) or "no source configured"
    if any("mismatch" in a.outcome or "corrupt" in a.outcome for a in attempts):
        raise InputError(
            f"{remote.name}: no valid copy found ({tried}); the copies are damaged or a different "
            "version - replace the mirror's copy with a good one and run the download again"
        )
    if remote.gate and not mirror_only:
        where = f"{target}" + (
            f" or {mirror_location(mirror, remote.mirror)}" if mirror and remote.mirror else ""
        )
        raise MissingResourceError(
            f"{remote.name} cannot be downloaded automatically: {remote.gate}. Put the file at {where} "
            f"and run the download again" + (f" (tried: {tried})" if attempts else "")
        )
    raise MissingResourceError(f"{remote.name}: could not be fetched from any source (tried: {tried})")


def fetch_recipe(
    recipe: Recipe, folder: Path, *, mirror: str | None, mirror_only: bool = False, **options: float
) -> list[FetchResult]:
    return [
        fetch(remote, folder, mirror=mirror, mirror_only=mirror_only, **options)  # type: ignore[arg-type]
        for remote in recipe.files
    ]


def download_corpus(
    corpus: Corpus | str,
    dest: str | Path,
    *,
    mirror: str | None = None,
    retries: int = 3,
    backoff: float = 1.0,
    max_backoff: float = 30.0,
    timeout: float = 60.0,
    manifest_name: str = MANIFEST,
) -> dict:
    """Download and extract ``corpus`` into ``dest`` as ``{split}.{lang}`` files; return the manifest.

    Several corpora may share one ``dest`` (training data plus its test sets) with one
    ``manifest_name`` each.

    Raw downloads stay in ``dest/downloads`` (re-used when their pins still match). The manifest
    (``dest/manifest.json``) records where each file came from and the sha256 and line count of
    every output; it is written last, so its presence means the folder is complete.
    """
    if isinstance(corpus, str):
        corpus = get_corpus(corpus)
    dest = Path(dest)
    downloads = dest / DOWNLOADS
    options = {"retries": retries, "backoff": backoff, "max_backoff": max_backoff, "timeout": timeout}
    recipe, which, fetched = corpus.recipe, "upstream-layout", None
    if mirror and corpus.mirror_recipe is not None:
        try:
            fetched = fetch_recipe(
                corpus.mirror_recipe, downloads, mirror=mirror, mirror_only=True, **options
            )
            recipe, which = corpus.mirror_recipe, "mirror-layout"
        except MissingResourceError as error:
            log.info("%s: mirror form not available (%s); using the upstream files", corpus.name, error)
    if fetched is None:
        fetched = fetch_recipe(recipe, downloads, mirror=mirror, **options)
    counts = extract_recipe(recipe, downloads, dest, corpus.lines)
    manifest = {
        "corpus": corpus.name,
        "description": corpus.description,
        "recipe": which,
        "sources": [
            {"file": result.path.name, "source": result.source, "sha256": result.sha256} for result in fetched
        ],
        "outputs": {
            name: ({"lines": lines, "sha256": sha256_of(dest / name)} if lines >= 0 else {"folder": True})
            for name, lines in counts.items()
        },
    }
    with atomic_write(dest / manifest_name) as out:
        json.dump(manifest, out, indent=2, ensure_ascii=False)
        out.write("\n")
    return manifest
