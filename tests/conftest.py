"""Shared fixtures: the repository's path, and real data fetched as users fetch it (tests/data_sources.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_sources import RealData

from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

# As every `nmtvariants` command does, before torch is imported: the tests' own products then run
# the kernels of the commands they start (src/nmtvariants/mkl_dispatch.py).
use_fast_mkl_kernels()

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def real_data() -> RealData:
    """``real_data("wmt/en-de/newstest2014.de.gz", ...)`` -> a folder laid out like shared/data.

    Each file comes through the download catalogue into a sha256-checked cache (``$NMTV_TEST_DATA``,
    default ~/.cache/nmtvariants/test-data) from ``$NMTV_MIRROR``, ``../shared/data`` or upstream;
    a file no source has fails the test with a message saying where it comes from.
    """
    return RealData.from_environment(REPO)
