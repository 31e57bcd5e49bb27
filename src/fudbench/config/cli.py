"""Command-line values of the tools and benchmarks (tools/*.py, bench/*.py), checked where
they are typed (issue 45):

- paths are the user's: relative to the directory ./fud was run in (FUD_CALLER_CWD; else
  the working directory), `~` expanded (`type=user_file`), so `bench/gpu_suite.sh --out
  runs/a` writes under the caller's runs/a, not into the repository;
- numbers are finite and in range (`type=positive_float`, `positive_int`,
  `non_negative_int`), so `--time-scale -1` or `nan` is an argparse error naming the
  option and the value, before any work;
- config files address a run by the workflow's rule (fudbench.config.files.script_config).

No torch import: a script's argument errors come in milliseconds.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from fudbench.config.files import script_config, user_path  # noqa: F401  (the scripts' one import)


def user_file(text: str) -> Path:
    """argparse type: a path as the user typed it, made absolute where they typed it."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return Path(user_path(text))


def _number(text: str, kind):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (a scale, a time, a rate)."""
    value = _number(text, float)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not > 0")
    return value


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (a count of images, steps, cores, repeats)."""
    value = _number(text, int)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not >= 1")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0."""
    value = _number(text, int)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not >= 0")
    return value
