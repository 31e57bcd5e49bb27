"""A pre-forked job server: script jobs without their multi-second imports.

Every Snakemake script job is a new Python process, and most of them import
torch (2 CPU s on a fast CPU, 3-4 s on a slow one; docs/performance.md): in
the default run that start-up was a fifth of all the CPU time. `./fud run`
therefore starts one server process beside Snakemake that imports the heavy
libraries once (`PRELOAD`) and then waits on a Unix socket. A script job's
first import (`scripts/_fudbench_path.py`) calls `hand_over()`: the job's
process sends its script, working directory, environment, `sys.path`,
`sys.argv` and its stdin/stdout/stderr to the server, which forks a child
that runs the job exactly as `python <script>` would, with the libraries
already imported. The job's process waits, forwards signals to the child and
exits with the child's exit status, so Snakemake sees an ordinary job.

What stays the same: the numbers (same code, same libraries, the job sets its
own thread count and seeds; torch's default generator is untouched by the
server), the logs, the exit status, Ctrl-C and a job killed by Snakemake
(the child kills itself when its job process goes away). What differs:
Snakemake's `benchmark:` files measure the job's process, so their `s` (wall
time) is right but `cpu_time` and `max_rss` count the waiting process only.

When a job runs in its own process as before: no server (`FUD_PREFORK=off`,
a dry run, a Snakemake started some other way), a job on another machine or
inside a cluster allocation (the server's host and SLURM job id must be the
job's), or a server that does not answer. Nothing else depends on it.
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

ENV = "FUD_PREFORK"   # the server's address "<host>|<slurm job id>|<python env>|<its fudbench>|<socket>"; "off": none
# What the jobs import, loaded once per Snakemake invocation (about 6 CPU s) instead of by each job
# (2-3 CPU s for torch alone): module names, or "module:name" for a name a package loads lazily.
PRELOAD = ("numpy", "torch", "torch.nn.functional", "pandas", "scipy.stats", "PIL.Image", "matplotlib",
           "captum.attr", "skimage.segmentation", "cv2", "diffusers:UNet2DModel", "diffusers:DDIMScheduler",
           "threadpoolctl", "snakemake.logging", "snakemake.iocontainers")
_HEADER = struct.Struct("!Q")   # payload length
_STATUS = struct.Struct("!i")   # child pid, then its exit status

# Set in a forked child: the job it runs must not hand itself over again, and its start-up includes
# the job process's own (fudbench.jobs.process_age).
IN_CHILD = False
HANDED_OVER_AFTER = 0.0


def _locality() -> str:
    """Where a job runs: the host, the cluster allocation (a job inside another SLURM allocation
    must stay in it, even on the server's host) and the Python environment (a rule's conda env
    under --sdm conda is not the server's)."""
    return f"{socket.gethostname()}|{os.environ.get('SLURM_JOB_ID', '')}|{sys.prefix}"


def _library() -> str:
    """The fudbench package this process imports (a job of another checkout imports its own)."""
    return os.path.dirname(os.path.abspath(__file__))


def wanted(argv: list[str]) -> bool:
    """Whether a Snakemake invocation with these arguments runs jobs here (no server for a
    dry run, a report, a listing or a graph; none when FUD_PREFORK=off)."""
    if os.environ.get(ENV, "").lower() in ("off", "0", "false", "no"):
        return False
    quiet = {"-n", "--dry-run", "--dryrun", "--report", "--dag", "--rulegraph", "--filegraph", "--summary",
             "--detailed-summary", "--list-rules", "--list", "-l", "--lint", "--unlock", "--touch", "-t",
             "--cleanup-metadata", "--list-changes", "--lc", "--list-code-changes", "--list-input-changes",
             "--list-params-changes", "--delete-all-output", "--delete-temp-output", "--version", "-h", "--help"}
    return not any(a.split("=", 1)[0] in quiet for a in argv)


# --------------------------------------------------------------------------- the job's side

def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the job server closed the connection")
        data += chunk
    return data


def process_age() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where unavailable); a forked child's
    count from its fork (fudbench.jobs.process_age adds the job process's part)."""
    try:
        with open("/proc/self/stat") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return 0.0


def hand_over(main_globals: dict) -> None:
    """Run this script job in a child of the job server, then exit with its status; return
    (and the job runs here, in this process) when there is no server for it."""
    address = os.environ.get(ENV, "").split("|", 4)
    if IN_CHILD or len(address) != 5 or "__real_file__" not in main_globals:
        return
    *where, library, path = address
    if "|".join(where) != _locality() or library != _library():
        return   # another machine, allocation or environment, or a job of another checkout (its own fudbench)
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        request = pickle.dumps({
            "script": main_globals["__real_file__"], "argv": sys.argv, "cwd": os.getcwd(),
            "env": dict(os.environ), "path": sys.path, "startup": process_age(),
        })
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        socket.send_fds(conn, [_HEADER.pack(len(request))], [0, 1, 2])
        conn.sendall(request)
        (child,) = _STATUS.unpack(_recv_exact(conn, _STATUS.size))
    except OSError:   # no server (it ended, or never started): run here
        return
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _forward(child, signum))
    try:
        (status,) = _STATUS.unpack(_recv_exact(conn, _STATUS.size))
    except (OSError, ConnectionError) as exc:
        print(f"fudbench.prefork: lost the job server while it ran this job ({exc})", file=sys.stderr)
        status = 1
    os._exit(status)


def _forward(child: int, signum: int) -> None:
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


def _run_child(request: dict, fds: list[int], conn: socket.socket) -> None:
    """The forked child: become the job's process (stdio, directory, environment, path, argv),
    run its script as __main__, exit as the interpreter would. Never returns."""
    global IN_CHILD, HANDED_OVER_AFTER
    code = 1
    try:
        IN_CHILD, HANDED_OVER_AFTER = True, float(request["startup"])
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdout.reconfigure(line_buffering=os.isatty(1))   # as a fresh process on that stdout
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        os.environ.pop(ENV, None)   # nothing this job starts hands itself over to the server
        _match_thread_pools()
        sys.path[:] = request["path"]
        sys.argv[:] = request["argv"]
        _watch_job_process(conn)
        import runpy

        try:
            runpy.run_path(request["script"], run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc.code)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            code = 1
        _finish_like_an_interpreter()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        try:   # the status from the child itself: it reaches the job process even if the server is gone
            conn.sendall(_STATUS.pack(code))
        except OSError:
            pass
        os._exit(code)


def _match_thread_pools() -> None:
    """Give the libraries the server loaded the thread counts the job's environment gives a fresh
    process: they read OMP_NUM_THREADS & co. when they load (Snakemake sets them to the job's threads),
    and the server loaded them with its own. numpy's BLAS with two threads instead of one sums in
    another order (a Mahalanobis score moved by 2e-9 before this)."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if not value.isdigit() or int(value) < 1:
        return   # unset: the libraries' default, as in the server
    threads = int(value)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)   # BLAS (numpy's OpenBLAS, MKL) and OpenMP pools already loaded
    except ImportError:
        pass


def _finish_like_an_interpreter() -> None:
    """What Python does at exit: wait for non-daemon threads, then run the atexit handlers (the
    jobs' timing line, logging's flush)."""
    import atexit
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()


def serve(path: str, parent: int, libraries=PRELOAD) -> None:
    """Accept job requests on the socket at `path` until `parent` (the Snakemake process) ends
    or a signal stops the server; fork one child per job and report its exit status."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(path)      # first: a job that starts meanwhile waits in the backlog, not in its own imports
        listener.listen(64)
    except OSError as exc:   # e.g. a socket path too long for AF_UNIX (a deep TMPDIR)
        print(f"fudbench.prefork: no job server ({exc}); every job starts in its own process", file=sys.stderr)
        return
    preload(libraries)
    running: dict[int, socket.socket] = {}
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stopping.append(True))
    try:
        while not stopping and os.getppid() == parent:
            ready, _, _ = select.select([listener], [], [], 0.2)
            if ready:
                _start_job(listener, running)
            _report_finished(running)
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass
        while running:   # jobs still running finish and report (each ends with its job process)
            _report_finished(running)
            time.sleep(0.05)


def preload(libraries=PRELOAD) -> None:
    """Import `libraries` and, with all of PRELOAD, piq's metric modules (the way the quality jobs
    load them, without piq's __init__); a library that fails to import is left to the jobs, as before."""
    import importlib

    for entry in libraries:
        module, _, name = entry.partition(":")
        try:
            loaded = importlib.import_module(module)
            if name:
                getattr(loaded, name)
        except Exception:
            pass
    if tuple(libraries) != PRELOAD:
        return
    try:
        from fudbench.analysis.quality import _piq

        _piq()
    except Exception:
        pass


def _start_job(listener: socket.socket, running: dict) -> None:
    conn, _ = listener.accept()
    try:
        header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
        if len(header) != _HEADER.size or len(fds) != 3:
            raise ConnectionError("incomplete request")
        (length,) = _HEADER.unpack(header)
        request = pickle.loads(_recv_exact(conn, length))
    except (OSError, ConnectionError, pickle.UnpicklingError):
        conn.close()
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in running.values():
            other.close()
        _run_child(request, fds, conn)
    for fd in fds:
        os.close(fd)
    try:
        conn.sendall(_STATUS.pack(pid))
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
        try:
            conn.sendall(_STATUS.pack(code if code >= 0 else 128 - code))
        except OSError:
            pass
        conn.close()


# --------------------------------------------------------------------------- Snakemake's side

class Server:
    """The server process of one Snakemake invocation: `with Server(): ...` starts it (its
    address in os.environ, inherited by every job) and stops it at the end."""

    def __init__(self, libraries=PRELOAD):
        self.libraries = tuple(libraries)
        self.process = None
        self.directory = self.path = None

    def __enter__(self):
        # a Unix socket's path has at most ~107 bytes: a deep TMPDIR falls back to /tmp
        self.directory = tempfile.mkdtemp(prefix="fud-prefork-",
                                          dir=None if len(tempfile.gettempdir()) < 60 else "/tmp")
        self.path = path = os.path.join(self.directory, "jobs.sock")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fudbench.prefork", path, str(os.getpid()), ",".join(self.libraries)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
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
    # that the job's `from fudbench.prefork import hand_over` sees
    from fudbench import prefork

    prefork.serve(sys.argv[1], int(sys.argv[2]), tuple(filter(None, sys.argv[3].split(","))))
