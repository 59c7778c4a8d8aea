"""Apply a line-by-line step over N processes with output byte-identical to the single-process run.

A *step* is any picklable callable ``str -> str`` that maps one line to one line (`moses.Tokenizer`,
`truecase.Truecaser`, a BPE applier, ...). The input is cut into contiguous chunks; each worker
process receives the step once (at pool start-up, so each process builds one tokenizer / one model),
then chunks in order. Results are collected strictly in input order, so concatenating them gives the
same bytes as ``map(step, lines)``.

At most ``2 * processes`` chunks are in flight, so a multi-million-line corpus streams through with
bounded memory instead of being read whole (which `multiprocessing.Pool.imap` would do, since its
feeder thread drains the input eagerly).
"""

from __future__ import annotations

import itertools
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator

from nmtvariants.errors import ConfigError
from nmtvariants.fileio import PathLike, read_lines, write_lines

LineStep = Callable[[str], str]

DEFAULT_CHUNK_LINES = 2000

_worker_step: LineStep | None = None


def _init_worker(step: LineStep) -> None:
    global _worker_step
    _worker_step = step


def _run_chunk(chunk: list[str]) -> list[str]:
    assert _worker_step is not None, "worker used before its initializer ran"
    return [_worker_step(line) for line in chunk]


def _chunks(lines: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(lines)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


def map_lines(
    step: LineStep,
    lines: Iterable[str],
    processes: int = 1,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
) -> Iterator[str]:
    """Yield ``step(line)`` for every line, in input order, using ``processes`` worker processes.

    ``processes=1`` runs in this process with no pool at all (the reference behaviour).
    """
    if processes < 1:
        raise ConfigError(f"processes: must be >= 1, got {processes}")
    if chunk_lines < 1:
        raise ConfigError(f"chunk_lines: must be >= 1, got {chunk_lines}")
    if processes == 1:
        yield from map(step, lines)
        return
    # fork shares the already-built step with the workers without pickling it; elsewhere the step is
    # pickled once per worker through initargs.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    with context.Pool(processes, initializer=_init_worker, initargs=(step,)) as pool:
        pending: deque = deque()
        for chunk in _chunks(lines, chunk_lines):
            pending.append(pool.apply_async(_run_chunk, (chunk,)))
            if len(pending) >= 2 * processes:
                yield from pending.popleft().get()
        while pending:
            yield from pending.popleft().get()


def process_file(
    step: LineStep,
    in_path: PathLike,
    out_path: PathLike,
    processes: int = 1,
    chunk_lines: int = DEFAULT_CHUNK_LINES,
) -> int:
    """Read ``in_path`` (strict UTF-8, CRLF normalised), apply ``step``, write ``out_path`` atomically.

    Returns the number of lines written, which always equals the number read: empty lines keep
    their place.
    """
    return write_lines(out_path, map_lines(step, read_lines(in_path), processes, chunk_lines))
