"""A fork server for the workflow's local jobs: the heavy libraries imported once, a fork per command.

Why: every job of the workflow is a fresh ``nmtvariants <command>`` process, and on the 2-core machines
the demo runs on ``import torch`` alone costs ~1.5 s of CPU (pandas, matplotlib, sacremoses and NLTK
~0.3-0.5 s each), while most of the demo's ~300 jobs do a few seconds of work. The Snakefile starts one
server per local run (``onstart``); it imports :data:`PRELOAD` and then waits on a Unix socket (Linux's
abstract namespace: no file to leave behind; only the same user's processes are served). The
``nmtvariants`` executable of a job (:func:`run_in_server`, called first by ``cli.run``) connects,
sends its arguments, working folder, environment and standard streams (the file descriptors
themselves), and the server forks a copy of itself that becomes the job's command: it starts with
everything imported (copy-on-write: nothing is duplicated until written), reads and writes the job's
own streams, and its exit status or signal becomes the job's. Nothing is shared between two jobs but
the imported, untouched modules.

The fork is a fresh process in every way a command can see: the job's folder, environment, umask,
streams and temporary folder; Python's and NumPy's global random generators re-seeded from the OS (a
fresh interpreter seeds them so); torch's default generator untouched since import (its fixed initial
seed, as in a fresh process); torch's threads set from ``OMP_NUM_THREADS``, which Snakemake sets per job
and a fresh process's OpenMP would read. The server never runs an operator, so no OpenMP, MKL or CUDA
state exists at the fork. Each command runs in a grandchild of the server: the child between them waits
for it, reports its status, and kills it if the job's process goes away (Snakemake cancelling it), so a
cancelled job never keeps writing. Signals sent to the job's process (TERM, INT, HUP, QUIT) are passed
on to the command.

A job falls back to running the command itself, as before, whenever the server cannot serve it
exactly: no server (``NMTV_FORKSERVER`` unset, ``off`` or no one listening: a cluster node, a job
started before the server is ready), another Python environment (a conda env of ``--use-conda``),
another copy of the package, the package's files edited since the server imported them, a variable
that libraries read at import (``LD_*``, ``PYTHON*``, ``CUDA*``, ``TORCH*``, ...) set differently from
the server's, or a command under ``torchrun``.
Rules whose jobs Snakemake measures (``benchmark:``) bypass the server (``rules/common.smk``): a
benchmark file counts the job's own process tree, which a served command is not part of.

NumPy's BLAS threads are fixed at import: the server imports NumPy with one thread (the CPU-heavy
work of the pipeline is torch's, whose threads are set per job).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

ENV = "NMTV_FORKSERVER"  # the socket's path in a job's environment; "off" keeps the server from starting
OFF = "off"
# Imported by the server before it listens; optional ones are skipped when absent.
PRELOAD = ("numpy", "torch", "pandas", "sacremoses", "sacrebleu", "matplotlib.pyplot", "nltk", "yaml")
# Environment variables that libraries read when they are imported (or loaded, for the dynamic
# linker): a job whose value differs from the server's runs the command itself.
IMPORT_TIME_PREFIXES = (
    "LD_",
    "PYTHON",
    "CUDA",
    "TORCH",
    "PYTORCH",
    "NVIDIA",
    "MKL",
    "KMP_",
    "DNNL",
    "ONEDNN",
)
IMPORT_TIME_PREFIXES += ("MPL", "OPENBLAS", "GOTO", "NLTK", "HOME", "XDG_", "LANG", "LC_")
# ...except these, which Snakemake sets per job and the fork applies itself (torch's threads) or which
# only size NumPy's BLAS pool (fixed in the server: module docstring).
PER_JOB = frozenset({"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS"})
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
HEADER = struct.Struct("!I")
STREAMS = (0, 1, 2)


# --------------------------------------------------------------------------------------- the job side
def _import_identity() -> dict[str, str]:
    """What must be equal for a fork of the server to run this process's code: the environment's
    prefix, the package's location and its sources as they are now."""
    import nmtvariants

    package = Path(nmtvariants.__file__).resolve().parent
    return {"prefix": sys.prefix, "package": str(package), "sources": source_stamp(package)}


def source_stamp(package: Path) -> str:
    """The package's Python files now: their count and newest modification time. Why: a server
    started before an edit (or an upgrade) of the package would fork its old modules, and a command's
    later imports would read the new files beside them (seen: a name that one new module took from
    another, old one, missing). A few ms for the package's ~190 files, against ~1.5 s a served job saves."""
    times = [path.stat().st_mtime_ns for path in package.rglob("*.py")]
    return f"{len(times)} files, newest {max(times, default=0)}"


def _send_request(connection: socket.socket, argv: list[str]) -> None:
    streams = [fd for fd in STREAMS if _is_open(fd)]
    payload = json.dumps(
        {
            "argv": argv,
            "cwd": os.getcwd(),
            "env": dict(os.environ),
            "umask": _current_umask(),
            "streams": streams,
            **_import_identity(),
        }
    ).encode()
    # the descriptors travel with the first byte of the message
    socket.send_fds(connection, [HEADER.pack(len(payload)) + payload], streams)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def run_in_server(argv: list[str]) -> int | None:
    """Run ``nmtvariants argv`` in the fork server named by ``NMTV_FORKSERVER``; its exit status, or
    None when the server is absent or cannot serve this process exactly (then run it here)."""
    path = os.environ.get(ENV, "")
    if not path or path == OFF or "LOCAL_RANK" in os.environ:  # torchrun's workers run their own
        return None
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(_address(path))
        _send_request(connection, argv)
        replies = connection.makefile("r", encoding="utf-8")
        first = json.loads(replies.readline() or "{}")
    except (OSError, ValueError):
        connection.close()
        return None
    if "pid" not in first:  # {"fallback": why}
        connection.close()
        return None
    pid = first["pid"]
    previous = {sig: signal.signal(sig, lambda sig, _frame: _pass_on(pid, sig)) for sig in FORWARDED_SIGNALS}
    try:
        line = replies.readline()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        connection.close()
    if not line:
        print(
            f"nmtvariants: the fork server ({path}) stopped while running the command; run the job "
            f"again, or set {ENV}={OFF}",
            file=sys.stderr,
        )
        return 1
    outcome = json.loads(line)
    if outcome.get("signal"):  # end the way the command ended
        signal.signal(outcome["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), outcome["signal"])
    return int(outcome.get("status", 1))


def _pass_on(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


# ------------------------------------------------------------------------------------ the server side
@dataclass
class Request:
    argv: list[str]
    cwd: str
    env: dict[str, str]
    umask: int
    streams: list[int]
    fds: list[int]
    prefix: str
    package: str
    sources: str


def _receive(connection: socket.socket) -> Request:
    data, fds, _flags, _address = socket.recv_fds(connection, 1 << 16, len(STREAMS))
    while len(data) < HEADER.size:
        data += connection.recv(1 << 16) or _eof()
    (length,) = HEADER.unpack_from(data)
    body = data[HEADER.size :]
    while len(body) < length:
        body += connection.recv(1 << 16) or _eof()
    message = json.loads(body)
    return Request(fds=list(fds), **message)


def _eof() -> bytes:
    raise EOFError("the job closed the connection")


def mismatch(request: Request, base_env: dict[str, str], identity: dict[str, str]) -> str | None:
    """Why this server cannot run the request exactly as the job would (None: it can)."""
    for key in ("prefix", "package", "sources"):
        if getattr(request, key) != identity[key]:
            return f"{key} {getattr(request, key)} is not the server's {identity[key]}"
    names = {name for name in (*request.env, *base_env) if name.startswith(IMPORT_TIME_PREFIXES)}
    for name in sorted(names - PER_JOB):
        if request.env.get(name) != base_env.get(name):
            return f"{name} differs from the server's"
    return None


def _reply(connection: socket.socket, message: dict) -> None:
    connection.sendall((json.dumps(message) + "\n").encode())


def _become_command(request: Request, server_env: dict[str, str]) -> None:
    """In the forked grandchild: take on the job's streams, folder and environment, run the command,
    and exit with its status (never returns)."""
    status = 1
    try:
        for sig in (*FORWARDED_SIGNALS, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a fresh interpreter's
        for target, fd in zip(request.streams, request.fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request.cwd)
        os.umask(request.umask)
        env = dict(request.env)
        if "LD_PRELOAD" in server_env:  # the MKL dispatch library (mkl_dispatch), for child processes
            env["LD_PRELOAD"] = server_env["LD_PRELOAD"]
        os.environ.clear()
        os.environ.update(env)
        _fresh_process_state(env)
        sys.argv = ["nmtvariants", *request.argv]
        from nmtvariants.cli import main

        status = main(request.argv)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
        if not isinstance(exit_.code, int | None):
            print(exit_.code, file=sys.stderr)
    except KeyboardInterrupt:
        status = 128 + signal.SIGINT
    except BaseException:  # reported as a fresh interpreter would
        traceback.print_exc()
        status = 1
    finally:
        _finish(status)


def _fresh_process_state(env: dict[str, str]) -> None:
    """What a fresh interpreter would have that a fork of the server does not (module docstring)."""
    random.seed()
    tempfile.tempdir = None  # the job's TMPDIR (Snakemake's tmpdir resource), not the server's
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()
    threads = env.get("OMP_NUM_THREADS", "")
    if "torch" in sys.modules and threads.isdigit() and int(threads) > 0:
        sys.modules["torch"].set_num_threads(int(threads))


def _finish(status: int) -> None:
    """Exit as the interpreter would (threads joined, atexit handlers, streams flushed), without
    tearing the interpreter down."""
    import atexit

    with contextlib.suppress(BaseException):
        for thread in threading.enumerate():
            if thread is not threading.current_thread() and not thread.daemon:
                thread.join()
        atexit._run_exitfuncs()
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status & 0xFF if status >= 0 else 1)


def _address(name: str) -> str:
    """The socket address of a server name: ``@name`` is Linux's abstract namespace (no file: nothing
    is left behind when the server is killed)."""
    return "\0" + name[1:] if name.startswith("@") else name


def _peer_uid(connection: socket.socket) -> int:
    """The user id of the process at the other end (an abstract socket has no file permissions)."""
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", credentials)[1]


def _serve_one(connection: socket.socket, base_env: dict[str, str], identity: dict[str, str]) -> None:
    """In the forked child of the server: one job's request, start to end (never returns)."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server ignores it; this child waits
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        if (uid := _peer_uid(connection)) != os.getuid():  # another user's: never run its command
            _note(f"refused a connection from user id {uid}")
            os._exit(0)
        request = _receive(connection)
        command = " ".join(request.argv[:1]) or "(no command)"
        why = mismatch(request, base_env, identity)
        if why is not None:
            for fd in request.fds:
                os.close(fd)
            _reply(connection, {"fallback": why})
            _note(f"{command} (in {request.cwd}): run by the job itself ({why})")
            os._exit(0)
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            connection.close()
            _become_command(request, dict(os.environ))
        for fd in request.fds:
            os.close(fd)
        _reply(connection, {"pid": pid})
        outcome = _watch(connection, pid)
        seconds = time.perf_counter() - started
        _note(f"{command} (pid {pid}, in {request.cwd}): {outcome} after {seconds:.1f} s")
    except BaseException:  # one job's trouble never reaches the server
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


def _note(line: str) -> None:
    """One line in the server's log (its standard error)."""
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S')} fork server: {line}", file=sys.stderr, flush=True)


def _watch(connection: socket.socket, pid: int) -> str:
    """Wait for the command; report how it ended, or kill it when the job's process has gone. Returns
    how it ended, in words."""
    pidfd = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([connection, pidfd], [], [])
        if pidfd in ready:
            break
        if not connection.recv(1):  # the job's process is gone (cancelled): end its command too
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "killed: the job's process had gone"
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        outcome = {"signal": os.WTERMSIG(wait_status)}
    else:
        outcome = {"status": os.WEXITSTATUS(wait_status)}
    with contextlib.suppress(OSError):
        _reply(connection, outcome)
    return f"signal {outcome['signal']}" if "signal" in outcome else f"exit status {outcome['status']}"


def _die_with_parent() -> None:
    """SIGTERM this process when the process that started it (Snakemake) ends, however it ends."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def serve(name: str, parent: int) -> None:
    """Import :data:`PRELOAD`, listen on ``name`` and fork for every connection until terminated or
    until process ``parent`` (the Snakemake that started it) has gone."""
    _die_with_parent()
    if os.getppid() != parent:  # it had gone before the death signal was set up
        return
    base_env = dict(os.environ)
    from nmtvariants.mkl_dispatch import use_fast_mkl_kernels

    use_fast_mkl_kernels()  # as cli.main does, before torch
    started = time.perf_counter()
    for module in PRELOAD:
        try:
            __import__(module)
        except ImportError as error:
            _note(f"{module} not preloaded ({error})")
    import nmtvariants.cli  # noqa: F401 - the command index's own imports

    identity = _import_identity()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(_address(name))
    listener.listen(64)
    listener.settimeout(1.0)
    _note(f"ready on {name} after {time.perf_counter() - started:.1f} s of imports")

    def stop(_sig, _frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    served = 0
    try:
        while os.getppid() == parent:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.settimeout(None)
            if os.fork() == 0:
                listener.close()
                _serve_one(connection, base_env, identity)
            connection.close()
            served += 1
    finally:
        listener.close()
        _note(f"stopped after {served} connections")


# ------------------------------------------------------------------------------ started by Snakemake
@dataclass
class Server:
    process: subprocess.Popen
    name: str  # NMTV_FORKSERVER's value: ``@`` and an abstract socket's name

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)


def start(log_path: Path) -> Server | None:
    """Start a server in the background (its imports take a few seconds: jobs that start before it
    listens run their commands themselves) and point this process's future jobs at it; None when
    ``NMTV_FORKSERVER=off`` or the platform has no fork."""
    if os.environ.get(ENV) == OFF or not hasattr(os, "fork") or not hasattr(os, "pidfd_open"):
        return None
    name = f"@nmtv-fork-{os.getpid()}-{secrets.token_hex(8)}"
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "GOTO_NUM_THREADS": "1"}
    env.pop(ENV, None)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "nmtvariants.fork_server", name, str(os.getpid())],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
        )
    os.environ[ENV] = name
    return Server(process, name)


def stop(server: Server | None) -> None:
    """Stop the server of :func:`start` (None: nothing to do); later jobs run their own commands."""
    os.environ.pop(ENV, None)
    if server is not None:
        server.stop()


if __name__ == "__main__":  # no logging set up here: a command's own logging starts in its fork
    serve(sys.argv[1], int(sys.argv[2]))
