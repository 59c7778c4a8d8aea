"""The per-family conda environments agree with pyproject.toml and with the venv the tests run in.

Three sources name versions: pyproject.toml (ranges, what `make install` resolves), the tested venv
(what every test and benchmark ran with) and envs/*.yaml (what `--use-conda` builds on a cluster).
A cluster run is only a reproduction if the three agree, so every pin in an env file must (1) name a
package that pyproject.toml depends on, (2) lie inside pyproject's range and (3) equal the version
installed here. Rules may only point at env files that exist.
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
def test_pins_agree_with_pyproject_and_the_tested_venv(path):
    _, pip = env_spec(path)
    declared = project_requirements()
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
        installed = importlib.metadata.version(req.name).split("+")[0]
        assert installed == version, (
            f"{path.name}: {req.name}=={version} but the tested venv has {installed}; "
            "update the env file (or the venv) so they agree"
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
