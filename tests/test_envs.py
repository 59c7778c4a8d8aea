"""The lock, the per-family conda environments and the venv the tests run in agree.

Four sources name versions: pyproject.toml (ranges), requirements.lock (what `make demo`, `make test`
and CI install, written by `make lock`), the tested venv, and envs/*.yaml (what `--use-conda` builds on
a cluster). A cluster run is only a reproduction if they agree, so every pin in an env file must
(1) name a package that pyproject.toml depends on, (2) lie inside pyproject's range and (3) equal the
lock's version; the lock must cover every dependency inside its range; and the venv must be the lock
(else one line says how to return to it, or how to re-lock). Rules may only point at env files
that exist.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements.lock"
ENV_FILES = sorted((REPO / "envs").glob("*.yaml"))
FAMILIES = {"nmtvariants", "text", "train", "vision", "syntax", "evaluate"}
CORE = {
    "pyyaml", "jsonschema", "pandas", "tabulate", "tqdm", "matplotlib", "pillow", "sacremoses", "subword-nmt"
}  # fmt: skip


def pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)


def project_requirements() -> dict[str, Requirement]:
    requirements = [Requirement(text) for text in pyproject()["project"]["dependencies"]]
    return {canonicalize_name(req.name): req for req in requirements}


def locked() -> dict[str, str]:
    """Package (canonical name) -> version, from requirements.lock."""
    versions = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            requirement = Requirement(line)
            (pin,) = requirement.specifier
            assert pin.operator == "==", f"requirements.lock: {line!r} is not an exact pin"
            versions[canonicalize_name(requirement.name)] = pin.version
    return versions


def env_spec(path: Path) -> tuple[list[str], list[Requirement]]:
    """(conda dependencies, pip requirements) of one environment file."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    conda, pip = [], []
    for item in document["dependencies"]:
        if isinstance(item, dict):
            pip.extend(Requirement(text) for text in item["pip"])
        else:
            conda.append(item)
    return conda, pip


def test_every_family_has_an_env_file_and_a_post_deploy_script():
    assert {path.stem for path in ENV_FILES} == FAMILIES
    for path in ENV_FILES:
        script = path.with_name(f"{path.stem}.post-deploy.sh")
        text = script.read_text(encoding="utf-8")
        assert "pip install" in text and "--no-deps" in text and "-e" in text, script


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_python_version_matches_requires_python(path):
    conda, _ = env_spec(path)
    pythons = [dep for dep in conda if re.match(r"python[=<>]", dep)]
    assert len(pythons) == 1, f"{path.name}: pin python exactly once"
    version = pythons[0].split("=", 1)[1]
    requires = SpecifierSet(pyproject()["project"]["requires-python"])
    assert requires.contains(f"{version}.0"), f"{path.name}: python {version} outside {requires}"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_pins_agree_with_pyproject_and_the_lock(path):
    _, pip = env_spec(path)
    declared = project_requirements()
    lock = locked()
    names = [canonicalize_name(req.name) for req in pip]
    assert len(names) == len(set(names)), f"{path.name}: a package is listed twice"
    assert set(names) >= CORE, f"{path.name}: missing core packages {CORE - set(names)}"
    for req in pip:
        name = canonicalize_name(req.name)
        assert name in declared, f"{path.name}: {req.name} is not a dependency in pyproject.toml"
        pins = [spec for spec in req.specifier if spec.operator == "=="]
        assert len(pins) == 1, f"{path.name}: pin {req.name} with == (got '{req.specifier}')"
        version = pins[0].version
        assert declared[name].specifier.contains(version, prereleases=True), (
            f"{path.name}: {req.name}=={version} is outside pyproject's '{declared[name].specifier}'"
        )
        assert lock.get(name) == version, (
            f"{path.name}: {req.name}=={version} but requirements.lock has {lock.get(name)}; "
            "run `make lock` (it writes the env files' pins from the lock)"
        )


def test_the_lock_covers_every_dependency_inside_its_range():
    lock = locked()
    extras = [Requirement(text) for text in pyproject()["project"]["optional-dependencies"]["dev"]]
    for req in [*project_requirements().values(), *extras]:
        name = canonicalize_name(req.name)
        assert name in lock, f"requirements.lock lacks {req.name}: run `make lock`"
        assert req.specifier.contains(lock[name], prereleases=True), (
            f"requirements.lock: {req.name}=={lock[name]} is outside '{req.specifier}': run `make lock`"
        )


def test_the_tested_venv_is_the_lock():
    """What the tests run with is what the lock says, whatever PyPI has released since."""
    drifted = []
    for name, version in locked().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = "not installed"
        if installed.split("+")[0] != version.split("+")[0]:
            drifted.append(f"{name} {installed} (locked {version})")
    assert not drifted, (
        f"the venv differs from requirements.lock: {', '.join(drifted)}; `make install` returns to the "
        "lock, `make lock` re-locks (then commit requirements.lock and envs/)"
    )


def test_torch_stacks_pin_the_same_torch():
    torches = {}
    for path in ENV_FILES:
        for req in env_spec(path)[1]:
            if canonicalize_name(req.name) in {"torch", "torchvision"}:
                torches.setdefault(req.name, set()).add(str(req.specifier))
    assert torches and all(len(specs) == 1 for specs in torches.values()), torches


def test_every_rule_env_exists():
    """`conda:` paths in rules/*.smk are relative to the rule file; each must name a family."""
    referenced = []
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for match in re.finditer(r"conda:\s*\n\s*\"([^\"]+)\"", smk.read_text(encoding="utf-8")):
            target = (smk.parent / match.group(1)).resolve()
            referenced.append(target)
            assert target.is_file(), f"{smk.name}: conda env {match.group(1)} does not exist"
            assert target.parent == REPO / "envs" and target.stem in FAMILIES, target
    assert referenced, "no rule declares a conda env"
