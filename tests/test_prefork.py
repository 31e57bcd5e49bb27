"""The pre-forked job server (fudbench.workflow.prefork, issue 47): a script job handed over to it runs as it
would in its own process (directory, environment, argv, stdio, exit status, exceptions, atexit,
signals), and a job that cannot reach it runs in its own process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from fudbench.workflow import prefork

REPO = Path(__file__).resolve().parents[1]

# A script job as Snakemake writes it: a preamble that sets __real_file__, then the job, whose first
# import hands it over (scripts/_fudbench_path.py does the same).
JOB = textwrap.dedent("""\
    import sys; __real_file__ = __file__
    sys.path.insert(0, {src!r})
    from fudbench.workflow.prefork import hand_over
    hand_over(vars(sys.modules["__main__"]))
    import atexit, os, time
    from fudbench.workflow import prefork
    atexit.register(lambda: open("atexit.txt", "w").write("ran"))
    print("child" if prefork.IN_CHILD else "own process", os.getcwd(), os.environ.get("JOB_VAR"), sys.argv[1:])
    print("to stderr", file=sys.stderr)
    mode = sys.argv[1]
    if mode == "raise":
        raise ValueError("the job failed")
    if mode == "threads":
        from threadpoolctl import threadpool_info
        print(sorted(set(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")))
    if mode == "sleep":
        print("sleeping", flush=True)
        time.sleep(60)
    if mode == "forks":   # a copy of the job that ends through sys.exit must not report for the job
        pid = os.fork()
        if pid == 0:
            sys.exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.5)
        print("parent done")
        sys.exit(7)
    if mode == "executor":   # an executor never shut down: Python's exit shuts it down
        from concurrent.futures import ThreadPoolExecutor
        pool = ThreadPoolExecutor(2)
        print(sum(pool.map(abs, [-1, -2])))
    if mode == "unclosed":   # a file left open: Python's exit flushes and closes it
        fh = open("unclosed.txt", "w")
        fh.write("data")
    if mode == "random":
        import numpy, torch
        print(torch.rand(1).item(), numpy.random.rand(), os.environ.get("TMPDIR"), __import__("tempfile").gettempdir())
    if mode == "ignore-hup":
        import signal
        print("sleeping", flush=True)
        time.sleep(2)
        print("finished", flush=True)
    if mode == "faults":   # minor page faults of buffers of 24, 24 and 8 MiB made again (FUD's activations)
        import ctypes, resource
        libc = ctypes.CDLL(None)
        libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
        def buffers():   # malloc'd, written and freed, as torch's CPU allocator does
            blocks = [(libc.malloc(n << 20), n << 20) for n in (24, 24, 8)]
            for block, size in blocks:
                ctypes.memset(block, 1, size)
            for block, _ in blocks:
                libc.free(block)
        buffers()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            buffers()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    if mode == "profile":   # FUD_PROFILE_DIR in the job's environment (fudbench.workflow.jobs.profile_job, from setup_job)
        import types
        from fudbench.workflow.jobs import profile_job
        print(profile_job(types.SimpleNamespace(rule="evaluate", wildcards={{"model": "cnn"}},
                                                config={{"run_name": "synthetic"}})))
        def busy_in_the_job(n):
            return sum(i * i for i in range(n))
        busy_in_the_job(200_000)
    if mode == "slow":
        print("sleeping", flush=True)
        time.sleep(2)
        sys.exit(5)
    sys.exit(int(mode) if mode.isdigit() else 0)
    """)


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def server():
    with prefork.Server(libraries=("numpy", "threadpoolctl")) as srv:  # not all of PRELOAD: seconds
        assert wait_for(lambda: os.path.exists(srv.path)), "the job server did not start"
        yield srv
    assert srv.process.wait(timeout=10) is not None


def job(tmp_path, *args, env=None, **kw):
    script = tmp_path / "job.py"
    script.write_text(JOB.format(src=str(REPO / "src")))
    environment = {**os.environ, "JOB_VAR": "set by the job's environment", **(env or {})}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kw,
    )


def test_a_handed_over_job_runs_as_in_its_own_process(server, tmp_path):
    proc = job(tmp_path, "3")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert out.split()[0] == "child" and str(tmp_path) in out and "set by the job's environment" in out
    assert "['3']" in out and "to stderr" in err
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_a_handed_over_job_leaves_its_profile(server, tmp_path):
    """FUD_PROFILE_DIR works in a job the server runs: the profile is written by an atexit handler,
    which the server's child runs at the job's end as a process of its own would."""
    import pstats

    folder = tmp_path / "prof"
    proc = job(tmp_path, "profile", env={"FUD_PROFILE_DIR": str(folder)})
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.startswith("child"), (out, err)
    path = folder / "synthetic.evaluate_cnn.prof"
    assert out.split("\n")[1] == str(path) and path.is_file()
    assert any(name == "busy_in_the_job" for _, _, name in pstats.Stats(str(path)).stats)


def test_a_job_gets_the_thread_counts_of_its_environment(server, tmp_path):
    """numpy's BLAS, loaded by the server with its own thread count, runs with the job's
    (OMP_NUM_THREADS, which Snakemake sets to the job's threads), as in a fresh process."""
    for threads in ("1", "2"):
        proc = job(tmp_path, "threads", env={"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads})
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.startswith("child") and out.split("\n")[1] == f"[{threads}]", out


def test_a_job_keeps_freed_memory_instead_of_faulting_it_in_again(server, tmp_path):
    """prefork.MALLOC_TUNING: buffers freed and made again come from the heap, not from fresh pages
    (in its own process glibc gives them back to the kernel at each free and faults them in again:
    ~71,500 minor faults over the five rounds here)."""
    counts = {}
    for where, env in (("child", {}), ("own process", {prefork.ENV: ""})):
        proc = job(tmp_path, "faults", env=env)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.startswith(where), (out, err)
        counts[where] = int(out.split("\n")[1])
    assert counts["child"] < 500, counts
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not (thp.is_file() and "[always]" in thp.read_text()):  # huge pages would fault 2 MiB at a time
        assert counts["own process"] > 20000, counts


def test_the_users_own_malloc_settings_win():
    assert prefork.malloc_tuning({}) == prefork.MALLOC_TUNING
    assert prefork.malloc_tuning({"MALLOC_ARENA_MAX": "2"}) == {}
    assert prefork.malloc_tuning({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"}) == {}
    assert prefork.malloc_tuning({"GLIBC_TUNABLES": "glibc.pthread.rseq=0"}) == prefork.MALLOC_TUNING


def test_a_job_that_forks_or_leaves_threads_and_files_ends_as_in_its_own_process(server, tmp_path):
    proc = job(tmp_path, "forks")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 7 and "parent done" in out
    proc = job(tmp_path, "executor")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.split("\n")[1] == "3"
    proc = job(tmp_path, "unclosed")
    proc.communicate(timeout=60)
    assert proc.returncode == 0 and (tmp_path / "unclosed.txt").read_text() == "data"


def test_a_job_gets_its_own_random_state_and_temporary_folder(tmp_path):
    """torch and numpy seed their global generators from entropy when they load; each job gets fresh
    ones, as each fresh process did; tempfile follows the job's TMPDIR (Snakemake sets it per job)."""
    with prefork.Server(libraries=("numpy", "torch")) as srv:
        assert wait_for(lambda: os.path.exists(srv.path))
        draws = set()
        for i in range(2):
            folder = tmp_path / f"tmp{i}"
            folder.mkdir()
            proc = job(tmp_path, "random", env={"TMPDIR": str(folder)})
            out, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0 and out.startswith("child"), out
            torch_draw, numpy_draw, tmpdir, gettempdir = out.split("\n")[1].split()
            assert tmpdir == gettempdir == str(folder)
            draws.add((torch_draw, numpy_draw))
        assert len(draws) == 2


def test_a_signal_the_job_ignores_stays_ignored(server, tmp_path):
    """As under `nohup ./fud run &`: SIGHUP ignored by the job process is ignored by its child."""
    import signal as sig

    proc = job(tmp_path, "ignore-hup", preexec_fn=lambda: sig.signal(sig.SIGHUP, sig.SIG_IGN))
    assert proc.stdout.readline().startswith("child") and proc.stdout.readline().strip() == "sleeping"
    child = subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True).stdout.split()
    proc.send_signal(sig.SIGHUP)
    for pid in child:
        os.kill(int(pid), sig.SIGHUP)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "finished" in out


def test_an_exception_fails_the_job_with_its_traceback(server, tmp_path):
    proc = job(tmp_path, "raise")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out.startswith("child")
    assert "ValueError: the job failed" in err and "Traceback" in err


def test_no_server_reachable_means_the_job_runs_in_its_own_process(server, tmp_path):
    where, library, path = os.environ[prefork.ENV].split("|", 2)
    host, slurm, cgroup, env = where.split("#")
    for address in (
        "#".join(("another-host", slurm, cgroup, env)) + f"|{library}|{path}",
        "#".join((host, "4242.0", cgroup, env)) + f"|{library}|{path}",
        "#".join((host, slurm, "0::/another.slice", env)) + f"|{library}|{path}",
        "#".join((host, slurm, cgroup, "/a/conda/env")) + f"|{library}|{path}",
        f"{where}|/another/checkout/fudbench|{path}",
        f"{where}|{library}|/no/socket",
        "off",
    ):
        proc = job(tmp_path, "0", env={prefork.ENV: address})
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.startswith("own process"), address
    proc = job(tmp_path, "0", env={"SLURM_STEP_ID": "7"})  # a SLURM step of its own: stays in it
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.startswith("own process")


def test_signals_reach_the_job_and_a_killed_job_process_takes_its_job_along(server, tmp_path):
    def children():
        return subprocess.run(["pgrep", "-P", str(server.process.pid)], capture_output=True, text=True).stdout.split()

    proc = job(tmp_path, "sleep")
    assert proc.stdout.readline().startswith("child")
    assert proc.stdout.readline().strip() == "sleeping" and len(children()) == 1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 128 + signal.SIGTERM
    assert wait_for(lambda: not children())

    proc = job(tmp_path, "sleep")
    proc.stdout.readline(), proc.stdout.readline()
    assert len(children()) == 1
    proc.kill()  # Snakemake killing the job: nothing to forward, the child notices its job process is gone
    proc.wait(timeout=20)
    assert wait_for(lambda: not children())


def test_a_job_reports_its_status_even_if_the_server_is_gone(tmp_path):
    with prefork.Server(libraries=()) as srv:
        assert wait_for(lambda: os.path.exists(srv.path))
        proc = job(tmp_path, "slow")
        assert proc.stdout.readline().startswith("child") and proc.stdout.readline().strip() == "sleeping"
        srv.process.kill()
        assert proc.wait(timeout=30) == 5


def test_snakemake_gets_a_server_only_where_it_runs_jobs(monkeypatch):
    monkeypatch.delenv(prefork.ENV, raising=False)
    assert prefork.wanted(["--cores", "2", "--configfile", "config/smoke.yaml"])
    for quiet in (
        ["-n"],
        ["-np"],
        ["--dry-run"],
        ["--dry"],
        ["--report=r.html"],
        ["--dag"],
        ["--unlock"],
        ["--list-rules"],
        ["--lt"],
        ["-S"],
        ["--executor", "slurm"],
        ["--executor=slurm"],
        ["--workflow-profile", "profiles/slurm"],
        ["--profile", "slurm"],
    ):
        assert not prefork.wanted(["--cores", "2", *quiet]), quiet
    assert prefork.wanted(
        ["--cores", "2", "--workflow-profile", "profiles/default", "--executor", "local", "-p", "--report-after-run"]
    )
    monkeypatch.setenv(prefork.ENV, "off")
    assert not prefork.wanted(["--cores", "2"])


def test_the_server_ends_with_its_snakemake(tmp_path):
    """A server whose Snakemake process is gone (killed, no clean exit) stops and removes its socket."""
    path = tmp_path / "jobs.sock"
    snakemake = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time; "
            f"p = subprocess.Popen([sys.executable, '-m', 'fudbench.workflow.prefork', {str(path)!r}, str(os.getpid()), "
            "'']); print(p.pid, flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    server = int(snakemake.stdout.readline())

    def server_running():
        try:
            return Path(f"/proc/{server}/status").read_text().split("State:")[1].split()[0] not in ("Z", "X")
        except (FileNotFoundError, IndexError):
            return False

    try:
        assert wait_for(path.exists) and server_running()
        snakemake.kill()
        snakemake.wait(timeout=20)
        assert wait_for(lambda: not server_running()) and not path.exists()
    finally:
        snakemake.kill()
        if server_running():
            os.kill(server, signal.SIGKILL)


def test_the_server_refuses_to_serve_where_its_libraries_touched_cuda():
    """diffusers asks torch for its devices when it loads, which marks every forked child a "bad fork"
    for CUDA: on a machine with a GPU the server leaves diffusers to the jobs, and its probe child stops
    it from serving if anything else did the same (shown here on a CPU, where the mark is set too)."""
    code = textwrap.dedent("""\
        from fudbench.workflow import prefork
        prefork._gpu_machine = lambda: True
        import torch
        before = prefork._children_cannot_use_cuda()
        prefork.preload(prefork.PRELOAD)
        after_preload = prefork._children_cannot_use_cuda()
        import diffusers; diffusers.UNet2DModel
        print(before, after_preload, prefork._children_cannot_use_cuda())
        """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert out.returncode == 0 and out.stdout.split() == ["False", "False", "True"], out.stdout + out.stderr[-2000:]
