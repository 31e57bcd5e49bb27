"""External assets of a run (ImageNet, pretrained weights, the diffusion checkpoint),
checked once before any job starts.

The Snakefile calls `check_assets` from its `onstart:` handler, which Snakemake
runs only for real runs with jobs to do, so `snakemake -n` builds the DAG
whether or not the assets are there. Every problem is reported at once, each
with the config key, the path looked at and the command that fetches it.
Checksums of large files are remembered by (path, size, mtime) in a small
cache file, so a rerun does not hash 2.2 GB again.

Also a command-line tool:  python -m fudbench.assets.check config/paper.yaml
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from fudbench.config.validate import score_model_users
from fudbench.data.folder import resolved_folder
from fudbench.models import torchvision_models as tvm
from fudbench.models.imported import is_imported, resolved_entry
from fudbench.models.guided_diffusion import ADM256_URL
from fudbench.core.paths import resolve_path

DOCS = "docs/paper_profile.md"
IMAGENET_HOWTO = (
    "ImageNet needs a free account: download ILSVRC2012_img_val.tar (6.3 GB) and "
    "ILSVRC2012_devkit_t12.tar.gz from https://image-net.org/download-images, then\n"
    "    mkdir -p val && tar -xf ILSVRC2012_img_val.tar -C val && tar -xzf ILSVRC2012_devkit_t12.tar.gz\n"
    "and set data.imagenet.root: <...>/val, data.imagenet.labels: <...>/ILSVRC2012_devkit_t12; or use Kaggle's "
    "copy (kaggle competitions download -c imagenet-object-localization-challenge): root "
    f"ILSVRC/Data/CLS-LOC/val, labels LOC_val_solution.csv (see {DOCS})"
)


FOLDER_HOWTO = "see docs/your_own.md, 'Your own images'"


class AssetError(RuntimeError):
    """One or more assets are missing or wrong; the message lists each with its fix."""


@dataclass
class Asset:
    name: str  # what it is, for messages
    key: str  # the config key that locates it
    path: Path | None
    fetch: str  # how to get it
    kind: str = "file"  # file | dir
    sha256: str | None = None  # full digest to match
    sha256_prefix: str | None = None  # or a prefix of it (torchvision file names)
    record_digest: bool = False  # no checksum configured: print the file's, to be recorded


def present(*paths) -> list[str]:
    """The paths that exist: rules list external assets as inputs only when present,
    so a dry-run builds the DAG without them (check_assets names the missing ones)."""
    return [str(p) for p in paths if p and Path(p).exists()]


def resolved_imagenet(cfg: dict, repo) -> dict:
    """data.imagenet with its paths resolved."""
    return {
        **cfg,
        **{k: (str(resolve_path(cfg.get(k), repo)) if cfg.get(k) else None) for k in ("root", "labels", "synsets")},
    }


def resolved_classifier(cfg: dict, repo) -> dict:
    """A classifier entry as jobs get it: its files as absolute paths."""
    if is_imported(cfg["arch"]):
        return resolved_entry(cfg, repo)
    return {**cfg, "path": str(resolve_path(cfg["path"], repo))} if cfg.get("path") else dict(cfg)


def classifier_weights(cfg: dict) -> Path | None:
    """The weights file a pretrained classifier entry (resolved) reads, None if none."""
    if is_imported(cfg["arch"]):
        return Path(cfg["weights"]) if cfg.get("weights") else None
    return tvm.weights_path(cfg)


def gd_fetch_command(path: Path, url: str = ADM256_URL) -> str:
    return f"mkdir -p {path.parent} && curl -L -o {path} {url}"


def required_assets(config: dict, repo) -> list[Asset]:
    """The external files the rules of this run read: the images, the pretrained
    classifiers' weights, and the guided-diffusion checkpoint only when an
    evaluator reads the score model."""
    out = []
    data = config["data"]
    if data["source"] == "imagenet":
        im = data["imagenet"]
        out.append(
            Asset(
                "ImageNet validation images",
                "data.imagenet.root",
                resolve_path(im.get("root"), repo),
                IMAGENET_HOWTO,
                kind="dir",
            )
        )
        for k in ("labels", "synsets"):
            if im.get(k):
                out.append(
                    Asset(
                        f"ImageNet {k} file",
                        f"data.imagenet.{k}",
                        resolve_path(im[k], repo),
                        IMAGENET_HOWTO,
                        kind="any",
                    )
                )
    if data["source"] == "folder":
        folder = resolved_folder(data["folder"], repo)
        out.append(Asset("your images", "data.folder.root", Path(folder["root"]), FOLDER_HOWTO, kind="dir"))
        out.append(Asset("your images' labels file", "data.folder.labels", Path(folder["labels"]), FOLDER_HOWTO))
    for name, c in config["models"]["classifiers"].items():
        if tvm.is_torchvision(c["arch"]):
            c = resolved_classifier(c, repo)
            want, full = tvm.expected_digest(c)
            out.append(
                Asset(
                    f"weights of classifier {name!r} ({c['arch']}, {c['weights']})",
                    f"models.classifiers.{name}.path",
                    tvm.weights_path(c),
                    tvm.fetch_command(c),
                    sha256=want if full else None,
                    sha256_prefix=None if full else want,
                )
            )
    # The diffusion checkpoint only where an evaluator of the run reads the score model
    # (FUD, its variants, diffusion fills): the rules that read it exist only then.
    score = config["models"].get("score_model") if score_model_users(config, repo) else None
    if score and score["source"] == "guided_diffusion":
        gd = score["guided_diffusion"]
        path = resolve_path(gd["checkpoint"], repo)
        out.append(
            Asset(
                "guided-diffusion 256x256_diffusion_uncond.pt",
                "models.score_model.guided_diffusion.checkpoint",
                path,
                gd_fetch_command(path, gd.get("url", ADM256_URL)),
                sha256=gd.get("sha256"),
                record_digest=not gd.get("sha256"),
            )
        )
    return out


class DigestCache:
    """sha256 of files keyed by (path, size, mtime_ns), kept in a JSON file."""

    def __init__(self, path=None):
        self.path = Path(path) if path else None
        self.entries = {}
        if self.path and self.path.is_file():
            try:
                self.entries = json.loads(self.path.read_text())
            except ValueError:
                self.entries = {}

    def digest(self, file: Path) -> str:
        from fudbench.core.fingerprint import file_sha256

        st = file.stat()
        key = str(file.resolve())
        hit = self.entries.get(key)
        if hit and hit["size"] == st.st_size and hit["mtime_ns"] == st.st_mtime_ns:
            return hit["sha256"]
        digest = file_sha256(file)
        self.entries[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
        if self.path:
            from fudbench.core.io import write_json

            write_json(self.path, self.entries)
        return digest


def _problem(asset: Asset, cache: DigestCache, notes: list[str]) -> str | None:
    p = asset.path
    if p is None:
        return f"{asset.name}: config key '{asset.key}' is not set. {asset.fetch}"
    if not p.exists():
        return f"{asset.name}: {p} does not exist (config key '{asset.key}'). Get it with:\n    {asset.fetch}"
    if asset.kind == "dir":
        if not p.is_dir():
            return f"{asset.name}: {p} is not a directory (config key '{asset.key}')"
        if not any(q for q in p.iterdir() if not q.name.startswith(".")):
            return f"{asset.name}: {p} is empty (config key '{asset.key}'). {asset.fetch}"
        return None
    if asset.kind == "file" and not p.is_file():
        return f"{asset.name}: {p} is not a file (config key '{asset.key}')"
    if asset.kind == "file" and (asset.sha256 or asset.sha256_prefix or asset.record_digest):
        digest = cache.digest(p)
        if asset.sha256 and digest != asset.sha256:
            return (
                f"{asset.name}: checksum mismatch for {p}: sha256 {digest}, expected {asset.sha256}; the file "
                f"is corrupt, truncated or another file: delete it and fetch it again with:\n    {asset.fetch}"
            )
        if asset.sha256_prefix and not digest.startswith(asset.sha256_prefix):
            return (
                f"{asset.name}: checksum mismatch for {p}: sha256 {digest} does not start with "
                f"{asset.sha256_prefix} (torchvision's file name); delete it and fetch it again with:\n"
                f"    {asset.fetch}"
            )
        if asset.record_digest:
            notes.append(
                f"{asset.name}: no sha256 in config ({asset.key.rsplit('.', 1)[0]}.sha256); this file's "
                f"is {digest}: record it there so later runs verify it"
            )
    return None


def check_imagenet_layout(config: dict, repo) -> str | None:
    """Index the ImageNet folder (cheap: lists files, reads label files) so a wrong
    layout stops the run before any job, not in the first one."""
    from fudbench.data.imagenet import ImageNetLayoutError, index_imagenet

    im = resolved_imagenet(config["data"]["imagenet"], repo)
    try:
        index = index_imagenet(
            im["root"], im.get("layout", "auto"), im.get("labels"), im.get("synsets"), class_names=False
        )
    except ImageNetLayoutError as exc:
        return f"ImageNet validation images: {exc}"
    if len(index.entries) < config["data"]["n_eval"]:
        return (
            f"ImageNet validation images: {im['root']} has {len(index.entries)} images, "
            f"config key 'data.n_eval' asks for {config['data']['n_eval']}"
        )
    return None


def check_folder_images(config: dict, repo) -> list[str]:
    """Decode the evaluated images of data.folder (the config check read the labels
    file only), so a corrupt file stops the run before any job, named."""
    from fudbench.data.folder import FolderDataError, image_problems

    try:
        return [
            f"your images: {p}"
            for p in image_problems(resolved_folder(config["data"]["folder"], repo), config["data"]["n_eval"])
        ]
    except FolderDataError as exc:  # the labels file changed since the config was checked
        return [f"your images: {exc}"]


def check_assets(config: dict, repo, cache_file=None) -> list[str]:
    """Raise AssetError listing every missing or wrong asset; returns notes (e.g.
    checksums to record in config)."""
    cache, notes, problems = DigestCache(cache_file), [], []
    for asset in required_assets(config, repo):
        problem = _problem(asset, cache, notes)
        if problem:
            problems.append(problem)
    if config["data"]["source"] == "imagenet" and not any(p.startswith("ImageNet") for p in problems):
        layout = check_imagenet_layout(config, repo)
        if layout:
            problems.append(layout)
    if config["data"]["source"] == "folder" and not any(p.startswith("your images") for p in problems):
        problems += check_folder_images(config, repo)
    if problems:
        raise AssetError(f"{len(problems)} asset problem(s); nothing was run:\n- " + "\n- ".join(problems))
    return notes


def main(argv=None) -> int:
    import argparse

    from fudbench.config.validate import load_config

    ap = argparse.ArgumentParser(description="Check (and say how to fetch) the assets a config needs.")
    ap.add_argument("config", help="config file, e.g. config/paper.yaml")
    ap.add_argument("--repo", default=Path(__file__).resolve().parents[3], help="repository root")
    args = ap.parse_args(argv)
    config = load_config(args.config, Path(args.repo) / "config/schema.yaml")
    for a in required_assets(config, args.repo):
        state = "present" if a.path is not None and a.path.exists() else "MISSING"
        print(f"[{state}] {a.name}\n    {a.key}: {a.path}\n    fetch: {a.fetch}")
    try:
        notes = check_assets(config, args.repo)
    except AssetError as exc:
        print(f"\n{exc}")
        return 1
    for n in notes:
        print(f"note: {n}")
    print("all assets present and verified")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
