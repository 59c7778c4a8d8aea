"""File helpers shared by every stage: atomic writes and strict, well-reported text reading.

Every stage writes to a temporary name beside its target and renames at the end, so an interrupted
job never leaves a file that looks complete. Every text reader goes through :func:`decode_lines`,
which decodes UTF-8 strictly and reports the file, line and byte offset of the first bad byte
instead of a bare ``UnicodeDecodeError``; normalises what editors add without meaning it (CRLF line
ends, a UTF-8 byte-order mark) with one warning; rejects NUL bytes; and turns a truncated or
corrupt gzip file into one line that names it, instead of a traceback from the decompressor.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import os
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from nmtvariants.errors import InputError

log = logging.getLogger(__name__)

BOM = b"\xef\xbb\xbf"
# What gzip raises on a damaged stream: EOFError when truncated, BadGzipFile (an OSError) for a bad
# header or CRC, zlib.error for corrupt deflate data.
DECOMPRESSION_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)

PathLike = str | os.PathLike[str]

_UMASK = os.umask(0)
os.umask(_UMASK)


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
        os.chmod(tmp_name, 0o666 & ~_UMASK)  # mkstemp creates 0600; give the usual permissions
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
    """Decode one line as strict UTF-8; on failure name the file, line and byte offset.

    A NUL byte is rejected too: it is valid UTF-8 but never text, and it usually means a UTF-16
    file or binary data, which would otherwise flow silently into the tokenised corpus. Rejecting
    (rather than dropping the line in ``clean``) catches it at the first reader, whatever the stage,
    and keeps parallel files aligned.
    """
    nul = raw.find(b"\0")
    if nul >= 0:
        raise InputError(
            f"{path}:{line_number}: NUL byte at byte offset {nul} of the line; text must not contain NUL "
            f"(a UTF-16 file? convert it with `iconv -f utf-16 -t utf-8`; otherwise remove the byte, "
            f"e.g. `tr -d '\\000'`)"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(
            f"{path}:{line_number}: invalid UTF-8 at byte offset {error.start} of the line "
            f"({raw[error.start : error.start + 4]!r}); re-encode the file as UTF-8 "
            f"(e.g. `iconv -f latin1 -t utf-8`)"
        ) from None


@contextlib.contextmanager
def damaged_compression_is_input_error(path: PathLike) -> Iterator[None]:
    """Report a truncated or corrupt gzip stream read inside the block as one :class:`InputError`."""
    try:
        yield
    except DECOMPRESSION_ERRORS as error:
        raise InputError(
            f"{path}: truncated or corrupt gzip data ({type(error).__name__}: {error}); "
            f"the file is damaged - re-create it or download it again (`gzip -t` checks a copy)"
        ) from None


def decode_lines(raw_lines: Iterable[bytes], path: PathLike) -> Iterator[str]:
    """Decode the raw lines of one file (or stream) named ``path``, without their line ends.

    CRLF line ends become LF and a UTF-8 byte-order mark at the start is dropped, each with one
    warning per file, so that neither becomes part of a token. Empty lines keep their place.
    """
    crlf_warned = False
    with damaged_compression_is_input_error(path):
        for number, raw in enumerate(raw_lines, start=1):
            if number == 1 and raw.startswith(BOM):
                raw = raw[len(BOM) :]
                log.warning("%s: UTF-8 byte-order mark at the start removed", path)
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
                if not crlf_warned:
                    log.warning("%s: CRLF line ends normalised to LF", path)
                    crlf_warned = True
            yield decode_line(raw, path, number)


def read_lines(path: PathLike) -> Iterator[str]:
    """Yield the lines of a text file (plain or .gz) without their line ends (see :func:`decode_lines`)."""
    with open_bytes(path) as handle:
        yield from decode_lines(handle, path)


def count_lines(path: PathLike) -> int:
    with open_bytes(path) as handle, damaged_compression_is_input_error(path):
        return sum(1 for _ in handle)
