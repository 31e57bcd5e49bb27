"""Progress bars in the Python API only when asked (issue 58): fudbench.explain and fudbench.evaluate
are silent by default, `progress=True` shows the bars, and outside the API (the workflow's jobs) bars
are shown as before."""

import io
import sys
import textwrap

import pytest

import fudbench
from fudbench.core import bars
from fudbench.core.checks import InputError


class Terminal(io.StringIO):
    """stderr as a terminal: where bars.progress draws tqdm bars."""

    def isatty(self):
        return True


def terminal(monkeypatch) -> Terminal:
    """sys.stderr replaced by a Terminal; called in the test's body (pytest's capture sets its own
    stderr between a fixture's setup and the test)."""
    out = Terminal()
    monkeypatch.setattr(sys, "stderr", out)
    return out


BARRED_METHOD = textwrap.dedent('''
    import torch
    from fudbench.core.bars import progress

    def one_at_a_time(model, x, target, seeds=None):
        """A method of one's own that shows its progress per image."""
        return torch.stack([xi for xi in progress(x, desc="one_at_a_time")])
''')


def test_evaluate_is_silent_unless_asked(cnn_batch, monkeypatch):
    model, x, y = cnn_batch
    stderr = terminal(monkeypatch)
    maps = x.mean(1, keepdim=True)
    quiet = fudbench.evaluate(model, x, y, maps, metrics=["insdel"])
    assert stderr.getvalue() == ""
    shown = fudbench.evaluate(model, x, y, maps, metrics=["insdel"], progress=True)
    assert "insertion" in stderr.getvalue() and "deletion" in stderr.getvalue()  # a bar per curve, by name
    assert quiet["score"].equals(shown["score"])  # the switch changes what is written, not what is computed


def test_explain_silences_a_plugin_methods_bars_unless_asked(cnn_batch, monkeypatch, tmp_path):
    model, x, y = cnn_batch
    stderr = terminal(monkeypatch)
    (tmp_path / "barred.py").write_text(BARRED_METHOD)
    method = f"{tmp_path}/barred.py:one_at_a_time"
    fudbench.explain(model, x, y, method)
    assert stderr.getvalue() == ""
    fudbench.explain(model, x, y, method, progress=True)
    assert "one_at_a_time" in stderr.getvalue()


def test_outside_the_api_bars_are_shown_and_the_api_leaves_them_so(cnn_batch, monkeypatch):
    """The workflow's jobs call the same protocols outside the API: their bars stay, also after an API
    call (which switched them off only for its own work, and back on after an error too)."""
    model, x, y = cnn_batch
    stderr = terminal(monkeypatch)
    with pytest.raises(InputError, match=r"progress must be True .* or False .*got 'yes'"):
        fudbench.evaluate(model, x, y, x, metrics=["insdel"], progress="yes")
    fudbench.evaluate(model, x, y, x, metrics=["insdel"])
    bar = bars.progress(total=2, desc="job")  # the default stream: stderr
    assert type(bar).__name__ == "tqdm"
    bar.close()
    assert "job" in stderr.getvalue()
    with bars.shown(False):
        assert isinstance(bars.progress(total=2, desc="quiet"), bars.Silent)
        assert list(bars.progress(range(3))) == [0, 1, 2]
        with pytest.raises(RuntimeError):
            with bars.shown(True):
                raise RuntimeError("inside")
        assert isinstance(bars.progress(total=2), bars.Silent)  # the outer setting is back after the error
    with pytest.raises(InputError, match=r"fudbench.explain: progress must be True"):
        fudbench.explain(model, x, y, "sm", progress=1)
