"""A content-keyed cache of per-explainer evaluation work.

An evaluate job covers all explainers of one (model, evaluator, shard): one
process start, one model and score-model load, instead of one per explainer.
Snakemake reruns such a job whenever any explainer's attributions change or
an explainer is added; this cache makes that rerun redo only the work whose
inputs changed. An entry is keyed by everything its records depend on:

- the evaluator's name and settings, the evaluation settings, the seed key;
- the sha256 of every input file (model, images, the explainer's
  attributions, score model, surrogate, reference records ...);
- the sha256 of the fudbench library's source, so that any edit of the
  library invalidates every entry (more conservative than Snakemake, which
  does not track library code at all).

Entries live under results/<run>/cache/ and are hard links of the job's own
outputs (no extra disk where the file system allows links; else copies);
a cache hit copies the entry to the output path.
Only the newest entry per (explainer, job) is kept. Deleting the folder, or
FUD_NO_CACHE=1, makes every job recompute.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from fudbench.fingerprint import file_sha256, fingerprint

_LIBRARY = Path(__file__).resolve().parent


@lru_cache(maxsize=None)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(path)


def digest_of(path) -> str:
    """sha256 of a file's content, memoised per size and mtime within a process."""
    st = os.stat(path)
    return _digest(str(Path(path).resolve()), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=1)
def library_digest() -> str:
    """sha256 over the fudbench package's Python sources (names and contents)."""
    h = hashlib.sha256()
    for p in sorted(_LIBRARY.rglob("*.py")):
        h.update(str(p.relative_to(_LIBRARY)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def work_key(settings: Mapping, files: Mapping[str, Optional[str]]) -> str:
    """The key of one unit of work: its JSON-serialisable settings and the
    content of its input files (None = not used)."""
    return fingerprint({"settings": settings, "library": library_digest(),
                        "files": {k: (digest_of(v) if v else None) for k, v in sorted(files.items())}})[:20]


class WorkCache:
    """Files of finished work under `root`, one folder per unit name.

    get(name, key, suffixes) -> {suffix: cached path} or None;
    put(name, key, {suffix: finished output}) links the outputs in.
    """

    def __init__(self, root, enabled: Optional[bool] = None):
        self.root = Path(root)
        self.enabled = (os.environ.get("FUD_NO_CACHE", "") in ("", "0")) if enabled is None else enabled

    def _paths(self, name: str, key: str, suffixes) -> dict:
        return {s: self.root / name / f"{key}{s}" for s in suffixes}

    def get(self, name: str, key: str, suffixes) -> Optional[dict]:
        if not self.enabled:
            return None
        paths = self._paths(name, key, suffixes)
        return paths if all(p.is_file() for p in paths.values()) else None

    def put(self, name: str, key: str, outputs: Mapping[str, str]) -> None:
        if not self.enabled:
            return
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():  # older keys of the same unit are stale now
            if not old.name.startswith(key):
                old.unlink(missing_ok=True)
        for suffix, src in outputs.items():
            dst = folder / f"{key}{suffix}"
            tmp = folder / f".{key}{suffix}.part"
            tmp.unlink(missing_ok=True)
            try:
                os.link(src, tmp)
            except OSError:  # another file system, or links not allowed
                shutil.copyfile(src, tmp)
            os.replace(tmp, dst)

    def restore(self, cached: Mapping[str, Path], outputs: Mapping[str, str]) -> None:
        """Copy cached files to the job's output paths. Copies, not links: an
        output must be newer than the job's inputs (Snakemake's mtime trigger),
        and a link would carry the cached file's old mtime."""
        for suffix, dst in outputs.items():
            Path(dst).parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(dst).with_name(f".{Path(dst).name}.part")
            shutil.copyfile(cached[suffix], tmp)
            os.replace(tmp, dst)
