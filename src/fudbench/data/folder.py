"""Your own images (`data.source: folder`): image files under `root` and a CSV
naming each one's class (docs/your_own.md).

The labels file has a header with the columns `file,label` (other columns are
ignored): `file` relative to `root` (an absolute path or one leading out of
`root` is refused, naming the row), `label` an integer class index of the
classifiers (the logit it selects). The evaluated images are the first n_eval
files in sorted file order: to evaluate another subset, list only it.

Reading and preprocessing are the ImageNet path's (fudbench.data.imagenet):
converted to RGB (counted), shorter side resized to `resize` (bilinear,
antialiased), centre-cropped to `crop`, stored as uint8 in the same eval npz,
with zero masks and `has_masks` False (no ground truth), unless `masks` names a
folder of object masks (one PNG per image, resized and cropped as the image):
then they are stored with `has_masks` True and the ground-truth explainers run.

Checks come in two steps: `folder_problems` at parse time (paths, the labels
file, n_eval; reads no image), `image_problems` before any job of a real run
(decodes the evaluated images, so a corrupt file is named before the first job).
"""
from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from pathlib import Path

import numpy as np

from fudbench.data.imagenet import CorruptImageError, load_rgb, mode_stats, read_image
from fudbench.paths import resolve_path

log = logging.getLogger(__name__)

DOCS = "docs/your_own.md"
COLUMNS = ("file", "label")
MAX_LISTED = 10  # bad rows quoted in one error


class FolderDataError(ValueError):
    """The image folder or its labels file cannot be used; the message names the file and the fix."""


def resolved_folder(cfg: dict, repo=None) -> dict:
    """`data.folder` with root, labels and masks resolved like every config path (relative: to `repo`)."""
    return {**cfg, **{k: str(resolve_path(cfg[k], repo)) for k in ("root", "labels", "masks") if cfg.get(k)}}


def mask_file(cfg: dict, file: str) -> Path:
    """The object mask of image `file` (data.folder.masks resolved): <masks>/<file with .png>."""
    return Path(cfg["masks"]) / Path(file).with_suffix(".png")


def read_mask(path, size: tuple[int, int], resize: int, crop: int) -> np.ndarray:
    """A mask file as stored in the eval npz: (crop, crop) uint8, 1 = object. It must have
    the image's `size` (w, h); it is resized (nearest) and centre-cropped as the image is."""
    import torchvision.transforms.functional as TF
    from PIL import Image
    from torchvision.transforms import InterpolationMode

    try:
        with Image.open(path) as im:
            mask = im.convert("L")
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError ... for broken files
        raise CorruptImageError(f"{path}: cannot decode the mask ({type(exc).__name__}: {exc})") from exc
    if mask.size != tuple(size):
        raise CorruptImageError(f"{path}: the mask is {mask.size[0]}x{mask.size[1]}, its image {size[0]}x{size[1]}; "
                                f"draw it on the image's pixels")
    mask = TF.center_crop(TF.resize(mask, [resize], interpolation=InterpolationMode.NEAREST), [crop, crop])
    return (np.asarray(mask) > 0).astype(np.uint8)


def _row_problem(line: int, file: str, label: str, seen: dict, root: Path) -> str | None:
    """What is wrong with one row of the labels file (None: nothing)."""
    if not file:
        return f"line {line}: no file name"
    if file in seen:
        return f"line {line}: {file} is listed twice (first on line {seen[file]})"
    try:
        value = int(label)
    except (TypeError, ValueError):
        return f"line {line}: label {label!r} of {file} is not an integer class index"
    if value < 0:
        return f"line {line}: label {value} of {file} is negative; labels are class indices 0, 1, ..."
    if os.path.isabs(file) or file == ".." or file.startswith(".." + os.sep):  # file is normalised
        where = "is an absolute path" if os.path.isabs(file) else "leads out of data.folder.root"
        return (f"line {line}: {file} {where}; list each image by its path relative to data.folder.root {root} "
                f"(move or link images from elsewhere into it)")
    if not (root / file).is_file():
        return f"line {line}: {file} is not a file under {root}"
    return None


def read_labels(root, labels) -> list[tuple[str, int]]:
    """The (file, label) rows of the labels file, sorted by file. Raises
    FolderDataError naming a missing folder or file, or listing every bad row."""
    root, labels = Path(root), Path(labels)
    if not root.is_dir():
        raise FolderDataError(f"config key 'data.folder.root': {root} is not a directory; point it at the folder "
                              f"of your images (see {DOCS})")
    if not labels.is_file():
        raise FolderDataError(f"config key 'data.folder.labels': {labels} does not exist; write a CSV with the "
                              f"columns file,label (see {DOCS})")
    with open(labels, newline="", encoding="utf-8-sig") as fh:  # -sig: spreadsheets write a byte-order mark
        reader = csv.DictReader(fh)
        if not set(COLUMNS) <= set(reader.fieldnames or ()):
            raise FolderDataError(f"{labels} (config key 'data.folder.labels'): expected a header with the "
                                  f"columns {','.join(COLUMNS)}, found {reader.fieldnames}")
        rows = [(reader.line_num, os.path.normpath(r["file"].strip()) if r["file"] else "", r["label"])
                for r in reader]
    entries, problems, seen = [], [], {}
    for line, file, label in rows:
        problem = _row_problem(line, file, label, seen, root)
        seen.setdefault(file, line)
        if problem:
            problems.append(problem)
        else:
            entries.append((file, int(label)))
    if problems:
        more = f"\n    ... and {len(problems) - MAX_LISTED} more" if len(problems) > MAX_LISTED else ""
        raise FolderDataError(f"{labels} (config key 'data.folder.labels'): {len(problems)} bad row(s); fix or "
                              f"remove them:\n    " + "\n    ".join(problems[:MAX_LISTED]) + more)
    if not entries:
        raise FolderDataError(f"{labels} (config key 'data.folder.labels') lists no images")
    return sorted(entries)


def evaluated_files(cfg: dict, n_eval: int) -> list[tuple[str, int]]:
    """The first n_eval (file, label) rows in file order (`data.folder`, paths resolved)."""
    entries = read_labels(cfg["root"], cfg["labels"])
    if n_eval > len(entries):
        raise FolderDataError(f"config key 'data.n_eval': {n_eval} exceeds the {len(entries)} images listed in "
                              f"{cfg['labels']}; lower n_eval or list more images")
    return entries[:n_eval]


def folder_problems(cfg: dict, n_eval: int) -> list[str]:
    """Parse-time checks of `data.folder` (paths resolved): sizes, folder, labels
    file, every listed file present, n_eval. Reads the labels file, no image."""
    problems = []
    if cfg["resize"] < cfg["crop"]:
        problems.append(f"config key 'data.folder.resize': {cfg['resize']} must be >= data.folder.crop = "
                        f"{cfg['crop']} (shorter side resized, then centre-cropped)")
    try:
        files = evaluated_files(cfg, n_eval)
    except FolderDataError as exc:
        return [*problems, str(exc)]
    if cfg.get("masks"):
        if not Path(cfg["masks"]).is_dir():
            return [*problems, f"config key 'data.folder.masks': {cfg['masks']} is not a directory; point it at "
                               f"the folder of your object masks or set it to null (see {DOCS})"]
        missing = [str(mask_file(cfg, f)) for f, _ in files if not mask_file(cfg, f).is_file()]
        if missing:
            more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
            problems.append(f"config key 'data.folder.masks': no mask for {len(missing)} evaluated image(s): "
                            f"{', '.join(missing[:MAX_LISTED])}{more}; each image <file> needs <masks>/<file with "
                            f".png> (see {DOCS})")
    return problems


def image_problems(cfg: dict, n_eval: int) -> list[str]:
    """Decode the evaluated images (the asset check, before any job): one problem per unreadable file."""
    problems = []
    for file, _ in evaluated_files(cfg, n_eval):
        try:
            img, _ = load_rgb(Path(cfg["root"]) / file)
            if cfg.get("masks"):
                read_mask(mask_file(cfg, file), img.size, cfg["resize"], cfg["crop"])
        except CorruptImageError as exc:
            problems.append(f"{exc}; replace the file or remove its row from {cfg['labels']}")
    return problems


def build_eval_set(cfg: dict, n_eval: int) -> dict:
    """Read and preprocess the evaluated images (`data.folder`, paths resolved).
    Returns what fudbench.data.imagenet.write_eval_set writes: images (uint8
    N,3,crop,crop), labels (int64), manifest rows, stats and class names (the
    indices: the folder names no classes)."""
    files = evaluated_files(cfg, n_eval)
    images = np.empty((n_eval, 3, cfg["crop"], cfg["crop"]), dtype=np.uint8)
    masks = np.zeros((n_eval, cfg["crop"], cfg["crop"]), dtype=np.uint8) if cfg.get("masks") else None
    rows, modes = [], Counter()
    for i, (file, label) in enumerate(files):
        try:
            images[i], info = read_image(Path(cfg["root"]) / file, cfg["resize"], cfg["crop"], modes)
            if masks is not None:
                masks[i] = read_mask(mask_file(cfg, file), (info["width"], info["height"]), cfg["resize"],
                                     cfg["crop"])
        except CorruptImageError as exc:
            raise CorruptImageError(f"{exc}; replace the file or remove its row from {cfg['labels']}") from exc
        rows.append({"id": i, "file": file, "label": label, **info})
    labels = np.array([r["label"] for r in rows], dtype=np.int64)
    stats = {"root": str(cfg["root"]), "labels": str(cfg["labels"]), **mode_stats(modes)}
    log.info("image folder %s: %d images read; converted to RGB: %s", cfg["root"], n_eval,
             {k: v for k, v in modes.items() if k != "RGB"} or "none")
    out = {"images": images, "labels": labels, "manifest": rows, "stats": stats,
           "class_names": [str(c) for c in range(int(labels.max()) + 1)]}
    return out if masks is None else {**out, "masks": masks}
