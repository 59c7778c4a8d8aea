"""The SLURM profile on a real (single-node) SLURM cluster: resources reach sbatch, and the workflow
run through `--profile profiles/slurm` produces byte-identical outputs to a local run.

The cluster is Debian's slurm-wlm + munge started by tests/slurm_cluster.py (installed with apt-get
when missing; root needed). What is real: munged, slurmctld, slurmd, sbatch, srun, squeue, the
executor plugin's submission and polling, the slurm-jobstep executor inside each job. What is not:
slurmdbd/sacct (no accounting database; the plugin polls with squeue, which is its documented
alternative), cgroup enforcement (proctrack/linuxproc, task/none) and GPUs (none on this machine:
GPU requests are checked in the dry-run tests and by the torchrun launcher test instead).
"""

from __future__ import annotations

import filecmp
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from slurm_cluster import SlurmCluster
from workflow_configs import default_config_with

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
# The smallest default config: toyworld at its smallest, the baseline experiment alone.
TINY = {  # merged into config.yaml by workflow_configs.write_config
    "toyworld": {"seed": 7, "sizes": {"train": 300, "valid": 20, "test": 20}, "image_size": 16},
    "corpora": {"toyworld": {"pairs": ["en-de"], "preprocess": {"bpe": {"merges": 200, "threshold": 2}}}},
    "experiments": {
        "baseline": {
            "train": {"max_updates": 20, "batch_tokens": 512, "warmup": 10, "save_every": 10,
                      "keep_last": 2, "valid_every": 10},
            "average_last": 2,
            "evaluate": {"beam": 2},
        }
    },
}  # fmt: skip
# Test-cluster settings on top of profiles/slurm: poll with squeue (no slurmdbd here) and start
# polling after 2 s instead of 40 s, so that short jobs do not wait for minutes.
SLURM_ARGS = [
    "--slurm-status-command", "squeue",
    "--slurm-init-seconds-before-status-checks", "2",
    "--slurm-keep-successful-logs",
]  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    started = time.monotonic()
    slurm = SlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=os.cpu_count())
    try:
        slurm.start()
        print(
            f"\nSLURM cluster up in {time.monotonic() - started:.1f}s (apt-get: {slurm.install_seconds:.1f}s)"
        )
        yield slurm
    finally:
        slurm.stop()
        assert slurm.our_stepds() == [], "job processes of the test cluster outlived it"


def snakemake_env(cluster: SlurmCluster | None, workdir: Path) -> dict[str, str]:
    base = dict(os.environ)
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(workdir / "src"), base.get("PYTHONPATH")]))
    base["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), base["PATH"]])
    for name in ("NMTV_SLURM_PARTITION", "NMTV_SLURM_ACCOUNT", "SLURM_JOB_ID"):
        base.pop(name, None)
    return cluster.env(base) if cluster else base


# A guard against a hung cluster, not a speed check: on a loaded 2-core AMD EPYC (2026-11-25) the 42
# SLURM jobs of the toy run took over 600 s (about 20 s a job for sbatch, squeue polls and start-up).
def run(args: list[str], workdir: Path, env: dict[str, str], timeout: float = 1500) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-5000:]
    return result.stdout + result.stderr


def test_profile_resources_reach_sbatch(cluster, tmp_path):
    """threads -> --cpus-per-task, mem_mb -> --mem, runtime -> --time, env hook -> --partition."""
    workdir = tmp_path / "probe"
    workdir.mkdir()
    (workdir / "Snakefile").write_text(
        "rule all:\n"
        "    input: 'probe.txt'\n\n"
        "rule probe:\n"
        "    output: 'probe.txt'\n"
        "    threads: 2\n"
        "    resources: mem_mb=700, runtime=7\n"
        "    shell: 'scontrol show job --oneliner $SLURM_JOB_ID > {output}'\n",
        encoding="utf-8",
    )
    env = snakemake_env(cluster, workdir)
    env["NMTV_SLURM_PARTITION"] = "debug"
    run(["--profile", str(REPO / "profiles" / "slurm"), *SLURM_ARGS], workdir, env)
    job = dict(field.split("=", 1) for field in (workdir / "probe.txt").read_text().split() if "=" in field)
    assert job["NumCPUs"] == "2" and job["CPUs/Task"] == "2"
    assert job["MinMemoryNode"] == "700M"
    assert job["TimeLimit"] == "00:07:00"
    assert job["Partition"] == "debug"
    assert job["JobName"].count("-") == 4  # the plugin names jobs by the run's UUID
    states = subprocess.run(
        ["squeue", "-h", "--states=all", "-j", job["JobId"], "-o", "%T"],
        env=cluster.env(),
        capture_output=True,
        text=True,
    )
    assert states.stdout.strip() == "COMPLETED"


def copy_workflow(root: Path) -> Path:
    root.mkdir()
    for name in ("Snakefile", "config.yaml"):
        shutil.copy2(REPO / name, root / name)
    for name in ("rules", "schemas", "envs", "workflow", "workflow_scripts", "src", "profiles"):
        if (REPO / name).exists():
            shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    config = default_config_with(TINY)
    # the baseline alone: this test is about execution on SLURM, not the studies' DAG
    config["experiments"] = {"baseline": config["experiments"]["baseline"]}
    (root / "tiny.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return root


# Run records that hold wall-clock times, process ids or host details by design: the training log
# (tokens/s, elapsed), TensorBoard events (named by time and pid), the run summary and checkpoints
# (trainer state with elapsed seconds; their sha256 sidecars) and the report that cites them.
# Models are compared by their parameters instead (`same_parameters`).
TIMED = re.compile(
    r"(^models/.*/(train_log\.csv|run\.json|tensorboard/.*|checkpoints/.*|.*\.pt)$)|(^results/report\.md$)"
)


def output_files(root: Path) -> dict[str, Path]:
    files = {}
    for top in ("data", "results", "models"):
        if (root / top).is_dir():
            for path in (root / top).rglob("*"):
                name = path.relative_to(root).as_posix()
                if path.is_file() and not TIMED.match(name):
                    files[name] = path
    return files


def same_parameters(first: Path, second: Path) -> bool:
    import torch

    a = torch.load(first, map_location="cpu", weights_only=False)["model"]
    b = torch.load(second, map_location="cpu", weights_only=False)["model"]
    return a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)


def test_workflow_on_slurm_equals_local_run(cluster, tmp_path):
    local = copy_workflow(tmp_path / "local")
    slurm = copy_workflow(tmp_path / "slurm")
    started = time.monotonic()
    run(["--cores", "2", "--configfile", "tiny.yaml"], local, snakemake_env(None, local))
    local_seconds = time.monotonic() - started
    started = time.monotonic()
    log = run(
        ["--profile", "profiles/slurm", *SLURM_ARGS, "--configfile", "tiny.yaml"],
        slurm,
        snakemake_env(cluster, slurm),
    )
    print(f"\nlocal run {local_seconds:.1f}s, SLURM run {time.monotonic() - started:.1f}s")
    assert "has been submitted with SLURM jobid" in log  # the non-local rules went through sbatch
    local_files, slurm_files = output_files(local), output_files(slurm)
    assert local_files and set(local_files) == set(slurm_files)
    differing = [
        name
        for name in sorted(local_files)
        if not filecmp.cmp(local_files[name], slurm_files[name], shallow=False)
    ]
    assert differing == []
    models = [path.relative_to(local) for path in (local / "models").rglob("*.pt")]
    models = sorted(name for name in models if name.parent.name != "checkpoints")
    assert models and all(same_parameters(local / name, slurm / name) for name in models)
    assert (slurm / "results" / "report.md").is_file()
    # Nothing left to do for either executor: the SLURM run recorded the same provenance.
    nothing = run(
        ["-n", "--profile", "profiles/slurm", "--configfile", "tiny.yaml"],
        slurm,
        snakemake_env(cluster, slurm),
    )
    assert "Nothing to be done" in nothing
