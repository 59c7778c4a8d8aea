"""Shared fixtures: paths to the repository and to the real offline data in ../shared/data."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data mirror; tests that need it fail loudly (not skip) if it is missing."""
    assert SHARED_DATA.is_dir(), f"real-data mirror not found at {SHARED_DATA}"
    return SHARED_DATA
