"""File helpers shared by every stage: atomic writes and strict, well-reported text reading.

Every stage writes to a temporary name beside its target and renames at the end, so an interrupted
job never leaves a file that looks complete. Reading decodes UTF-8 strictly and reports the file,
line and byte offset of the first bad byte instead of a bare ``UnicodeDecodeError``.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from nmtvariants.errors import InputError

log = logging.getLogger(__name__)

PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def atomic_write(path: PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file beside ``path``; rename it onto ``path`` only if the block succeeds.

    ``.gz`` targets are gzip-compressed (with a fixed mtime so that equal content gives equal bytes).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    binary = "b" in mode
    try:
        with os.fdopen(fd, "wb") as raw:
            if target.suffix == ".gz":
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
                    handle = gz if binary else io.TextIOWrapper(gz, encoding=encoding, newline="")
                    yield handle
                    if not binary:
                        handle.flush()
                        handle.detach()
            elif binary:
                yield raw
            else:
                text = io.TextIOWrapper(raw, encoding=encoding, newline="")
                yield text
                text.flush()
                text.detach()
        os.replace(tmp_name, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp_name)
        raise


def write_lines(path: PathLike, lines: Iterable[str]) -> int:
    """Write one line per item (newline added) atomically; return the number of lines."""
    count = 0
    with atomic_write(path) as out:
        for line in lines:
            out.write(line)
            out.write("\n")
            count += 1
    return count


def open_bytes(path: PathLike) -> IO[bytes]:
    """Open a plain or gzip-compressed file for binary reading."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def decode_line(raw: bytes, path: PathLike, line_number: int) -> str:
    """Decode one line as strict UTF-8; on failure name the file, line and byte offset."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}:{line_number}: invalid UTF-8 at byte offset {error.start} of the line "
            f"({raw[error.start : error.start + 4]!r}); re-encode the file as UTF-8 "
            f"(e.g. `iconv -f latin1 -t utf-8`)"
        ) from None


def read_lines(path: PathLike) -> Iterator[str]:
    """Yield the lines of a text file (plain or .gz) without their line ends.

    CRLF line ends are normalised to LF with one warning per file; empty lines keep their place.
    """
    warned = False
    with open_bytes(path) as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
                if not warned:
                    log.warning("%s: CRLF line ends normalised to LF", path)
                    warned = True
            yield decode_line(raw, path, number)


def count_lines(path: PathLike) -> int:
    with open_bytes(path) as handle:
        return sum(1 for _ in handle)
