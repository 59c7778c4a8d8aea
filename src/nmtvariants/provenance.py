"""Which code computed a result: the git commit of the checkout the package runs from, and whether
tracked files had local edits.

Library edits never re-run a workflow's jobs (by design), so a table can be older than the code
that reports it. Every stage that writes a result (score JSONs, ``run.json``, checkpoints) therefore
stamps the commit of the code that computed it, and the report shows those, never the commit at
report time. The answer is computed once per process (a job runs one commit); without git, or when
the package is not inside its own checkout (an installed wheel), it is ``"unknown"``, never a crash.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any

UNKNOWN = "unknown"
PNG_COMMIT_KEY = "nmtvariants-commit"  # the PNG text chunk where a figure records the commit that drew it
PACKAGE_DIR = Path(__file__).resolve().parent


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, timeout=30
    ).stdout.strip()


def git_state(repo: str | Path) -> dict[str, Any]:
    """``{"commit": <sha or "unknown">, "dirty": <bool or None>}`` of the checkout at ``repo``.

    ``dirty`` means tracked files differ from HEAD (untracked files do not count: outputs and
    caches live in the checkout).
    """
    try:
        head = _git(Path(repo), "rev-parse", "HEAD")
        status = _git(Path(repo), "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {"commit": UNKNOWN, "dirty": None}
    return {"commit": head, "dirty": bool(status)}


@functools.cache
def code_provenance() -> dict[str, Any]:
    """:func:`git_state` of the checkout this package is imported from (cached per process).

    An installed copy that merely sits inside some other git repository is not that repository's
    code, so the checkout's top level must hold this very package under ``src/``.
    """
    try:
        top = Path(_git(PACKAGE_DIR, "rev-parse", "--show-toplevel")).resolve()
    except (OSError, subprocess.SubprocessError):
        return {"commit": UNKNOWN, "dirty": None}
    if top / "src" / PACKAGE_DIR.name != PACKAGE_DIR:
        return {"commit": UNKNOWN, "dirty": None}
    return git_state(top)


def provenance() -> dict[str, Any]:
    """A fresh copy of :func:`code_provenance`, safe for the caller to store and mutate."""
    return dict(code_provenance())


def describe(record: Any) -> str:
    """``<sha>``, ``<sha>+dirty`` or ``unknown`` for a provenance record (or one that is missing)."""
    if not isinstance(record, dict) or not record.get("commit") or record["commit"] == UNKNOWN:
        return UNKNOWN
    return str(record["commit"]) + ("+dirty" if record.get("dirty") else "")
