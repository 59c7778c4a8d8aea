"""The fork server (nmtvariants.fork_server): a served command behaves as the command run by itself.

A real server is started as the Snakefile starts it, and the real `nmtvariants` executable of this
venv is run with and without it on real commands: the same output bytes, standard error and exit
status; a cancelled job's command does not outlive it; a job the server cannot serve exactly (another
value of an import-time variable, no server) runs its command itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from nmtvariants import fork_server
from nmtvariants.training.checkpoints import save_checkpoint

EXECUTABLE = str(Path(sys.executable).parent / "nmtvariants")
TEXT = "The cat's hat, isn't it?\nA second line -- with 3.5 dashes.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    log = tmp_path_factory.mktemp("server") / "fork_server.log"
    saved = os.environ.get(fork_server.ENV)
    os.environ.pop(fork_server.ENV, None)
    handle = fork_server.start(log)
    assert handle is not None
    deadline = time.monotonic() + 120
    while "fork server: ready on" not in (log.read_text() if log.exists() else ""):  # after its imports
        assert handle.process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, "the server did not start listening"
        time.sleep(0.1)
    yield handle, log
    fork_server.stop(handle)
    if saved is not None:
        os.environ[fork_server.ENV] = saved
    assert handle.process.poll() is not None


def run(args: list[str], served: bool, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if served:
        env[fork_server.ENV] = os.environ[fork_server.ENV]
    else:
        env.pop(fork_server.ENV, None)
    env.update(kwargs.pop("env", {}))
    return subprocess.run([EXECUTABLE, *args], cwd=cwd, env=env, capture_output=True, timeout=120, **kwargs)


def served_lines(log: Path, command: str) -> list[str]:
    return [line for line in log.read_text().splitlines() if f"fork server: {command} " in line]


def test_a_served_command_reads_and_writes_the_jobs_streams_and_files(server, tmp_path) -> None:
    _, log = server
    direct = run(["tokenize", "-l", "en"], served=False, cwd=tmp_path, input=TEXT.encode())
    before = len(served_lines(log, "tokenize"))
    served = run(["tokenize", "-l", "en"], served=True, cwd=tmp_path, input=TEXT.encode())
    assert direct.returncode == served.returncode == 0, served.stderr
    assert served.stdout == direct.stdout and b"&apos;" in served.stdout  # Moses escaping, standard output
    (line,) = served_lines(log, "tokenize")[before:]
    assert f"in {tmp_path}): exit status 0" in line

    # a torch command with relative paths (the job's folder) and a log on standard error
    for name, scale in (("a.pt", 1.0), ("b.pt", 3.0)):
        save_checkpoint({"model": {"w": torch.full((2, 3), scale)}, "update": int(scale)}, tmp_path / name)
    outputs = {}
    for served_run in (False, True):
        output = f"avg-{served_run}.pt"
        result = run(["average", "--inputs", "a.pt", "b.pt", "--output", output], served_run, tmp_path)
        assert result.returncode == 0, result.stderr
        assert b"averaged 2 checkpoints" in result.stderr
        outputs[served_run] = torch.load(tmp_path / output, weights_only=False)
    assert torch.equal(outputs[True]["model"]["w"], torch.full((2, 3), 2.0))
    assert outputs[True]["averaged_from"] == outputs[False]["averaged_from"] == ["a.pt", "b.pt"]
    assert served_lines(log, "average")[-1].endswith(tuple(f"{d} s" for d in "0123456789"))


def test_a_refused_input_gives_the_same_line_and_status_served_or_not(server, tmp_path) -> None:
    args = ["average", "--inputs", "missing.pt", "--output", "out.pt"]
    direct, served = (run(args, flag, tmp_path) for flag in (False, True))
    assert direct.returncode == served.returncode == 2
    assert served.stderr == direct.stderr and served.stderr.count(b"\n") == 1
    assert not (tmp_path / "out.pt").exists()


def test_an_import_time_variable_that_differs_runs_the_command_itself(server, tmp_path) -> None:
    _, log = server
    result = run(["tokenize", "-l", "en"], True, tmp_path, input=TEXT.encode(), env={"MPLBACKEND": "svg"})
    assert result.returncode == 0 and b"&apos;" in result.stdout
    assert "run by the job itself (MPLBACKEND differs from the server's)" in served_lines(log, "tokenize")[-1]


@pytest.mark.parametrize("name", ["@nmtv-fork-nobody-listens", "no-such-socket-file"])
def test_no_server_listening_runs_the_command_itself(tmp_path, name) -> None:
    env = {fork_server.ENV: name}
    result = run(["tokenize", "-l", "en"], False, tmp_path, input=TEXT.encode(), env=env)
    assert result.returncode == 0 and b"&apos;" in result.stdout


def wait_for_served(log: Path, command: str, count: int) -> None:
    """Until the server has forked the ``count``-th command (its pid is in the log only at the end,
    so wait for the job's command to be running: the log's line count cannot say it)."""
    deadline = time.monotonic() + 60
    while len(served_lines(log, command)) < count and time.monotonic() < deadline:
        time.sleep(0.05)


def blocked_job(tmp_path: Path) -> subprocess.Popen:
    """A served `tokenize` that waits for standard input that never comes."""
    env = dict(os.environ)
    return subprocess.Popen(
        [EXECUTABLE, "tokenize", "-l", "en"],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def reader_gone(pipe) -> bool:
    """True once no process holds the read end of ``pipe`` (writing raises BrokenPipeError)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            pipe.write(b"x\n")
            pipe.flush()
        except BrokenPipeError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["SIGTERM to the job", "SIGKILL to the job"])
def test_a_cancelled_job_takes_its_command_with_it(server, tmp_path, how) -> None:
    _, log = server
    job = blocked_job(tmp_path)
    time.sleep(1.0)  # the command is running in a fork and reading the job's standard input
    assert job.poll() is None
    before = len(served_lines(log, "tokenize"))
    if how == "SIGTERM to the job":
        job.terminate()  # passed on to the command, and the job ends by it
        assert job.wait(timeout=30) == -signal.SIGTERM
    else:
        job.kill()  # the job cannot pass anything on: the server sees it gone
        assert job.wait(timeout=30) == -signal.SIGKILL
    assert reader_gone(job.stdin), "the command still reads the cancelled job's input"
    wait_for_served(log, "tokenize", before + 1)
    ending = "signal 15" if how == "SIGTERM to the job" else "killed: the job's process had gone"
    assert ending in served_lines(log, "tokenize")[-1]


def test_mismatch_names_what_differs() -> None:
    identity = {"prefix": "/env", "package": "/src/nmtvariants", "sources": "3 files, newest 7"}
    request = fork_server.Request(
        argv=["x"],
        cwd="/",
        env={"OMP_NUM_THREADS": "1", "PATH": "/a"},
        umask=0o22,
        streams=[],
        fds=[],
        **identity,
    )
    base = {"OMP_NUM_THREADS": "2", "PATH": "/b"}
    assert fork_server.mismatch(request, base, identity) is None  # per-job and unrelated variables
    assert "LD_PRELOAD" in fork_server.mismatch(request, {**base, "LD_PRELOAD": "x.so"}, identity)
    assert "prefix" in fork_server.mismatch(request, base, {**identity, "prefix": "/other"})
    assert "sources" in fork_server.mismatch(request, base, {**identity, "sources": "3 files, newest 8"})


def test_the_source_stamp_moves_with_an_edited_or_added_module(tmp_path) -> None:
    """A server whose package was edited since it started must not serve: its stamp differs."""
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "a.py").write_text("x = 1\n")
    (package / "sub" / "b.py").write_text("y = 2\n")
    (package / "sub" / "data.txt").write_text("not a module\n")
    before = fork_server.source_stamp(package)
    assert before.startswith("2 files")
    edited = (package / "sub" / "b.py").stat().st_mtime_ns + 1_000_000
    os.utime(package / "sub" / "b.py", ns=(edited, edited))
    after_edit = fork_server.source_stamp(package)
    assert after_edit != before
    (package / "c.py").write_text("z = 3\n")
    os.utime(package / "c.py", ns=(0, 0))  # an old file copied in: the count still moves
    assert fork_server.source_stamp(package).startswith("3 files")


def test_a_server_started_before_an_edit_leaves_the_job_to_run_itself(server, tmp_path, monkeypatch):
    """The job's stamp (as after an edit of the package) is not the server's: the job runs the command
    itself, and the server's log says why."""
    _, log = server
    monkeypatch.setattr(fork_server, "source_stamp", lambda package: "0 files, newest 0")
    assert fork_server.run_in_server(["tokenize", "--help"]) is None
    deadline = time.monotonic() + 10
    while "sources 0 files, newest 0 is not the server's" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
