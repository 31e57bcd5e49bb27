"""Progress outside a terminal is plain lines a person can read; inside one, a tqdm bar."""

import io

from fudbench.core import bars


class _Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def test_plain_progress_writes_a_line_per_interval_and_one_at_the_end(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(bars.time, "monotonic", clock)
    out = io.StringIO()
    bar = bars.progress(total=1000, desc="fud", mininterval=10, stream=out)
    for _ in range(1000):
        clock.t += 0.1  # 100 s in all
        bar.update(1)
    bar.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert 9 <= len(lines) <= 11  # every 10 s (and each tenth), no more
    assert lines[-1] == "fud: 1000/1000 (100%), 100 s"


def test_a_quick_loop_writes_nothing(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(bars.time, "monotonic", clock)
    out = io.StringIO()
    for _ in bars.progress(range(50), desc="epoch 1/3", mininterval=5, stream=out):
        clock.t += 0.001
    assert out.getvalue() == ""


def test_a_slow_loop_ends_with_its_total(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(bars.time, "monotonic", clock)
    out = io.StringIO()
    for _ in bars.progress(range(7), desc="fud", mininterval=10, stream=out):
        clock.t += 3.0  # 21 s: lines at 3 s (first tenth... after 2 s), then by time, then the end
    lines = out.getvalue().splitlines()
    assert lines[-1] == "fud: 7/7 (100%), 21 s" and len(lines) == len(set(lines))


def test_in_a_terminal_it_is_a_tqdm_bar():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    bar = bars.progress(total=3, desc="x", stream=Tty())
    assert type(bar).__name__ == "tqdm"
    bar.close()
