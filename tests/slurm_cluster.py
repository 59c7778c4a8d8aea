"""A throw-away single-node SLURM cluster (munge + slurmctld + slurmd on localhost) for tests.

Why: the SLURM profile is only worth something if a real ``sbatch``/``srun``/``squeue`` has run
the workflow through it. Debian's ``slurm-wlm`` and ``munge`` packages give us the real daemons;
this module writes a private configuration into a temporary directory (own munge key and socket,
own ports, own spool and state directories), starts the three daemons in the foreground as child
processes, waits until the node is idle, and on :meth:`SlurmCluster.stop` cancels every job,
kills the job-step daemons it can prove belong to this cluster (by a marker in their
environment) and then the daemons themselves -- by process id, never by name.

Sandbox choices (a container without systemd or writable cgroups):
- ``ProctrackType=proctrack/linuxproc`` and ``TaskPlugin=task/none``: no cgroups needed.
- ``AccountingStorageType=accounting_storage/none``, ``JobAcctGatherType=jobacct_gather/none``:
  no slurmdbd, hence no MariaDB. ``sacct`` does not work without slurmdbd, so the executor
  plugin must poll with ``squeue`` (``--slurm-status-command squeue``); ``squeue --states=all``
  keeps finished jobs visible for ``MinJobAge`` seconds, and the plugin uses squeue only when
  ``MinJobAge >= 3 * --slurm-init-seconds-before-status-checks``, so MinJobAge is 600 s here.
- ``SelectType=select/cons_tres`` with ``CR_Core_Memory``: jobs' ``--cpus-per-task`` and
  ``--mem`` are enforced by the scheduler, as on a real cluster.

Usage (pytest fixture or by hand)::

    cluster = SlurmCluster(tmp_path / "slurm")
    cluster.start()            # installs slurm-wlm + munge with apt-get if they are missing
    env = cluster.env()        # SLURM_CONF and the marker; pass to snakemake's subprocess
    ...
    cluster.stop()

``python tests/slurm_cluster.py DIR`` starts a cluster in DIR and stops it on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DEBIAN_PACKAGES = ["slurm-wlm", "munge"]
REQUIRED_PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "sinfo"]
MARKER = "NMTV_TEST_SLURM_CLUSTER"
PARTITION = "debug"
# The executor plugin's job step strips every SLURM_* variable (SLURM_CONF included) before its
# inner `srun`, so inside a job only the system location works -- as on a real cluster.
SYSTEM_CONF = Path("/etc/slurm/slurm.conf")


class ClusterError(RuntimeError):
    """The cluster could not be installed or started; the message says what the logs say."""


def missing_programs() -> list[str]:
    return [name for name in REQUIRED_PROGRAMS if shutil.which(name) is None]


def ensure_installed(timeout: float = 900) -> float:
    """Install Debian's slurm-wlm and munge if any program is missing; return seconds spent."""
    if not missing_programs():
        return 0.0
    if os.geteuid() != 0:
        raise ClusterError(
            f"SLURM programs missing ({', '.join(missing_programs())}) and not root: run "
            f"`apt-get install -y {' '.join(DEBIAN_PACKAGES)}` as root first"
        )
    start = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for command in (
        ["apt-get", "update", "-q"],
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *DEBIAN_PACKAGES],
    ):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
        if result.returncode != 0:
            raise ClusterError(f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}")
    if missing_programs():
        raise ClusterError(f"still missing after apt-get: {missing_programs()}")
    return time.monotonic() - start


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def node_memory_mb() -> int:
    """Memory the node advertises: 80% of MemTotal, so slurmd's own check always passes."""
    with open("/proc/meminfo", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("MemTotal:"):
                return int(int(line.split()[1]) / 1024 * 0.8)
    raise ClusterError("cannot read MemTotal from /proc/meminfo")


class SlurmCluster:
    """One slurmctld and one slurmd (node ``localhost``) plus munged, all under ``root``."""

    def __init__(self, root: Path, cpus: int | None = None, min_job_age: int = 600) -> None:
        self.root = Path(root).resolve()
        self.cpus = cpus or os.cpu_count() or 1
        self.min_job_age = min_job_age
        self.hostname = socket.gethostname().split(".")[0]
        self.processes: dict[str, subprocess.Popen] = {}
        self.install_seconds = 0.0

    # -- configuration -------------------------------------------------------------------------
    @property
    def conf_path(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def munge_socket(self) -> Path:
        return self.root / "munge" / "munge.socket"

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Environment for clients (sbatch, squeue, snakemake) that talk to this cluster."""
        env = dict(os.environ if base is None else base)
        env["SLURM_CONF"] = str(self.conf_path)
        env[MARKER] = str(self.root)
        return env

    def write_config(self) -> None:
        for sub in ("etc", "munge", "state", "spool", "log"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o755)  # clients need x on the socket dir
        key = self.root / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o600)
        self.ctld_port, self.slurmd_port = free_port(), free_port()
        root = self.root
        lines = [
            "# generated by tests/slurm_cluster.py: a private single-node test cluster",
            "ClusterName=nmtvtest",
            f"SlurmctldHost={self.hostname}(127.0.0.1)",
            f"SlurmctldPort={self.ctld_port}",
            f"SlurmdPort={self.slurmd_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.munge_socket}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'state' / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'spool' / 'slurmd.pid'}",
            f"SlurmctldLogFile={root / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={root / 'log' / 'slurmd.log'}",
            "SlurmctldDebug=info",
            "SlurmdDebug=info",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "ReturnToService=2",
            f"MinJobAge={self.min_job_age}",
            "KillWait=5",
            "InactiveLimit=0",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            f"NodeName=localhost NodeHostname={self.hostname} NodeAddr=127.0.0.1 "
            f"CPUs={self.cpus} RealMemory={node_memory_mb()} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
        ]
        self.conf_path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    # -- life cycle ----------------------------------------------------------------------------
    def _spawn(self, name: str, command: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "ab")  # noqa: SIM115 - kept open for the child
        self.processes[name] = subprocess.Popen(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env(),
            start_new_session=True,
        )
        log.close()

    def link_system_conf(self) -> None:
        """Point /etc/slurm/slurm.conf at our config; refuse to shadow a real installation's."""
        if SYSTEM_CONF.is_symlink() and not Path(os.readlink(SYSTEM_CONF)).exists():
            SYSTEM_CONF.unlink()  # left behind by a test cluster that was killed
        if SYSTEM_CONF.exists() or SYSTEM_CONF.is_symlink():
            raise ClusterError(
                f"{SYSTEM_CONF} exists (a real or another test cluster's); the test cluster needs "
                "that path for job steps and will not overwrite it"
            )
        SYSTEM_CONF.parent.mkdir(parents=True, exist_ok=True)
        SYSTEM_CONF.symlink_to(self.conf_path)
        self.linked_system_conf = True

    def unlink_system_conf(self) -> None:
        ours = SYSTEM_CONF.is_symlink() and Path(os.readlink(SYSTEM_CONF)) == self.conf_path
        if getattr(self, "linked_system_conf", False) and ours:
            SYSTEM_CONF.unlink()
        self.linked_system_conf = False

    def start(self, timeout: float = 60) -> SlurmCluster:
        self.install_seconds = ensure_installed()
        self.write_config()
        self.link_system_conf()
        munge_dir = self.root / "munge"
        self._spawn(
            "munged",
            [
                "munged", "--foreground", "--force",
                f"--socket={self.munge_socket}",
                f"--key-file={munge_dir / 'munge.key'}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
            ],
        )  # fmt: skip
        self._wait(lambda: self.munge_socket.exists(), timeout, "munged socket")
        self._spawn("slurmctld", ["slurmctld", "-D", "-i", "-f", str(self.conf_path)])
        self._spawn("slurmd", ["slurmd", "-D", "-N", "localhost", "-f", str(self.conf_path)])
        self._wait(self._node_ready, timeout, "node localhost to become idle")
        return self

    def _node_ready(self) -> bool:
        result = subprocess.run(
            ["sinfo", "-h", "-N", "-o", "%T"], env=self.env(), capture_output=True, text=True
        )
        return result.returncode == 0 and result.stdout.strip() in {"idle", "mixed", "allocated"}

    def _wait(self, condition, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise ClusterError(f"{name} exited with {process.returncode}:\n{self.logs()}")
            if condition():
                return
            time.sleep(0.5)
        raise ClusterError(f"timed out after {timeout:.0f}s waiting for {what}:\n{self.logs()}")

    def logs(self, tail: int = 40) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*")):
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-tail:]
            parts.append(f"--- {path.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    def our_stepds(self) -> list[int]:
        """Process ids of slurmstepd (and job) processes whose environment carries our marker."""
        marker = f"{MARKER}={self.root}".encode()
        daemons = {p.pid for p in self.processes.values()}
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in daemons or int(entry.name) == os.getpid():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Cancel all jobs, then end our job steps and daemons (TERM, then KILL after 10 s)."""
        if self.processes.get("slurmctld") and self.processes["slurmctld"].poll() is None:
            subprocess.run(["scancel", "--full", "--user", "root"], env=self.env(), capture_output=True)
            time.sleep(1)
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.get(name)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for pid in self.our_stepds():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.processes.clear()
        self.unlink_system_conf()

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


if __name__ == "__main__":
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else "slurm-test-cluster")
    with SlurmCluster(directory) as cluster:
        print(f"export SLURM_CONF={cluster.conf_path}   # then: sinfo, sbatch, ...; Ctrl-C stops")
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
