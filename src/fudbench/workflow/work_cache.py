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

Entries live under results/<run>/cache/ and are copies of the job's own
outputs, never hard links: a link shares the output's inode, so a truncated or
edited output would damage its entry too, and every rerun would restore the
same bad bytes (issue 26). Each entry stores the sha256 of its files
(`<key>.sha256.json`); a cache hit copies the entry to a temporary file next to the
output, checks the copy's sha256 and only then renames it into place. An entry
that is incomplete, unreadable or fails the check is dropped (logged, naming
it) and its work recomputed.
Only the newest entry per (explainer, job) is kept. Deleting the folder, or
FUD_NO_CACHE=1, makes every job recompute.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Optional

from fudbench.core.fingerprint import file_sha256, fingerprint

_LIBRARY = Path(__file__).resolve().parents[1]  # src/fudbench: the whole library
DIGESTS = ".sha256.json"  # suffix of an entry's digest file: {file suffix: sha256}
log = logging.getLogger(__name__)


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
    return fingerprint(
        {
            "settings": settings,
            "library": library_digest(),
            "files": {k: (digest_of(v) if v else None) for k, v in sorted(files.items())},
        }
    )[:20]


class WorkCache:
    """Files of finished work under `root`, one folder per unit name.

    get(name, key, suffixes) -> {suffix: cached path} or None;
    put(name, key, {suffix: finished output}) copies the outputs in, with their sha256;
    restore(cached, outputs) -> True if every cached file passed its check and
    was copied to its output, else False (the entry was dropped: recompute).
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
        if not all(p.is_file() for p in paths.values()):
            return None
        if not (self.root / name / f"{key}{DIGESTS}").is_file():  # half-written, or from an older version
            self._drop(paths, "it has no digest file")
            return None
        return paths

    def put(self, name: str, key: str, outputs: Mapping[str, str]) -> None:
        if not self.enabled:
            return
        folder = self.root / name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():  # older keys of the same unit are stale now
            if not old.name.startswith(key):
                old.unlink(missing_ok=True)
        (folder / f"{key}{DIGESTS}").unlink(missing_ok=True)  # the entry is valid again only once complete
        digests = {}
        for suffix, src in outputs.items():
            tmp = folder / f".{key}{suffix}.part"
            shutil.copyfile(src, tmp)  # a copy, never a link: damage to the output must not reach the entry
            digests[suffix] = file_sha256(tmp)
            os.replace(tmp, folder / f"{key}{suffix}")
        tmp = folder / f".{key}{DIGESTS}.part"
        tmp.write_text(json.dumps(digests, sort_keys=True))
        os.replace(tmp, folder / f"{key}{DIGESTS}")

    def restore(self, cached: Mapping[str, Path], outputs: Mapping[str, str]) -> bool:
        """Copy cached files to the job's output paths, each checked against the
        sha256 stored with the entry before it is renamed into place. Copies,
        not links: an output must be newer than the job's inputs (Snakemake's
        mtime trigger) and must not share its inode with the entry. Returns
        False, writing no output, and drops the entry if a file cannot be read
        or fails its check."""
        tmps = {}
        try:
            try:
                stored = json.loads(Path(_entry(cached) + DIGESTS).read_text())
                for suffix, dst in outputs.items():
                    Path(dst).parent.mkdir(parents=True, exist_ok=True)
                    tmps[suffix] = Path(dst).with_name(f".{Path(dst).name}.part")
                    shutil.copyfile(cached[suffix], tmps[suffix])
                    if file_sha256(tmps[suffix]) != stored.get(suffix):
                        self._drop(cached, f"{cached[suffix]} does not match the sha256 stored when it was written")
                        return False
            except (OSError, ValueError, AttributeError) as exc:  # unreadable, or a damaged digest file
                self._drop(cached, f"it could not be read ({type(exc).__name__}: {exc})")
                return False
            for suffix, dst in outputs.items():
                os.replace(tmps.pop(suffix), dst)
            return True
        finally:
            for tmp in tmps.values():
                tmp.unlink(missing_ok=True)

    def _drop(self, paths: Mapping[str, Path], why: str) -> None:
        entry = _entry(paths)
        log.warning(
            "work cache entry %s (%s) dropped: %s; recomputing its work", entry, ", ".join([*paths, DIGESTS]), why
        )
        for p in [*paths.values(), entry + DIGESTS]:
            try:
                Path(p).unlink(missing_ok=True)
            except OSError:  # e.g. a read-only cache: the entry stays, but is never restored unchecked
                pass


def _entry(paths: Mapping[str, Path]) -> str:
    """The common stem of an entry's files: <root>/<name>/<key>."""
    suffix, path = next(iter(paths.items()))
    return str(path)[: -len(suffix)]
