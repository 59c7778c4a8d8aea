"""Write the lock's versions into the pip pins of every conda env file (envs/*.yaml).

The env files list each rule family's packages (which ones is a choice made by hand); their versions
are not a choice: they are the lock's, so a cluster run with ``--use-conda`` installs what the tests
ran with. ``make lock`` runs this after writing the lock; tests/test_envs.py checks the result.

    python envs/pin_from_lock.py requirements.lock
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ENVS = Path(__file__).resolve().parent
PIN = re.compile(r"^(?P<head>\s+- (?P<name>[A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==)(?P<version>\S+)\s*$")


def canonical(name: str) -> str:
    """PEP 503 normalised name: ``PyYAML`` and ``pyyaml``, ``subword_nmt`` and ``subword-nmt`` agree."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, str]:
    """Package -> version of a ``pip freeze`` file (comments and blank lines skipped)."""
    versions = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            versions[canonical(name.split("[")[0])] = version.strip()
    return versions


def repin(text: str, versions: dict[str, str], where: str) -> str:
    """``text`` with every ``- name==version`` pip line set to the lock's version."""
    lines = []
    for line in text.splitlines(keepends=True):
        match = PIN.match(line.rstrip("\n"))
        if match:
            name = canonical(match["name"])
            if name not in versions:
                raise SystemExit(f"{where}: {match['name']} is not in the lock; add it to pyproject.toml")
            line = f"{match['head']}{versions[name]}\n"
        lines.append(line)
    return "".join(lines)


def main(lock: str) -> None:
    versions = read_lock(Path(lock))
    for path in sorted(ENVS.glob("*.yaml")):
        updated = repin(path.read_text(encoding="utf-8"), versions, path.name)
        if updated != path.read_text(encoding="utf-8"):
            path.write_text(updated, encoding="utf-8")
            print(f"{path.name}: pins follow {lock}")


if __name__ == "__main__":
    main(*sys.argv[1:2] or ["requirements.lock"])
