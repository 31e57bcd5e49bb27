"""A pre-forked job server: script jobs without their multi-second imports.

Every Snakemake script job is a new Python process, and most of them import
torch (2 CPU s on a fast CPU, 3-4 s on a slow one; docs/performance.md): in
the default run that start-up was a fifth of all the CPU time. `./fud run`
therefore starts one server process beside Snakemake that imports the heavy
libraries once (`PRELOAD`) and then waits on a Unix socket. A script job's
first import (`scripts/_fudbench_path.py`) calls `hand_over()`: the job's
process sends its script, working directory, environment, `sys.path`,
`sys.argv`, the signals it ignores and its stdin/stdout/stderr to the server,
which forks a child that runs the job as `python <script>` would, with the
libraries already imported, and ends it as the interpreter would (threads
joined, atexit, `__main__` cleared). The job's process waits, forwards
signals to the child and exits with the child's exit status, so Snakemake
sees an ordinary job.

What stays the same: the numbers (same code and libraries; the child takes
its environment's thread counts and reseeds torch's and numpy's global
generators from entropy as a fresh process does; jobs seed what they draw),
the logs, the exit status, Ctrl-C, a job killed by Snakemake (the child
kills itself when its job process goes away). What differs: Snakemake's
`benchmark:` files measure the job's process, so their `s` (wall time) is
right but `cpu_time` and `max_rss` count the waiting process only; the
libraries (and fudbench's modules the server loaded) are those of the run's
start, not edits made while it runs; a `matplotlibrc` in a `--directory`
other than where `./fud` runs is not read.

When a job runs in its own process as before: no server (`FUD_PREFORK=off`,
a dry run, a report or listing, a cluster executor), a job on another
machine, in another SLURM allocation or step or cgroup, in another Python
environment (a conda env) or of another checkout, a server that does not
answer, or a machine with a GPU where the preloaded libraries touched CUDA
(a forked child could not use it).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ENV = "FUD_PREFORK"  # the server's address "<where>|<its fudbench>|<socket>" (where: _locality()); "off": none
# What the jobs import, loaded once per Snakemake invocation (about 6 CPU s) instead of by each job
# (2-3 CPU s for torch alone): module names, "module:name" for a name a package loads lazily, or
# "module:name()" for a loader to call (piq's metric modules, loaded as the quality jobs load them,
# without piq's __init__).
PRELOAD = (
    "numpy",
    "torch",
    "torch.nn.functional",
    "pandas",
    "scipy.stats",
    "PIL.Image",
    "matplotlib",
    "captum.attr",
    "skimage.segmentation",
    "cv2",
    "threadpoolctl",
    "snakemake.logging",
    "snakemake.iocontainers",
    "fudbench.analysis.quality:_piq()",
    "diffusers:UNet2DModel",
    "diffusers:DDIMScheduler",
)
# diffusers asks torch for its devices when it loads, which on a machine with a GPU poisons CUDA for every
# forked child ("Cannot re-initialize CUDA in forked subprocess"): there it is left to the jobs.
TOUCHES_CUDA = ("diffusers:UNet2DModel", "diffusers:DDIMScheduler")
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_HEADER = struct.Struct("!Q")  # the request's length
_MESSAGE = struct.Struct("!ci")  # b"P" + the child's pid, or b"S" + its exit status (in either order)

# Set in a forked child: the job it runs must not hand itself over again, and its start-up includes
# the job process's own (fudbench.workflow.jobs.process_age).
IN_CHILD = False
HANDED_OVER_AFTER = 0.0


def _locality() -> str:
    """Where a job runs: the host, the cluster allocation and step (a job inside another SLURM
    allocation or step must stay in it, even on the server's host), the cgroup (resource limits)
    and the Python environment (a rule's conda env under --sdm conda is not the server's)."""
    try:
        with open("/proc/self/cgroup") as fh:
            cgroup = fh.read().strip().replace("\n", ";").replace("|", "/")
    except OSError:
        cgroup = ""
    slurm = f"{os.environ.get('SLURM_JOB_ID', '')}.{os.environ.get('SLURM_STEP_ID', '')}"
    return "#".join((socket.gethostname(), slurm, cgroup, sys.prefix)).replace("|", "/")


def _library() -> str:
    """The fudbench package this process imports (a job of another checkout imports its own)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(__file__)))


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where unavailable); a forked child's
    count from its fork (fudbench.workflow.jobs.process_age adds the job process's part)."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


# Snakemake options after which no job runs here (a dry run, a report, a listing, a graph, ...).
_NO_JOBS = {
    "--dry-run",
    "--dryrun",
    "--dry",
    "--report",
    "--dag",
    "--d3dag",
    "--rulegraph",
    "--filegraph",
    "--summary",
    "--detailed-summary",
    "-S",
    "-D",
    "--list-rules",
    "--list",
    "-l",
    "--list-target-rules",
    "--lt",
    "--lint",
    "--unlock",
    "--touch",
    "-t",
    "--cleanup-metadata",
    "--cm",
    "--list-changes",
    "--lc",
    "--list-code-changes",
    "--li",
    "--list-input-changes",
    "--lp",
    "--list-params-changes",
    "--lu",
    "--list-untracked",
    "--delete-all-output",
    "--delete-temp-output",
    "--archive",
    "--containerize",
    "--export-cwl",
    "--conda-create-envs-only",
    "--list-conda-envs",
    "--cleanup-shadow",
    "--generate-unit-tests",
    "--print-compilation",
    "--version",
    "-v",
    "-h",
    "--help",
}


def wanted(argv: list[str]) -> bool:
    """Whether a Snakemake invocation with these arguments runs jobs on this machine: not for a dry run,
    a report, a listing or a graph, not with a cluster executor (given or in a --profile / --workflow-profile),
    not with FUD_PREFORK=off."""
    if os.environ.get(ENV, "").lower() in ("off", "0", "false", "no"):
        return False
    if _profile_executor(os.environ.get("SNAKEMAKE_PROFILE", "")) not in (None, "local"):
        return False
    for i, arg in enumerate(argv):
        name, _, value = arg.partition("=")
        if name in _NO_JOBS or (
            arg.startswith("-") and not arg.startswith("--") and "n" in arg[1:] and arg[1:].isalpha()
        ):  # -n and its combinations (-np, -pn)
            return False
        if not value and i + 1 < len(argv):
            value = argv[i + 1]
        if name in ("--executor", "-e") and value not in ("local", "dryrun", "touch"):
            return False
        if name in ("--profile", "--workflow-profile") and _profile_executor(value) not in (None, "local"):
            return False
    return True


def _profile_executor(profile: str):
    """The executor a Snakemake profile (a directory, or a name under ./profiles) sets, or None."""
    if not profile:
        return None
    for directory in (profile, os.path.join("profiles", profile)):
        path = os.path.join(directory, "config.yaml")
        if os.path.isfile(path):
            try:
                import yaml

                with open(path) as fh:
                    return (yaml.safe_load(fh) or {}).get("executor")
            except Exception:
                return "unknown"
    return None


# --------------------------------------------------------------------------- the job's side


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the job server closed the connection")
        data += chunk
    return data


def hand_over(main_globals: dict) -> None:
    """Run this script job in a child of the job server, then exit with its status; return
    (and the job runs here, in this process) when there is no server for it."""
    address = os.environ.get(ENV, "").split("|", 2)
    if IN_CHILD or len(address) != 3 or "__real_file__" not in main_globals:
        return
    where, library, path = address
    if where != _locality() or library != _library():
        return  # another machine, allocation, cgroup or environment, or a job of another checkout
    ignored = [int(s) for s in SIGNALS if signal.getsignal(s) is signal.SIG_IGN]
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        request = pickle.dumps(
            {
                "script": main_globals["__real_file__"],
                "argv": sys.argv,
                "cwd": os.getcwd(),
                "env": dict(os.environ),
                "path": sys.path,
                "startup": process_age(),
                "ignored": ignored,
            }
        )
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        socket.send_fds(conn, [_HEADER.pack(len(request))], [0, 1, 2])
        conn.sendall(request)
        kind, value = _MESSAGE.unpack(_recv_exact(conn, _MESSAGE.size))
    except OSError:  # no server (it ended, or never started): run here
        return
    child = [0]
    for sig in SIGNALS:
        if sig not in ignored:  # a signal the job ignores stays ignored, as in a fresh process
            signal.signal(sig, lambda signum, _frame: _forward(child[0], signum))
    try:
        while kind != b"S":
            child[0] = value
            kind, value = _MESSAGE.unpack(_recv_exact(conn, _MESSAGE.size))
        status = value
    except (OSError, ConnectionError) as exc:
        print(f"fudbench.workflow.prefork: lost the job server while it ran this job ({exc})", file=sys.stderr)
        status = 1
    os._exit(status)


def _forward(child: int, signum: int) -> None:
    """Pass a signal the job process got on to its child, except a terminal's Ctrl-C, which the
    child (in the same foreground process group) got already."""
    if child <= 0:
        return
    try:
        if signum == signal.SIGINT and os.getpgid(child) == os.tcgetpgrp(sys.stderr.fileno()):
            return
    except OSError:
        pass
    try:
        os.kill(child, signum)
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------- the server's side


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _watch_job_process(conn: socket.socket) -> None:
    """In the child: end it when its job process goes away (killed by Snakemake, Ctrl-C): the
    job process never sends anything after its request, so end of stream means it is gone."""
    import threading

    def watch():
        try:
            conn.recv(1)
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=watch, name="fudbench-prefork-watch", daemon=True).start()


def _become_the_job_process(request: dict, fds: list[int]) -> None:
    """Signals, stdio, directory, environment, path, argv, thread counts and random state of a
    fresh `python <script>` started the way the job's process was."""
    global IN_CHILD, HANDED_OVER_AFTER
    IN_CHILD, HANDED_OVER_AFTER = True, float(request["startup"])
    for sig in SIGNALS:
        if int(sig) in request["ignored"]:
            signal.signal(sig, signal.SIG_IGN)
        else:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)  # blocked by the server around fork()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdout.reconfigure(line_buffering=os.isatty(1))  # as a fresh process on that stdout
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.pop(ENV, None)  # nothing this job starts hands itself over to the server
    tempfile.tempdir = None  # the job's TMPDIR (Snakemake sets it per job), not the server's
    sys.path[:] = request["path"]
    sys.argv[:] = request["argv"]
    _match_thread_pools()
    _fresh_random_state()


def _run_child(request: dict, fds: list[int], conn: socket.socket) -> None:
    """The forked child: become the job's process, run its script as __main__, end as the
    interpreter would, report its status. Never returns."""
    me, code = os.getpid(), 1
    try:
        _become_the_job_process(request, fds)
        _watch_job_process(conn)
        code = _run_main(request["script"])
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        if os.getpid() == me:  # not a process the job forked, ending through here
            try:  # the status from the child itself: it reaches the job process even if the server is gone
                conn.sendall(_MESSAGE.pack(b"S", code))
            except OSError:
                pass
        os._exit(code)


def _run_main(script: str) -> int:
    """Run `script` as __main__ and end as Python does at exit (threads joined and executors shut
    down, atexit, __main__ cleared and collected, so files a script left open are flushed and
    closed); the exit status."""
    import atexit
    import builtins
    import gc
    import io
    import threading
    import types

    module = types.ModuleType("__main__")
    module.__dict__.update(
        __file__=script, __builtins__=builtins, __cached__=None, __package__=None, __loader__=None, __spec__=None
    )
    sys.modules["__main__"] = module
    code = 0
    try:
        with io.open_code(script) as fh:
            source = fh.read()
        exec(compile(source, script, "exec", dont_inherit=True), module.__dict__)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        threading._shutdown()
        atexit._run_exitfuncs()
        module.__dict__.clear()
        gc.collect()
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = code or 1
    return code


def _match_thread_pools() -> None:
    """Give the libraries the server loaded the thread counts the job's environment gives a fresh
    process: they read OMP_NUM_THREADS & co. when they load (Snakemake sets them to the job's threads),
    and the server loaded them with its own. numpy's BLAS with two threads instead of one sums in
    another order (a Mahalanobis score moved by 2e-9 before this)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if not value.isdigit() or int(value) < 1:
        return  # unset: the libraries' default, as in the server
    threads = int(value)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)  # BLAS (numpy's OpenBLAS, MKL) and OpenMP pools already loaded
    except ImportError:
        pass


def _fresh_random_state() -> None:
    """torch and numpy seed their global CPU generators from entropy when they load: a fresh process
    has its own state, a fork the server's. Python's `random` reseeds itself after a fork. Only the CPU
    generator: torch.seed() would also queue a seed for CUDA's, which a fresh process seeds with its
    fixed default when CUDA starts."""
    if "torch" in sys.modules:
        sys.modules["torch"].default_generator.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()


def serve(path: str, parent: int, libraries=PRELOAD) -> None:
    """Accept job requests on the socket at `path` until `parent` (the Snakemake process) ends
    or a signal stops the server; fork one child per job and report its exit status."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)  # first: a job that starts meanwhile waits in the backlog, not in its own imports
        listener.listen(64)
    except OSError as exc:  # e.g. a socket path too long for AF_UNIX (a deep TMPDIR)
        print(f"fudbench.workflow.prefork: no job server ({exc}); every job starts in its own process", file=sys.stderr)
        return
    running: dict[int, socket.socket] = {}
    stopping = []
    for sig in SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, lambda *_: stopping.append(True))
    try:
        preload(libraries)
        if _children_cannot_use_cuda():
            print(
                "fudbench.workflow.prefork: the preloaded libraries initialised CUDA, which a forked job could not use; "
                "every job starts in its own process",
                file=sys.stderr,
            )
            return
        import gc

        gc.collect()
        gc.freeze()  # the preloaded objects: a child's collections neither scan nor copy them
        while not stopping and os.getppid() == parent:
            ready, _, _ = select.select([listener], [], [], 0.2)
            if ready:
                _start_job(listener, running)
            _report_finished(running)
    finally:
        listener.close()
        for remove, leftover in ((os.unlink, path), (os.rmdir, os.path.dirname(path))):  # the socket, its folder
            try:
                remove(leftover)
            except OSError:
                pass
        while running:  # jobs still running finish and report (each ends with its job process)
            _report_finished(running)
            time.sleep(0.05)


def _gpu_machine() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/nvidia0", "/dev/kfd"))


def preload(libraries=PRELOAD) -> None:
    """Import `libraries` (less TOUCHES_CUDA on a machine with a GPU); a library that fails to import
    is left to the jobs, as before."""
    import importlib

    skip = set(TOUCHES_CUDA) if _gpu_machine() else set()
    for entry in libraries:
        if entry in skip:
            continue
        module, _, name = entry.partition(":")
        try:
            loaded = importlib.import_module(module)
            if name:
                loaded = getattr(loaded, name.removesuffix("()"))
            if name.endswith("()"):
                loaded()
        except Exception:
            pass


def _children_cannot_use_cuda() -> bool:
    """Whether a forked child would find CUDA unusable ("bad fork"): one probe child, on a machine
    with a GPU only (on others no job uses CUDA)."""
    if "torch" not in sys.modules or not _gpu_machine():
        return False
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(3 if sys.modules["torch"].cuda._is_in_bad_fork() else 0)
        finally:
            os._exit(4)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) != 0


def _start_job(listener: socket.socket, running: dict) -> None:
    conn, _ = listener.accept()
    fds: list[int] = []
    try:
        header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
        if len(header) != _HEADER.size or len(fds) != 3:
            raise ConnectionError("incomplete request")
        (length,) = _HEADER.unpack(header)
        request = pickle.loads(_recv_exact(conn, length))
    except (OSError, ConnectionError, pickle.UnpicklingError):
        for fd in fds:
            os.close(fd)
        conn.close()
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    # a signal between fork() and the child's own handlers would run the server's (and be lost)
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():
            other.close()
        _run_child(request, fds, conn)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(_MESSAGE.pack(b"P", pid))
    except OSError:
        pass
    running[pid] = conn


def _report_finished(running: dict) -> None:
    while running:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = running.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:  # a child that could not report (killed by a signal) is reported here; otherwise a repeat
            conn.sendall(_MESSAGE.pack(b"S", code if code >= 0 else 128 - code))
        except OSError:
            pass
        conn.close()


# --------------------------------------------------------------------------- Snakemake's side

# glibc's malloc in the server, hence in every job forked from it (read once, when a process starts).
# By default a freed buffer of a few MiB goes back to the kernel and the next one is faulted in again
# page by page: a FUD fill's activations cost ~1M minor page faults per 64-sample fill. Keeping freed
# memory in the heap (up to 512 MiB of it: 4 GiB gained nothing more): the fill 6.4 -> 5.9 s, faults
# 0.9-1.0M -> 0.25M, peak resident memory 1.18 -> 1.27 GB (bench/fud_profile.py, 1 thread;
# docs/performance.md, "Third round"). A job keeps its high-water mark until it ends. The user's own
# settings win: any MALLOC_* variable or glibc.malloc tunable leaves all of these out. Other C
# libraries ignore them.
MALLOC_TUNING = {
    "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
    "MALLOC_TRIM_THRESHOLD_": str(512 << 20),
    "MALLOC_TOP_PAD_": str(256 << 20),
}


def malloc_tuning(environ) -> dict:
    """MALLOC_TUNING unless the environment already tunes glibc's malloc itself."""
    if any(k.startswith("MALLOC_") for k in environ) or "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        return {}
    return dict(MALLOC_TUNING)


class Server:
    """The server process of one Snakemake invocation: `with Server(): ...` starts it (its
    address in os.environ, inherited by every job) and stops it at the end."""

    def __init__(self, libraries=PRELOAD):
        self.libraries = tuple(libraries)
        self.process = None
        self.directory = self.path = self.previous = None

    def __enter__(self):
        # a Unix socket's path has at most ~107 bytes: a deep TMPDIR falls back to /tmp
        self.directory = tempfile.mkdtemp(
            prefix="fud-prefork-", dir=None if len(tempfile.gettempdir()) < 60 else "/tmp"
        )
        self.path = path = os.path.join(self.directory, "jobs.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fudbench.workflow.prefork", path, str(os.getpid()), ",".join(self.libraries)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            env={**os.environ, **malloc_tuning(os.environ)},
        )
        self.previous = os.environ.get(ENV)
        os.environ[ENV] = f"{_locality()}|{_library()}|{path}"
        return self

    def __exit__(self, *exc):
        if self.previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self.previous
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.directory:
            import shutil

            shutil.rmtree(self.directory, ignore_errors=True)
        return False


if __name__ == "__main__":
    # through the imported module, not this __main__ copy: the child's IN_CHILD must be the one
    # that the job's `from fudbench.workflow.prefork import hand_over` sees
    from fudbench.workflow import prefork

    prefork.serve(sys.argv[1], int(sys.argv[2]), tuple(filter(None, sys.argv[3].split(","))))
