"""Progress of a long loop: a bar in a terminal, a plain line now and then in a log.

Outside a terminal (a job's log file, `./fud run > run.log`, SLURM output) a bar's carriage-return
frames pile up as unreadable text, so there progress is a plain line written every `every` seconds or
each 10% of the work (at most every `every` / 5 seconds), and at the end of a loop that wrote a line on
its way; a quick loop writes nothing.

Shown by default (the workflow's jobs, training); `shown(False)` silences every bar made inside its block,
in this thread: the Python API's calls (fudbench.explain / evaluate) run their work inside
`shown(progress)`, silent unless the caller asks (`progress=True`).
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import time

_SHOWN = contextvars.ContextVar("fudbench_progress_shown", default=True)


@contextlib.contextmanager
def shown(on: bool):
    """Bars made inside the block are shown (on) or silent; the setting before it comes back after."""
    token = _SHOWN.set(bool(on))
    try:
        yield
    finally:
        _SHOWN.reset(token)


class Silent:
    """A bar that writes nothing (inside shown(False))."""

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class PlainProgress:
    """tqdm's update/close interface, written as occasional lines: `desc: 40/100 (40%), 12 s`."""

    def __init__(self, total: int, desc: str = "", every: float = 10.0, stream=None):
        self.total, self.desc, self.every = int(total or 0), desc, every
        self.stream = stream if stream is not None else sys.stderr
        self.n = 0
        self.start = self._last_time = time.monotonic()
        self._written = 0  # the count the last line showed
        self._closed = False

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        # each new tenth of the work gets a line, but not more often than every fifth of `every`
        new_tenth = self.total and int(10 * self.n / self.total) > int(10 * self._written / self.total)
        if now - self._last_time >= self.every or (new_tenth and now - self._last_time >= self.every / 5):
            self._write(now)

    def _write(self, now: float) -> None:
        self._last_time, self._written = now, self.n
        share = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        print(f"{self.desc}: {self.n}/{self.total}{share}, {now - self.start:.0f} s", file=self.stream, flush=True)

    def close(self) -> None:
        # the end, unless the last line said it; a loop that wrote no line on its way (done within
        # `every` / 5 s) writes none: its job's log line says what it did
        if not self._closed and self._written and self.n != self._written:
            self._write(time.monotonic())
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def progress(iterable=None, *, total: int | None = None, desc: str = "", mininterval: float = 10.0, stream=None):
    """A tqdm bar where `stream` (stderr by default) is a terminal, else PlainProgress. With an iterable,
    an iterator over it that counts; without, the progress object (update / close). Inside shown(False):
    the iterable itself, or a Silent bar."""
    if not _SHOWN.get():
        return Silent() if iterable is None else iterable
    stream = stream if stream is not None else sys.stderr
    if total is None and iterable is not None:
        try:
            total = len(iterable)
        except TypeError:
            total = 0
    if getattr(stream, "isatty", lambda: False)():
        from tqdm import tqdm

        return tqdm(iterable, total=total, desc=desc, leave=False, mininterval=mininterval, file=stream)
    bar = PlainProgress(total, desc, every=mininterval, stream=stream)
    if iterable is None:
        return bar
    return _counted(iterable, bar)


def _counted(iterable, bar):
    with bar:
        for item in iterable:
            yield item
            bar.update(1)
