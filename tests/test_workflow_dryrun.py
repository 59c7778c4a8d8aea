"""The whole workflow plans under the SLURM profile, stays lint-clean, and every rule is cluster-ready.

A cluster run fails late and expensively (after queueing) when a rule lacks resources or a config
does not resolve, so these checks run the real planner offline: `snakemake -n --profile
profiles/slurm` on the embedded default and on every full-scale config in experiments/, plus
`snakemake --lint` and a source check that each job rule declares what the profile maps to sbatch.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXPERIMENTS = sorted((REPO / "experiments").glob("*.yaml"))
JOB_DIRECTIVES = ("shell:", "script:", "run:", "wrapper:", "notebook:")


def snakemake(
    *args: str, env_extra: dict[str, str] | None = None, launcher: tuple[str, ...] = ("-m", "snakemake")
) -> subprocess.CompletedProcess:
    """Run the snakemake of this interpreter's venv in the repository, with src/ on the path
    (``launcher``: how this interpreter starts it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    env.pop("NMTV_SLURM_PARTITION", None)
    env.pop("NMTV_SLURM_ACCOUNT", None)
    env.update(env_extra or {})
    return subprocess.run(
        [sys.executable, *launcher, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def job_blocks(text: str) -> list[tuple[str, str]]:
    """(rule name, rule body) for every rule/checkpoint in a Snakefile or .smk text."""
    blocks = []
    for match in re.finditer(r"^(?:rule|checkpoint) (\w+):\n((?:[ \t]+.*\n|\n)*)", text, re.M):
        blocks.append((match.group(1), match.group(2)))
    return blocks


def planned_jobs(stdout: str) -> dict[str, list[str]]:
    """Rule name -> the dry run's `resources:` lines of its jobs."""
    jobs: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        started = re.match(r"^(?:local)?(?:rule|checkpoint) (\w+):", line)
        if started:
            current = started.group(1)
            jobs.setdefault(current, [])
        elif current and line.strip().startswith("resources:"):
            jobs[current].append(line)
    return jobs


def test_default_config_plans_under_the_slurm_profile():
    result = snakemake("-n", "--forceall", "--profile", "profiles/slurm")
    assert result.returncode == 0, result.stdout + result.stderr
    jobs = planned_jobs(result.stdout)
    assert "toyworld" in jobs and "data_statistics" in jobs, result.stdout
    for rule, lines in jobs.items():
        for line in lines:
            assert "runtime=" in line and "mem_mb=" in line, f"{rule}: {line}"
            assert "slurm_partition=," in line or line.rstrip().endswith("slurm_partition="), line


# snakemake's own main, then the modules it imported (stderr): what a `snakemake -n` start loads
LOADED_MODULES = """
import atexit, sys
atexit.register(lambda: print("LOADED", *sorted(sys.modules), file=sys.stderr))
sys.argv = ["snakemake", *sys.argv[1:]]
from snakemake.cli import main
main()
"""


def test_planning_never_imports_torch():
    """Every snakemake start checks the config and plans the DAG; torch (~3 s of CPU to import) is
    for the jobs. Plug-ins declare themselves torch-free (plugins/__init__.py), so the default config,
    whose toy experiments use every plug-in of the package, plans without it."""
    result = snakemake("-n", "--forceall", launcher=("-c", LOADED_MODULES))
    assert result.returncode == 0, result.stdout + result.stderr
    loaded = set(result.stderr.split("LOADED", 1)[1].split())
    plugins = {"pascal", "lisa", "sennrich_haddow", "shortcuts", "multi_source"}
    assert {f"nmtvariants.plugins.{name}" for name in plugins} <= loaded
    assert "torch" not in loaded, "the Snakefile's imports reach torch"


def test_partition_and_account_come_from_the_environment():
    result = snakemake(
        "-n",
        "--forceall",
        "--profile",
        "profiles/slurm",
        env_extra={"NMTV_SLURM_PARTITION": "gpu-a100", "NMTV_SLURM_ACCOUNT": "nmt-lab"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [line for lines in planned_jobs(result.stdout).values() for line in lines]
    assert lines and all(
        "slurm_partition=gpu-a100" in line and "slurm_account=nmt-lab" in line for line in lines
    )


@pytest.mark.parametrize("configfile", EXPERIMENTS, ids=lambda path: path.stem)
def test_every_experiment_config_plans_under_the_slurm_profile(configfile):
    result = snakemake(
        "-n", "--forceall", "--profile", "profiles/slurm", "--configfile", str(configfile.relative_to(REPO))
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert planned_jobs(result.stdout), f"{configfile.name}: the dry run planned no jobs"


def test_lint_is_clean():
    result = snakemake("--lint")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Congratulations" in result.stdout + result.stderr


def test_every_job_rule_declares_what_the_cluster_needs():
    """threads, mem_mb, runtime, log and conda on every rule that runs something; GPU rules launch
    through launch() so that more than one GPU means torchrun."""
    sources = [REPO / "Snakefile", *sorted((REPO / "rules").rglob("*.smk"))]  # studies/ too
    checked = 0
    for path in sources:
        for name, body in job_blocks(path.read_text(encoding="utf-8")):
            if not any(directive in body for directive in JOB_DIRECTIVES):
                continue
            checked += 1
            for needed in ("threads:", "mem_mb=", "runtime=", "log:", "conda:"):
                assert needed in body, f"{path.name}: rule {name} lacks `{needed}`"
            if re.search(r"\bgpu\s*=", body):
                assert "launch(" in body, f"{path.name}: GPU rule {name} must start via launch(...)"
    assert checked >= 2


def test_launcher_uses_torchrun_only_for_more_than_one_gpu(tmp_path):
    """launch() from rules/common.smk, run for real: gpu=2 starts two processes via torchrun
    (on CPU here; under SLURM the same command gets the allocation's GPUs)."""
    (tmp_path / "Snakefile").write_text(
        f'include: "{REPO / "rules" / "common.smk"}"\n\n'
        "rule all:\n"
        "    input: 'gpu1.txt', 'gpu2.txt'\n\n"
        "rule probe:\n"
        "    output: 'gpu{n}.txt'\n"
        "    resources: gpu=lambda wildcards: int(wildcards.n)\n"
        "    shell: launch('--version > {output}')\n",
        encoding="utf-8",
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "-p"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "torchrun --standalone --nproc_per_node=2 -m) nmtvariants --version" in result.stderr
    assert (tmp_path / "gpu1.txt").read_text().splitlines() == ["nmtvariants 0.1.0"]
    assert (tmp_path / "gpu2.txt").read_text().splitlines() == ["nmtvariants 0.1.0"] * 2
