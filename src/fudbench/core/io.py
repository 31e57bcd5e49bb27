"""Atomic file writes: a killed job never leaves a file that looks complete.

Every writer goes to a temporary name in the destination directory and is
renamed into place only after it was fully written and flushed, with the
permissions an ordinary write would give (0666 minus the umask), so that
collaborators on a shared project folder can read the results.

Readers of intermediate files name the rule that makes them (`made_by`): a
file that cannot be read (truncated, overwritten, a disk error) is deleted
with a message naming it and that rule, and noted in the run's damage ledger
(fudbench.core.damage), so the next run of the workflow makes it again, and
reruns what reads it, instead of failing on it forever.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from fudbench.core.damage import LEDGER_ENV, note_deleted


class CorruptFileError(RuntimeError):
    """An intermediate file could not be read; it was deleted so that its rule reruns."""


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _in_this_run(path) -> bool:
    """In a workflow job (the damage ledger is set), whether `path` is a file of this run's
    results folder (results/<run>/, where the ledger is): an intermediate a rule makes."""
    ledger = os.environ.get(LEDGER_ENV)
    if not ledger:
        return False
    run = os.path.dirname(os.path.abspath(ledger))
    return os.path.abspath(path).startswith(run + os.sep)


@contextlib.contextmanager
def checked_read(path, made_by: str | None):
    """Read `path` inside this block; if it cannot be parsed and it is an
    intermediate (`made_by` names the rule that makes it, or a workflow job reads
    it from the run's results folder: data/eval.npz and the like), delete it, note
    it in the damage ledger and raise CorruptFileError saying so. Any other file
    (the researcher's, an asset) is left alone: CorruptFileError naming it."""
    try:
        yield
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if made_by is None and not _in_this_run(path):
            raise CorruptFileError(
                f"{path} cannot be read ({type(exc).__name__}: {exc}); it is corrupt or "
                f"truncated: replace it (not a file of a workflow run's results: left as it is)"
            ) from exc
        Path(path).unlink(missing_ok=True)
        ledger = note_deleted(path)  # in a workflow job: the next run remakes it and its readers (fudbench.core.damage)
        rule = f"rule {made_by}" if made_by else "the rule that makes it"
        raise CorruptFileError(
            f"{path} is corrupt ({type(exc).__name__}: {exc}); deleted it, so the next run of "
            f"the workflow remakes it ({rule}): run the same command again"
            + (f" (noted in {ledger})" if ledger else "")
        ) from exc


def read_every(paths, read) -> list:
    """[read(p) for p in paths], except that a corrupt file (CorruptFileError:
    deleted and noted) does not stop the others from being read, so that one run
    finds every corrupt input of the job, not one per run; then one error names
    them all."""
    out, bad = [], []
    for p in paths:
        try:
            out.append(read(p))
        except CorruptFileError as exc:
            bad.append(exc)
    if len(bad) == 1:
        raise bad[0]
    if bad:
        raise CorruptFileError(f"{len(bad)} input files are corrupt:\n" + "\n".join(map(str, bad))) from bad[0]
    return out


class DiskFullError(OSError):
    """A write failed because the file system is full (errno ENOSPC); the message names the file,
    the free space and the fix."""


# What torch.save says when its writer cannot write (it never says why): with the file system
# (nearly) full, that is the cause.
_TORCH_WRITE_FAILURES = (
    "iostream error",
    "file write failed",
    "unexpected pos",
    "PytorchStreamWriter",
    "inline_container",
)
LOW_FREE_MB = 64  # a torch write failure with less free space than this is a full disk


def _free_mb(folder: Path) -> float | None:
    try:
        return shutil.disk_usage(folder).free / 2**20
    except OSError:
        return None


def disk_full_error(exc: BaseException, path: Path) -> DiskFullError | None:
    """A DiskFullError for a write of `path` that failed with `exc`, if the cause is a full file
    system: an OSError ENOSPC / EDQUOT, or one of torch's writer failures (which name no cause)
    while the file system has under LOW_FREE_MB free; else None."""
    free = _free_mb(path.parent)
    quota = isinstance(exc, OSError) and exc.errno == errno.EDQUOT
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        pass
    elif isinstance(exc, RuntimeError) and any(m in str(exc) for m in _TORCH_WRITE_FAILURES):
        if free is None or free >= LOW_FREE_MB:
            return None
    else:
        return None
    what = "Disk quota exceeded" if quota else "No space left on device"
    room = f"{free:.0f} MB free" if free is not None else "free space unknown"
    return DiskFullError(
        errno.EDQUOT if quota else errno.ENOSPC,
        f"{what}: writing {path} failed ({room} on its file system; {type(exc).__name__}: "
        f"{str(exc).strip()}); the partial file was removed and nothing was replaced: free some "
        f"space there (or run with --directory DIR on another file system), then run the same "
        f"command again",
    )


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to `path`; rename it to `path` on success. A write that fails
    because the disk is full raises DiskFullError naming `path` (disk_full_error): torch says only
    "iostream error" or "unexpected pos" then."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp)
    try:
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())  # mkstemp's 0600 would hide results from the group
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        if isinstance(exc, DiskFullError):
            raise
        tmp.unlink(missing_ok=True)  # frees the space before the free space is measured
        full = disk_full_error(exc, path)
        if full is not None:
            raise full from exc
        raise
    finally:
        if tmp.exists() or tmp.is_symlink():
            tmp.unlink()


def write_text(path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_json(path, obj: Any) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def read_json(path) -> Any:
    return json.loads(Path(path).read_text())


def write_npz(path, **arrays) -> None:
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)


def load_npz(path, made_by: str | None = None) -> dict[str, np.ndarray]:
    """All arrays of an npz file; made_by: see checked_read."""
    with checked_read(path, made_by), np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def read_parquet(path, made_by: str | None = None, **kwargs):
    """pandas.read_parquet; made_by: see checked_read."""
    import pandas as pd

    with checked_read(path, made_by):
        return pd.read_parquet(path, **kwargs)


def write_parquet(path, frame) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


def write_csv(path, frame, **kwargs) -> None:
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, **kwargs)


def torch_save(path, obj) -> None:
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def save_figure(fig, paths) -> None:
    """Save a matplotlib figure to each path (format from the suffix)."""
    for p in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        p = Path(p)
        with atomic_path(p) as tmp:
            fig.savefig(tmp, format=p.suffix.lstrip("."), bbox_inches="tight")
