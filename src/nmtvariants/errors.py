"""Errors that the command line reports as one readable line instead of a traceback."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager


class NMTVariantsError(Exception):
    """A problem with the user's input or setup; the message says what to do about it."""


class InputError(NMTVariantsError):
    """Bad input data: the message names the file, the line and the fix."""


class ConfigError(NMTVariantsError):
    """A bad configuration value: the message names the key's path."""


class MissingResourceError(NMTVariantsError):
    """A model, tool or file that cannot be fetched here: the message says how to get it."""


# The exit status of a refused input or config, from the CLI and from the workflow's start-up checks.
EXIT_STATUS = 2


@contextmanager
def exit_on_error() -> Iterator[None]:
    """For the workflow's start-up checks: report an :class:`NMTVariantsError` as the CLI does, one line
    on stderr and exit status 2, where Snakemake would add the Snakefile's frames and exit with 1."""
    try:
        yield
    except NMTVariantsError as error:
        print(f"nmtvariants: error: {error}", file=sys.stderr)
        raise SystemExit(EXIT_STATUS) from None
