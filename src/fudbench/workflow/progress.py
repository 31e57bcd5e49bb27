"""The run's overall progress line with an ETA.

Snakemake prints "N of M steps (x%) done" after every finished job. `./fud
run` (fudbench.workflow.snakemake_main, via patch_progress) appends the time elapsed
since the first job started and an estimate of the time left at the pace so
far, the mean wall time per finished job times the jobs left:

    12 of 82 steps (15%) done; 1 min 40 s elapsed, ~9 min 43 s left at the pace so far (about 16:42)

The jobs differ in length (FUD's evaluate jobs take minutes, a table job a
second) and the short ones tend to run first, so early ETAs are low; the
line says which pace it is. The per-evaluator estimate before the run is
fudbench.workflow.cost's.
"""

from __future__ import annotations

import re
import time
from typing import Callable, Optional

PROGRESS = re.compile(r"(\d+) of (\d+) steps \((?:[\d.]+)%\) done")


def _duration(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {seconds % 60:02.0f} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def eta(done: int, total: int, elapsed: float, now: Optional[float] = None) -> str:
    """The suffix for 'done of total steps' after `elapsed` seconds: '' before the first job ends."""
    if done <= 0 or total <= 0 or elapsed <= 0:
        return ""
    if done >= total:
        return f"; finished in {_duration(elapsed)}"
    left = elapsed / done * (total - done)
    clock = time.strftime("%H:%M", time.localtime((time.time() if now is None else now) + left))
    return f"; {_duration(elapsed)} elapsed, ~{_duration(left)} left at the pace so far (about {clock})"


def with_eta(line: str, elapsed: float, now: Optional[float] = None) -> str:
    """A Snakemake progress line ("N of M steps (x%) done") with the ETA appended; other lines unchanged."""
    match = PROGRESS.search(line)
    if not match:
        return line
    return line + eta(int(match.group(1)), int(match.group(2)), elapsed, now)


class Clock:
    """Elapsed time since the first job started (or since creation, if no job was seen)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock, self.created, self.first_job = clock, clock(), None

    def job_started(self) -> None:
        if self.first_job is None:
            self.first_job = self.clock()

    def elapsed(self) -> float:
        return self.clock() - (self.first_job if self.first_job is not None else self.created)


def patch_progress(clock: Optional[Clock] = None) -> bool:
    """Append the ETA to Snakemake's progress lines (its default formatter's format_progress) and
    start the clock at its first job line (format_job_info); False if this Snakemake has neither."""
    try:
        from snakemake.logging import DefaultFormatter
    except ImportError:
        return False
    progress = getattr(DefaultFormatter, "format_progress", None)
    job_info = getattr(DefaultFormatter, "format_job_info", None)
    if progress is None or getattr(progress, "_fud_eta", False):
        return progress is not None
    clock = clock or Clock()

    def format_progress(self, msg):
        return with_eta(progress(self, msg), clock.elapsed())

    format_progress._fud_eta = True
    DefaultFormatter.format_progress = format_progress
    if job_info is not None:

        def format_job_info(self, msg):
            clock.job_started()
            return job_info(self, msg)

        DefaultFormatter.format_job_info = format_job_info
    return True
