"""Your own images (`data.source: folder`): image files under `root` and a CSV
naming each one's class (docs/your_own.md).

The labels file has a header with the columns `file,label` (other columns are
ignored): `file` relative to `root` (an absolute path or one leading out of
`root` is refused, naming the row), `label` an integer class index of the
classifiers (the logit it selects). The evaluated images are the first n_eval
files in sorted file order: to evaluate another subset, list only it.

Reading and preprocessing are the ImageNet path's (fudbench.data.imagenet):
converted to RGB so that the pixels keep their meaning (16-bit scaled, not
clipped; the modes that cannot be are refused: imagenet.decode_rgb), turned
upright by the EXIF orientation (folder data only: ImageNet is read as
torchvision reads it), shorter side resized to `resize` (bilinear,
antialiased), centre-cropped to `crop`, stored as uint8 in the same eval npz,
with zero masks and `has_masks` False (no ground truth), unless `masks` names a
folder of object masks (one PNG per image, resized and cropped as the image):
then they are stored with `has_masks` True and the ground-truth explainers run.
What is converted and what refused: docs/your_own.md, "What folder data accepts".

Checks come in two steps: `folder_problems` at parse time (paths, the labels
file, n_eval, one mask per image; reads no image), `image_problems` before any
job of a real run (decodes the evaluated images and their masks as
`build_eval_set` does, so a corrupt, unsupported or too small file, or an empty
mask, is named before the first job).
"""

from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from pathlib import Path

import numpy as np

from fudbench.data.imagenet import (
    CorruptImageError,
    UnsupportedImageError,
    decode_rgb,
    mode_stats,
    note_conversion,
    preprocess,
)
from fudbench.core.paths import resolve_path

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
    """The object mask of image `file` (data.folder.masks resolved): <masks>/<file with .png>
    (or .PNG where only that exists)."""
    path = Path(cfg["masks"]) / Path(file).with_suffix(".png")
    upper = path.with_suffix(".PNG")
    return upper if not path.is_file() and upper.is_file() else path


LOSSY = ("JPEG", "MPO", "WEBP")  # formats whose compression noise turns background pixels non-zero


class MaskError(UnsupportedImageError):
    """A mask that decodes but cannot say which pixels are the object."""


def _mask_pixels(path) -> tuple[np.ndarray, str]:
    """(bool (h, w), where the object was read from): non-zero pixels are the object;
    a mask whose alpha channel varies is read from the alpha channel (a cut-out: the
    object opaque, the rest transparent), unless its colours mark another object."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im.load()
            mode = im.mode
            if im.format in LOSSY:
                raise MaskError(
                    f"{path}: the mask is a {im.format} file: its compression noise makes background "
                    f"pixels non-zero (= object); save the mask as PNG"
                )
            if mode in ("RGBA", "LA", "PA", "RGBa") or (mode == "P" and "transparency" in im.info):
                rgba = np.asarray(im.convert("RGBA"))
                colour, alpha = rgba[..., :3].any(-1), rgba[..., 3]
            elif mode in ("I", "F") or mode.startswith("I;16"):
                values = np.asarray(im, dtype=np.float64)
                if not np.isfinite(values).all():
                    raise MaskError(
                        f"{path}: the mask has NaN or inf pixels; save it as an 8-bit PNG (non-zero pixels = object)"
                    )
                colour, alpha = values != 0, None
            else:
                colour, alpha = np.asarray(im.convert("RGB")).any(-1), None
    except MaskError:
        raise
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError ... for broken files
        raise CorruptImageError(f"{path}: cannot decode the mask ({type(exc).__name__}: {exc})") from exc
    if alpha is None or alpha.min() == alpha.max():  # no alpha, or one without information
        return colour, "colour"
    opaque = alpha > 0
    if colour.all() or not colour.any() or np.array_equal(colour, opaque):
        return opaque, "alpha"
    raise MaskError(
        f"{path}: the mask's alpha channel and its colours mark different pixels; save a mask whose "
        f"non-zero pixels are the object (and no transparency), or a cut-out whose opaque pixels are"
    )


def read_mask(path, size: tuple[int, int], resize: int, crop: int, stored_size=None) -> np.ndarray:
    """A mask file as stored in the eval npz: (crop, crop) uint8, 1 = object. It must have
    the image's `size` (w, h, as evaluated: turned by its EXIF orientation; `stored_size`:
    its stored pixels', named in the error when the mask has them); it is resized
    (nearest) and centre-cropped as the image is. An empty mask, or one whose object
    lies outside the centre crop, is refused (MaskError): the ground-truth explainers
    and metrics would rank a mask without object."""
    import torchvision.transforms.functional as TF
    from PIL import Image
    from torchvision.transforms import InterpolationMode

    pixels, source = _mask_pixels(path)
    h, w = pixels.shape
    if (w, h) != tuple(size):
        turned = (
            "; it has the image's stored size, but the image is evaluated turned by its EXIF orientation: "
            "turn the mask the same way"
            if stored_size is not None and (w, h) == tuple(stored_size) and tuple(stored_size) != tuple(size)
            else ""
        )
        raise MaskError(
            f"{path}: the mask is {w}x{h}, its image {size[0]}x{size[1]}; draw it on the image's pixels{turned}"
        )
    if not pixels.any():
        where = "alpha channel" if source == "alpha" else "pixels"
        raise MaskError(f"{path}: the mask is empty (no non-zero {where}), so the image has no object; draw the object")
    mask = Image.fromarray(pixels.astype(np.uint8) * 255, "L")
    mask = TF.center_crop(TF.resize(mask, [resize], interpolation=InterpolationMode.NEAREST), [crop, crop])
    out = (np.asarray(mask) > 0).astype(np.uint8)
    if not out.any():
        raise MaskError(
            f"{path}: no object pixel is left after the resize to {resize} and the centre crop of "
            f"{crop} (data.folder.resize, crop): the object lies outside the centre crop, or is too small "
            f"to survive the resize; crop the image around the object"
        )
    if out.all():
        log.warning("%s: the object covers the whole %dx%d crop (no background pixel)", path, crop, crop)
    if source == "alpha":
        log.info("%s: the object read from the alpha channel (opaque = object)", path)
    return out


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
        return (
            f"line {line}: {file} {where}; list each image by its path relative to data.folder.root {root} "
            f"(move or link images from elsewhere into it)"
        )
    if not (root / file).is_file():
        return f"line {line}: {file} is not a file under {root}"
    return None


def read_labels(root, labels) -> list[tuple[str, int]]:
    """The (file, label) rows of the labels file, sorted by file. Raises
    FolderDataError naming a missing folder or file, or listing every bad row."""
    root, labels = Path(root), Path(labels)
    if not root.is_dir():
        raise FolderDataError(
            f"config key 'data.folder.root': {root} is not a directory; point it at the folder "
            f"of your images (see {DOCS})"
        )
    if not labels.is_file():
        raise FolderDataError(
            f"config key 'data.folder.labels': {labels} does not exist; write a CSV with the "
            f"columns file,label (see {DOCS})"
        )
    with open(labels, newline="", encoding="utf-8-sig") as fh:  # -sig: spreadsheets write a byte-order mark
        reader = csv.DictReader(fh)
        if not set(COLUMNS) <= set(reader.fieldnames or ()):
            raise FolderDataError(
                f"{labels} (config key 'data.folder.labels'): expected a header with the "
                f"columns {','.join(COLUMNS)}, found {reader.fieldnames}"
            )
        rows = [(reader.line_num, os.path.normpath(r["file"].strip()) if r["file"] else "", r["label"]) for r in reader]
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
        raise FolderDataError(
            f"{labels} (config key 'data.folder.labels'): {len(problems)} bad row(s); fix or "
            f"remove them:\n    " + "\n    ".join(problems[:MAX_LISTED]) + more
        )
    if not entries:
        raise FolderDataError(f"{labels} (config key 'data.folder.labels') lists no images")
    return sorted(entries)


def evaluated_files(cfg: dict, n_eval: int) -> list[tuple[str, int]]:
    """The first n_eval (file, label) rows in file order (`data.folder`, paths resolved)."""
    entries = read_labels(cfg["root"], cfg["labels"])
    if n_eval > len(entries):
        raise FolderDataError(
            f"config key 'data.n_eval': {n_eval} exceeds the {len(entries)} images listed in "
            f"{cfg['labels']}; lower n_eval or list more images"
        )
    return entries[:n_eval]


def mask_problems(cfg: dict, files: list[tuple[str, int]]) -> list[str]:
    """The parse-time problems of `data.folder.masks` for the evaluated `files` (no image read):
    each image has its own mask file, which is not an image of the run itself."""
    if not Path(cfg["masks"]).is_dir():
        return [
            f"config key 'data.folder.masks': {cfg['masks']} is not a directory; point it at the folder of "
            f"your object masks or set it to null (see {DOCS})"
        ]
    problems, owners = [], {}
    for file, _ in files:
        owners.setdefault(mask_file(cfg, file), []).append(file)
    shared = [f"{' and '.join(fs)} share the mask {m}" for m, fs in owners.items() if len(fs) > 1]
    if shared:
        problems.append(
            f"config key 'data.folder.masks': one mask per image, but {'; '.join(shared[:MAX_LISTED])}"
            f"; rename the images so that no two have the same name before the extension (see {DOCS})"
        )
    images = {os.path.realpath(Path(cfg["root"]) / f) for f, _ in files}
    own = [str(m) for m in owners if os.path.realpath(m) in images]
    if own:
        problems.append(
            f"config key 'data.folder.masks': {', '.join(own[:MAX_LISTED])} would be both an evaluated "
            f"image and its own mask; keep the masks in a folder of their own"
        )
    both = [
        str(m)
        for m in owners
        if m.suffix == ".png"
        and m.is_file()
        and m.with_suffix(".PNG").is_file()
        and not os.path.samefile(m, m.with_suffix(".PNG"))
    ]
    if both:
        problems.append(
            f"config key 'data.folder.masks': both <name>.png and <name>.PNG exist for "
            f"{', '.join(both[:MAX_LISTED])}; keep one"
        )
    missing = [str(m) for m in owners if not m.is_file()]
    if missing:
        more = f" and {len(missing) - MAX_LISTED} more" if len(missing) > MAX_LISTED else ""
        problems.append(
            f"config key 'data.folder.masks': no mask for {len(missing)} evaluated image(s): "
            f"{', '.join(missing[:MAX_LISTED])}{more}; each image <file> needs <masks>/<file with "
            f".png> (see {DOCS})"
        )
    return problems


def same_files(cfg: dict, files: list[tuple[str, int]]) -> list[str]:
    """Rows of `files` that are one file under two names (a link): it would be evaluated twice."""
    seen: dict[str, str] = {}
    out = []
    for file, _ in files:
        real = os.path.realpath(Path(cfg["root"]) / file)
        if real in seen:
            out.append(f"{seen[real]} and {file} are the same file ({real})")
        seen.setdefault(real, file)
    return out


def folder_problems(cfg: dict, n_eval: int) -> list[str]:
    """Parse-time checks of `data.folder` (paths resolved): sizes, folder, labels
    file, every listed file present, n_eval, one file per evaluated row, one mask
    per evaluated image. Reads the labels file, no image."""
    problems = []
    if cfg["resize"] < cfg["crop"]:
        problems.append(
            f"config key 'data.folder.resize': {cfg['resize']} must be >= data.folder.crop = "
            f"{cfg['crop']} (shorter side resized, then centre-cropped)"
        )
    try:
        files = evaluated_files(cfg, n_eval)
    except FolderDataError as exc:
        return [*problems, str(exc)]
    twice = same_files(cfg, files)
    if twice:
        problems.append(
            f"{cfg['labels']} (config key 'data.folder.labels'): {'; '.join(twice[:MAX_LISTED])}: it "
            f"would be evaluated twice; list it once"
        )
    if cfg.get("masks"):
        problems += mask_problems(cfg, files)
    return problems


def read_entry(
    cfg: dict, file: str, modes: Counter, kinds: Counter | None = None, image: bool = True
) -> tuple[np.ndarray | None, np.ndarray | None, dict]:
    """One evaluated image (and its mask) as stored in the eval npz: (uint8 (3, crop, crop),
    or None with image=False: decoded and checked, not resized (no torchvision import);
    uint8 (crop, crop) or None without masks; the manifest's mode, width, height and
    conversion). Raises CorruptImageError (UnsupportedImageError, MaskError) naming the file."""
    path = Path(cfg["root"]) / file
    decoded = decode_rgb(path, exif=True)
    conversion = note_conversion(path, decoded, modes, kinds)
    img = decoded.image
    mask = (
        read_mask(mask_file(cfg, file), img.size, cfg["resize"], cfg["crop"], decoded.stored_size)
        if cfg.get("masks")
        else None
    )
    arrays = preprocess(img, cfg["resize"], cfg["crop"]) if image else None
    return arrays, mask, {"mode": decoded.mode, "width": img.width, "height": img.height, "conversion": conversion}


def _row_fix(exc: CorruptImageError, labels) -> str:
    """The error with the way out through the labels file (an unsupported file's message has its own fix)."""
    if isinstance(exc, UnsupportedImageError):
        return f"{exc}; or remove its row from {labels}"
    return f"{exc}; replace the file or remove its row from {labels}"


def image_problems(cfg: dict, n_eval: int) -> list[str]:
    """Decode the evaluated images and masks as build_eval_set does (the asset check, before
    any job): one problem per unreadable, unsupported or too small image or bad mask."""
    problems, modes = [], Counter()
    for file, _ in evaluated_files(cfg, n_eval):
        try:
            read_entry(cfg, file, modes, image=False)  # the resize cannot fail: the Snakefile imports no torch
        except CorruptImageError as exc:
            problems.append(_row_fix(exc, cfg["labels"]))
    return problems


def build_eval_set(cfg: dict, n_eval: int) -> dict:
    """Read and preprocess the evaluated images (`data.folder`, paths resolved).
    Returns what fudbench.data.imagenet.write_eval_set writes: images (uint8
    N,3,crop,crop), labels (int64), manifest rows, stats and class names (the
    indices: the folder names no classes)."""
    files = evaluated_files(cfg, n_eval)
    problems = same_files(cfg, files) + (mask_problems(cfg, files) if cfg.get("masks") else [])
    if problems:  # checked at parse time; again here for callers that skip the config (the API, tests)
        raise FolderDataError("; ".join(problems))
    images = np.empty((n_eval, 3, cfg["crop"], cfg["crop"]), dtype=np.uint8)
    masks = np.zeros((n_eval, cfg["crop"], cfg["crop"]), dtype=np.uint8) if cfg.get("masks") else None
    rows, modes, kinds = [], Counter(), Counter()
    for i, (file, label) in enumerate(files):
        try:
            images[i], mask, info = read_entry(cfg, file, modes, kinds)
        except CorruptImageError as exc:
            raise type(exc)(_row_fix(exc, cfg["labels"])) from exc
        if masks is not None:
            masks[i] = mask
        rows.append({"id": i, "file": file, "label": label, **info})
    labels = np.array([r["label"] for r in rows], dtype=np.int64)
    stats = {
        "root": str(cfg["root"]),
        "labels": str(cfg["labels"]),
        **mode_stats(modes),
        "conversions": dict(kinds),
    }  # per kind (16-bit, float, alpha, exif, frames, mode); per file: manifest
    log.info(
        "image folder %s: %d images read; converted to RGB: %s",
        cfg["root"],
        n_eval,
        {k: v for k, v in modes.items() if k != "RGB"} or "none",
    )
    out = {
        "images": images,
        "labels": labels,
        "manifest": rows,
        "stats": stats,
        "class_names": [str(c) for c in range(int(labels.max()) + 1)],
    }
    return out if masks is None else {**out, "masks": masks}
