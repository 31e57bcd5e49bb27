"""The pre-forked job server (fudbench.prefork, issue 47): a script job handed over to it runs as it
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

from fudbench import prefork

REPO = Path(__file__).resolve().parents[1]

# A script job as Snakemake writes it: a preamble that sets __real_file__, then the job, whose first
# import hands it over (scripts/_fudbench_path.py does the same).
JOB = textwrap.dedent("""\
    import sys; __real_file__ = __file__
    sys.path.insert(0, {src!r})
    from fudbench.prefork import hand_over
    hand_over(vars(sys.modules["__main__"]))
    import atexit, os, time
    from fudbench import prefork
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
    with prefork.Server(libraries=("numpy", "threadpoolctl")) as srv:   # not all of PRELOAD: seconds
        assert wait_for(lambda: os.path.exists(srv.path)), "the job server did not start"
        yield srv
    assert srv.process.wait(timeout=10) is not None


def job(tmp_path, *args, env=None, **kw):
    script = tmp_path / "job.py"
    script.write_text(JOB.format(src=str(REPO / "src")))
    environment = {**os.environ, "JOB_VAR": "set by the job's environment", **(env or {})}
    return subprocess.Popen([sys.executable, str(script), *args], cwd=tmp_path, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_a_handed_over_job_runs_as_in_its_own_process(server, tmp_path):
    proc = job(tmp_path, "3")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3
    assert out.split()[0] == "child" and str(tmp_path) in out and "set by the job's environment" in out
    assert "['3']" in out and "to stderr" in err
    assert (tmp_path / "atexit.txt").read_text() == "ran"


def test_a_job_gets_the_thread_counts_of_its_environment(server, tmp_path):
    """numpy's BLAS, loaded by the server with its own thread count, runs with the job's
    (OMP_NUM_THREADS, which Snakemake sets to the job's threads), as in a fresh process."""
    for threads in ("1", "2"):
        proc = job(tmp_path, "threads", env={"OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads})
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.startswith("child") and out.split("\n")[1] == f"[{threads}]", out


def test_an_exception_fails_the_job_with_its_traceback(server, tmp_path):
    proc = job(tmp_path, "raise")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and out.startswith("child")
    assert "ValueError: the job failed" in err and "Traceback" in err


def test_no_server_reachable_means_the_job_runs_in_its_own_process(server, tmp_path):
    host, slurm, env, library, path = os.environ[prefork.ENV].split("|", 4)
    for address in (f"another-host|{slurm}|{env}|{library}|{path}", f"{host}|4242|{env}|{library}|{path}",
                    f"{host}|{slurm}|/a/conda/env|{library}|{path}",
                    f"{host}|{slurm}|{env}|/another/checkout/fudbench|{path}",
                    f"{host}|{slurm}|{env}|{library}|/no/socket", "off"):
        proc = job(tmp_path, "0", env={prefork.ENV: address})
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0 and out.startswith("own process"), address


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
    proc.kill()   # Snakemake killing the job: nothing to forward, the child notices its job process is gone
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
    for quiet in (["-n"], ["--dry-run"], ["--report=r.html"], ["--dag"], ["--unlock"], ["--list-rules"]):
        assert not prefork.wanted(["--cores", "2", *quiet]), quiet
    monkeypatch.setenv(prefork.ENV, "off")
    assert not prefork.wanted(["--cores", "2"])


def test_the_server_ends_with_its_snakemake(tmp_path):
    """A server whose Snakemake process is gone (killed, no clean exit) stops and removes its socket."""
    path = tmp_path / "jobs.sock"
    snakemake = subprocess.Popen(
        [sys.executable, "-c", "import os, subprocess, sys, time; "
         f"p = subprocess.Popen([sys.executable, '-m', 'fudbench.prefork', {str(path)!r}, str(os.getpid()), "
         "'']); print(p.pid, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
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
