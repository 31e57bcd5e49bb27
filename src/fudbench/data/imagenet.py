"""The paper profile's images: a seeded sample of the ImageNet validation set.

Supported layouts of the 50,000 validation images (`data.imagenet.layout`):

- `folders`: one folder per WordNet id (root/n01440764/*.JPEG), as made by the
  usual valprep script or torchvision's ImageNet dataset. A folder's class is
  its rank among the 1000 sorted WordNet ids, so either all 1000 folders are
  there or `synsets` names the ids (LOC_synset_mapping.txt).
- `devkit`: a flat folder (ILSVRC2012_val_00000001.JPEG, ...) with the official
  devkit's `ILSVRC2012_validation_ground_truth.txt` (`labels`; line i is the
  ILSVRC2012_ID of image i) and `meta.mat` (`synsets`, default: beside the
  labels file, as in the devkit's data/ folder), which maps those ids to
  WordNet ids.
- `loc`: a flat folder with Kaggle's `LOC_val_solution.csv` (`labels`) and
  `LOC_synset_mapping.txt` (`synsets`, default: beside the csv).

Class indices are always torchvision's: the rank of the WordNet id among the
1000 sorted ids. The sample is drawn from the images sorted by file name, so
the same seed picks the same images in every layout: a seeded permutation of
all images, of which the first n_eval readable ones are kept (a prefix of a
larger sample is a smaller sample).

Preprocessing is torchvision's ImageClassification transform up to the tensor:
resize the shorter side to `resize` (bilinear, antialiased), centre-crop
`crop`, stored as uint8 (values / 255 are exactly what the transform gives
before normalisation; normalisation lives in the classifier wrappers).
Grayscale and CMYK files (ImageNet's validation set has both) are converted to
RGB and counted; an unreadable file is an error naming it, or with
`on_corrupt: replace` is skipped for the next image of the permutation and
reported. The reading, preprocessing and writing (`read_image`, `eval_arrays`,
`write_eval_set`) are shared with your own image folder (fudbench.data.folder).
"""

from __future__ import annotations

import csv
import logging
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = {".jpeg", ".jpg", ".png"}
WNID = re.compile(r"^n\d{8}$")
VAL_NAME = re.compile(r"^ILSVRC2012_val_(\d{8})$")
N_CLASSES = 1000
LAYOUTS = ("auto", "folders", "devkit", "loc")
DOCS = "docs/paper_profile.md"


class ImageNetLayoutError(ValueError):
    """The ImageNet directory or its label files are not in a supported layout."""


class CorruptImageError(ValueError):
    """An image file could not be decoded."""


@dataclass(frozen=True)
class Entry:
    path: Path
    wnid: str
    label: int


@dataclass
class ImageNetIndex:
    layout: str
    root: Path
    entries: list  # [Entry], sorted by file name
    wnids: list  # class index -> WordNet id
    class_names: list  # class index -> short name


# --- label files ------------------------------------------------------------------


def read_synset_mapping(path) -> tuple[list[str], list[str]]:
    """LOC_synset_mapping.txt: 'n01440764 tench, Tinca tinca' per line, in class order."""
    wnids, names = [], []
    for i, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        wnid, _, words = line.strip().partition(" ")
        if not WNID.match(wnid):
            raise ImageNetLayoutError(
                f"{path}, line {i}: {wnid!r} is not a WordNet id (n########); expected "
                f"lines like 'n01440764 tench, Tinca tinca'"
            )
        wnids.append(wnid)
        names.append(words.split(",")[0].strip() or wnid)
    if wnids != sorted(wnids) or len(set(wnids)) != len(wnids):
        raise ImageNetLayoutError(f"{path}: WordNet ids must be unique and sorted (class index = rank)")
    return wnids, names


def read_devkit_meta(path) -> dict[int, tuple[str, str]]:
    """meta.mat of the ILSVRC2012 devkit: ILSVRC2012_ID -> (WordNet id, words), leaves only."""
    from scipy.io import loadmat

    try:
        synsets = loadmat(str(path), squeeze_me=True)["synsets"]
    except Exception as exc:
        raise ImageNetLayoutError(
            f"{path} could not be read as the devkit's meta.mat ({type(exc).__name__}: {exc})"
        ) from exc
    out = {}
    for s in np.atleast_1d(synsets):
        if int(s["num_children"]) == 0:  # the 1000 classes are the leaves of the hierarchy
            out[int(s["ILSVRC2012_ID"])] = (str(s["WNID"]), str(s["words"]))
    return out


def _devkit_files(labels: Path, synsets) -> tuple[Path, Path]:
    if labels.is_dir():  # the devkit folder itself
        for d in (labels / "data", labels):
            if (d / "ILSVRC2012_validation_ground_truth.txt").is_file():
                labels = d / "ILSVRC2012_validation_ground_truth.txt"
                break
        else:
            raise ImageNetLayoutError(f"no ILSVRC2012_validation_ground_truth.txt in {labels} or {labels}/data")
    meta = Path(synsets) if synsets else labels.parent / "meta.mat"
    if not meta.is_file():
        raise ImageNetLayoutError(
            f"the devkit labels {labels} need the devkit's meta.mat (ILSVRC2012_ID -> "
            f"WordNet id), not found at {meta}; set data.imagenet.synsets to it"
        )
    return labels, meta


# --- discovery ---------------------------------------------------------------------


def _listing(root: Path):
    dirs, images, other = [], [], []
    for p in sorted(root.iterdir()):
        if p.name.startswith("."):
            continue
        if p.is_dir():
            dirs.append(p)
        elif p.suffix.lower() in IMAGE_SUFFIXES:
            images.append(p)
        else:
            other.append(p)
    return dirs, images, other


def _detect(root: Path, labels, dirs, images) -> str:
    if labels:
        return "loc" if Path(labels).suffix.lower() == ".csv" else "devkit"
    if images and not dirs:
        raise ImageNetLayoutError(
            f"{root} holds {len(images)} images directly but no labels file is configured; for a flat "
            f"folder set data.imagenet.labels to the devkit's ILSVRC2012_validation_ground_truth.txt (with "
            f"meta.mat beside it) or Kaggle's LOC_val_solution.csv; or sort the images into one folder per "
            f"WordNet id (see {DOCS})"
        )
    if dirs:
        return "folders"
    raise ImageNetLayoutError(
        f"{root} is empty: no images and no class folders; set data.imagenet.root to the "
        f"ImageNet validation folder (see {DOCS})"
    )


def _class_names_for(wnids: list[str]) -> list[str]:
    """torchvision's category names when the 1000 standard classes are used, else the ids."""
    if len(wnids) == N_CLASSES:
        try:
            from torchvision.models._meta import _IMAGENET_CATEGORIES

            return list(_IMAGENET_CATEGORIES)
        except ImportError:  # pragma: no cover - torchvision is in the torch env
            pass
    return list(wnids)


def _index_folders(root, dirs, images, synsets, n_classes, class_names=True):
    bad = [d.name for d in dirs if not WNID.match(d.name)]
    if bad:
        raise ImageNetLayoutError(
            f"{root}: expected one folder per WordNet id (n01440764, ...), found {', '.join(bad[:5])}"
            f"{' ...' if len(bad) > 5 else ''}; point data.imagenet.root at the validation folder itself"
        )
    if images:
        raise ImageNetLayoutError(
            f"{root} mixes class folders with {len(images)} loose images (e.g. {images[0].name}); use one layout"
        )
    if synsets:
        wnids, names = read_synset_mapping(synsets)
    else:
        wnids = [d.name for d in dirs]
        if n_classes is not None and len(wnids) != n_classes:
            raise ImageNetLayoutError(
                f"{root} has {len(wnids)} class folders, expected {n_classes}: a folder's class index is its "
                f"rank among all {n_classes} sorted WordNet ids, so a partial copy needs data.imagenet.synsets "
                f"(Kaggle's LOC_synset_mapping.txt) to be labelled"
            )
        names = _class_names_for(wnids) if class_names else list(wnids)
    rank = {w: i for i, w in enumerate(wnids)}
    unknown = [d.name for d in dirs if d.name not in rank]
    if unknown:
        raise ImageNetLayoutError(f"{root}: folders {', '.join(unknown[:5])} are not in the class list {synsets}")
    entries = [
        Entry(p, d.name, rank[d.name])
        for d in dirs
        for p in sorted(d.iterdir())
        if p.suffix.lower() in IMAGE_SUFFIXES and not p.name.startswith(".")
    ]
    return entries, wnids, names


def _index_devkit(root, images, labels, synsets):
    labels, meta = _devkit_files(Path(labels), synsets)
    id_to = read_devkit_meta(meta)
    wnids = sorted(w for w, _ in id_to.values())
    rank = {w: i for i, w in enumerate(wnids)}
    words = dict(id_to.values())
    names = [words[w].split(",")[0].strip() for w in wnids]
    truth = [int(v) for v in labels.read_text().split()]
    entries, unmatched = [], []
    for p in images:
        m = VAL_NAME.match(p.stem)
        if not m or not 1 <= int(m.group(1)) <= len(truth) or truth[int(m.group(1)) - 1] not in id_to:
            unmatched.append(p.name)
            continue
        wnid = id_to[truth[int(m.group(1)) - 1]][0]
        entries.append(Entry(p, wnid, rank[wnid]))
    if unmatched:
        raise ImageNetLayoutError(
            f"{root}: {len(unmatched)} image(s) have no label in {labels} (e.g. "
            f"{', '.join(unmatched[:3])}); devkit labels name files ILSVRC2012_val_<8 digits>"
        )
    return entries, wnids, names


def _index_loc(root, images, labels, synsets):
    labels = Path(labels)
    synsets = Path(synsets) if synsets else labels.parent / "LOC_synset_mapping.txt"
    if not synsets.is_file():
        raise ImageNetLayoutError(
            f"{labels} needs Kaggle's LOC_synset_mapping.txt for the class order, not "
            f"found at {synsets}; set data.imagenet.synsets to it"
        )
    wnids, names = read_synset_mapping(synsets)
    rank = {w: i for i, w in enumerate(wnids)}
    with open(labels, newline="") as fh:
        reader = csv.DictReader(fh)
        if not {"ImageId", "PredictionString"} <= set(reader.fieldnames or ()):
            raise ImageNetLayoutError(
                f"{labels}: expected the columns ImageId,PredictionString of "
                f"LOC_val_solution.csv, found {reader.fieldnames}"
            )
        truth = {row["ImageId"]: row["PredictionString"].split()[0] for row in reader}
    entries, unmatched = [], []
    for p in images:
        wnid = truth.get(p.stem)
        if wnid not in rank:
            unmatched.append(p.name)
            continue
        entries.append(Entry(p, wnid, rank[wnid]))
    if unmatched:
        raise ImageNetLayoutError(
            f"{root}: {len(unmatched)} image(s) have no label in {labels} (e.g. {', '.join(unmatched[:3])})"
        )
    return entries, wnids, names


def index_imagenet(
    root, layout: str = "auto", labels=None, synsets=None, n_classes: int | None = N_CLASSES, class_names: bool = True
) -> ImageNetIndex:
    """Find the validation images and their classes; errors name the path and the fix.
    n_classes: the number of classes the label files must define (None: any, for tests).
    class_names=False skips looking up torchvision's names (no torch import: the asset check)."""
    if root is None:
        raise ImageNetLayoutError(
            f"config key 'data.imagenet.root' is not set: point it at the ImageNet validation images (see {DOCS})"
        )
    root = Path(root)
    if layout not in LAYOUTS:
        raise ImageNetLayoutError(f"config key 'data.imagenet.layout': {layout!r}; allowed: {', '.join(LAYOUTS)}")
    if not root.is_dir():
        raise ImageNetLayoutError(
            f"ImageNet directory {root} does not exist (config key 'data.imagenet.root'); "
            f"download the ILSVRC2012 validation set and point the key at it (see {DOCS})"
        )
    for key, p in (("labels", labels), ("synsets", synsets)):
        if p is not None and not Path(p).exists():
            raise ImageNetLayoutError(f"config key 'data.imagenet.{key}': {p} does not exist")
    dirs, images, _ = _listing(root)
    layout = _detect(root, labels, dirs, images) if layout == "auto" else layout
    if layout in ("devkit", "loc") and not labels:
        wanted = "ILSVRC2012_validation_ground_truth.txt" if layout == "devkit" else "LOC_val_solution.csv"
        raise ImageNetLayoutError(f"layout {layout!r} needs data.imagenet.labels ({wanted})")
    if layout in ("devkit", "loc") and dirs and not images:
        raise ImageNetLayoutError(
            f"{root} holds folders, not images: layout {layout!r} expects a flat folder of "
            f"images; use layout 'folders' (or auto) for one folder per class"
        )
    if layout == "folders":
        entries, wnids, names = _index_folders(root, dirs, images, synsets, n_classes, class_names)
    elif layout == "devkit":
        entries, wnids, names = _index_devkit(root, images, labels, synsets)
    else:
        entries, wnids, names = _index_loc(root, images, labels, synsets)
    if n_classes is not None and len(wnids) != n_classes:
        raise ImageNetLayoutError(
            f"the class list of {labels or synsets or root} has {len(wnids)} classes, expected {n_classes}"
        )
    if not entries:
        raise ImageNetLayoutError(f"{root} ({layout} layout) contains no images ({', '.join(sorted(IMAGE_SUFFIXES))})")
    entries.sort(key=lambda e: (e.path.name, str(e.path)))
    return ImageNetIndex(layout, root, entries, wnids, names)


# --- decoding and preprocessing --------------------------------------------------------

MIN_SIDE = 8  # px: a smaller image holds too few pixels to be classified or explained
SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N")  # unsigned 16-bit grayscale (PNG, TIFF, PGM)
# modes whose conversion to RGB keeps what the pixels mean, and what is done
PLAIN = {
    "L": "grayscale: replicated to 3 channels",
    "1": "1-bit: black/white to 0/255",
    "P": "palette: colours looked up",
    "CMYK": "CMYK: converted by Pillow's formula (no colour profile)",
    "YCbCr": "YCbCr: converted to RGB",
    "HSV": "HSV: converted to RGB",
    "RGBX": "RGBX: padding dropped",
}
ALPHA = ("RGBA", "LA", "PA", "RGBa")
DOCS_FOLDER = "docs/your_own.md (What folder data accepts)"
# EXIF orientation -> the transposition that shows the image upright (PIL.ImageOps.exif_transpose's table)
EXIF_TURNS = {2: 0, 3: 3, 4: 1, 5: 5, 6: 4, 7: 6, 8: 2}  # Image.Transpose: FLIP_LEFT_RIGHT=0 ... TRANSVERSE=6


class UnsupportedImageError(CorruptImageError):
    """An image that decodes but whose pixels would become wrong numbers (mode, depth, size)."""


@dataclass
class Decoded:
    """A decoded image as RGB, its file's mode and size, and what was done to it:
    notes are (kind, text, warn) with `warn` True where the result is an interpretation."""

    image: object  # PIL RGB image
    mode: str
    stored_size: tuple  # (w, h) of the stored pixels (before an EXIF rotation)
    notes: list


def _raw_mode(im) -> str:
    """The decoder's raw mode of an opened, not yet loaded, image ('' if unknown)."""
    args = im.tile[0].args if getattr(im, "tile", None) else None
    return (
        args
        if isinstance(args, str)
        else args[0]
        if isinstance(args, tuple) and args and isinstance(args[0], str)
        else ""
    )


def _to_rgb(im, path, raw: str) -> tuple[object, list]:
    """(RGB image, notes) of a loaded PIL image; UnsupportedImageError for a mode
    whose conversion would not keep what its pixels mean."""
    from PIL import Image

    mode = im.mode
    if mode == "RGB":
        return im.copy(), (
            [("16-bit", "16 bits per channel reduced to 8 (Pillow keeps the high byte)", False)]
            if raw.startswith(("RGB;16", "RGBA;16"))
            else []
        )
    if mode in SIXTEEN_BIT or (mode == "I" and (im.format == "PPM" or (raw.startswith("I;16") and "S" not in raw))):
        # (a PGM of any maxval > 255 is read scaled to 0..65535.) Pillow's own conversion clips at 255
        # (a 16-bit image turns white): keep the high byte, as Pillow does for 16-bit RGB, so
        # 65535 -> 255 and an 8-bit image stored as v * 257 (or v * 256) stays v
        a = np.asarray(im).astype(np.uint32)
        top = int(a.max())
        if 0 < top <= 255:
            raise UnsupportedImageError(
                f"{path}: a 16-bit grayscale image whose brightest pixel is {top} of 65535 (8-bit values saved "
                f"as 16-bit?): it would be evaluated black; save it as 8-bit, or scale the values by 257"
            )
        notes = [("16-bit", "16-bit grayscale: scaled to 8 bits (value >> 8, 65535 -> 255)", False)]
        if top <= 4095:
            notes.append(
                (
                    "16-bit dark",
                    f"its brightest pixel is {top} of 65535 (12-bit or fewer sensor values?): "
                    f"evaluated nearly black; scale the values to the 16-bit range",
                    True,
                )
            )
        return Image.fromarray((a >> 8).astype(np.uint8), "L").convert("RGB"), notes
    if mode == "I":
        raise UnsupportedImageError(
            f"{path}: 32-bit integer pixels (raw mode {raw or 'unknown'}) have no standard white level; save the "
            f"image as 8- or 16-bit (see {DOCS_FOLDER})"
        )
    if mode == "F":
        a = np.asarray(im, dtype=np.float64)
        if not np.isfinite(a).all():
            raise UnsupportedImageError(
                f"{path}: floating-point pixels include NaN or inf; save the image as 8- or 16-bit (see {DOCS_FOLDER})"
            )
        lo, hi = float(a.min()), float(a.max())
        if lo < 0 or hi > 255:
            raise UnsupportedImageError(
                f"{path}: floating-point pixels range over [{lo:g}, {hi:g}], neither [0, 1] nor [0, 255]; "
                f"rescale them or save the image as 8- or 16-bit (see {DOCS_FOLDER})"
            )
        scale, what = (255.0, "[0, 1]: scaled by 255") if hi <= 1 else (1.0, "[0, 255]: used as 8-bit values")
        return Image.fromarray(np.rint(a * scale).astype(np.uint8), "L").convert("RGB"), [
            ("float", f"floating-point grayscale in {what}", True)
        ]
    if mode in ALPHA or (mode == "P" and "transparency" in im.info):
        alpha = np.asarray(im.convert("RGBA").getchannel("A"))
        clear = float((alpha < 255).mean())
        rgb = (im.convert("RGBA") if mode == "P" else im).convert("RGB")
        if clear == 0:
            return rgb, [("alpha", f"{mode}: opaque alpha channel dropped", False)]
        return rgb, [
            (
                "alpha",
                f"{mode}: alpha channel dropped, {clear:.1%} of the pixels are (partly) transparent "
                f"and keep their stored colours, as torchvision's image loader does",
                True,
            )
        ]
    if mode in PLAIN:
        return im.convert("RGB"), [("mode", PLAIN[mode], False)]
    raise UnsupportedImageError(
        f"{path}: pixel mode {mode} is not supported (raw mode {raw or 'unknown'}); save "
        f"the image as 8-bit RGB or grayscale (see {DOCS_FOLDER})"
    )


def _orientation(im, notes: list) -> int:
    """The EXIF orientation of an opened image (1: upright; unreadable EXIF: 1, noted)."""
    try:
        return int(im.getexif().get(0x0112, 1))
    except Exception as exc:  # a damaged EXIF block does not make the pixels unreadable
        notes.append(("exif", f"EXIF unreadable ({type(exc).__name__}), not turned", True))
        return 1


def decode_rgb(path, exif: bool = False) -> Decoded:
    """Decode an image file to RGB, converting each pixel mode so that its values
    keep their meaning (16-bit scaled, not clipped) and refusing the modes that
    cannot (UnsupportedImageError); exif=True turns it as its EXIF orientation
    says (as image viewers show it). Raises CorruptImageError naming the file."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            raw, frames = _raw_mode(im), getattr(im, "n_frames", 1)
            im.load()
            mode, stored = im.mode, im.size
            rgb, notes = _to_rgb(im, path, raw)
            orientation = _orientation(im, notes) if exif else 1
    except UnsupportedImageError:
        raise
    except Image.UnidentifiedImageError as exc:  # a damaged header, or not a format (or variant) Pillow reads
        raise CorruptImageError(
            f"{path}: cannot decode the image ({type(exc).__name__}: {exc}): not an image "
            f"Pillow reads (a damaged file, or a format or variant it does not decode, such "
            f"as SVG, PDF, HEIC or a floating-point RGB TIFF); save it as PNG or JPEG"
        ) from exc
    except Exception as exc:  # PIL raises OSError, SyntaxError, ValueError ... for broken files
        raise CorruptImageError(f"{path}: cannot decode the image ({type(exc).__name__}: {exc})") from exc
    if frames > 1:
        notes.append(("frames", f"the first of {frames} frames used", True))
    if orientation in EXIF_TURNS:
        rgb = rgb.transpose(EXIF_TURNS[orientation])
        notes.append(
            (
                "exif",
                f"turned by its EXIF orientation {orientation} (as image viewers show it): "
                f"{stored[0]}x{stored[1]} stored, {rgb.width}x{rgb.height} evaluated",
                True,
            )
        )
    if min(rgb.size) < MIN_SIDE:
        raise UnsupportedImageError(
            f"{path}: {rgb.width}x{rgb.height} pixels, too small to classify (at least "
            f"{MIN_SIDE} px per side); use a larger image"
        )
    return Decoded(rgb, mode, stored, notes)


def load_rgb(path, exif: bool = False):
    """(PIL RGB image, the file's original mode) (decode_rgb). Raises CorruptImageError naming the file."""
    decoded = decode_rgb(path, exif)
    return decoded.image, decoded.mode


def note_conversion(path, decoded: Decoded, modes: Counter, kinds: Counter | None = None) -> str:
    """Count the file's mode (and in `kinds` each kind of conversion), log what was done
    to it (a warning where it is an interpretation) and return it as one line for the
    manifest ('' if nothing)."""
    modes[decoded.mode] += 1
    if kinds is not None:
        kinds.update(kind for kind, _, _ in decoded.notes)
    for _, text, warn in decoded.notes:
        (log.warning if warn else log.info)("%s: %s", path, text)
    if decoded.mode != "RGB" and not decoded.notes:
        log.info("converted %s from %s to RGB", path, decoded.mode)
    return "; ".join(text for _, text, _ in decoded.notes)


def preprocess(img, resize: int = 256, crop: int = 224) -> np.ndarray:
    """torchvision's resize (shorter side, bilinear, antialiased) + centre crop -> uint8 (3, crop, crop)."""
    import torchvision.transforms.functional as TF
    from torchvision.transforms import InterpolationMode

    img = TF.center_crop(
        TF.resize(img, [resize], interpolation=InterpolationMode.BILINEAR, antialias=True), [crop, crop]
    )
    return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1).copy()


def read_image(path, resize: int, crop: int, modes: Counter, exif: bool = False) -> tuple[np.ndarray, dict]:
    """One file as stored in the eval npz: decoded and converted to RGB (decode_rgb;
    its original mode counted in `modes`, what was done logged), resized and
    centre-cropped. Returns the uint8 (3, crop, crop) array and the manifest's mode,
    width, height and conversion (what was done to the pixels, '' if nothing)."""
    decoded = decode_rgb(path, exif)
    conversion = note_conversion(path, decoded, modes)
    img = decoded.image
    return preprocess(img, resize, crop), {
        "mode": decoded.mode,
        "width": img.width,
        "height": img.height,
        "conversion": conversion,
    }


def mode_stats(modes: Counter) -> dict:
    return {"modes": dict(modes), "converted_to_rgb": sum(v for k, v in modes.items() if k != "RGB")}


def sample_eval_set(
    index: ImageNetIndex, n_eval: int, seed: int, resize: int = 256, crop: int = 224, on_corrupt: str = "error"
) -> dict:
    """Draw and preprocess n_eval images. Returns images (uint8 N,3,crop,crop),
    labels (int64), manifest rows, and stats (file modes converted, files skipped)."""
    if on_corrupt not in ("error", "replace"):
        raise ValueError(f"config key 'data.imagenet.on_corrupt': {on_corrupt!r}; allowed: 'error', 'replace'")
    if n_eval > len(index.entries):
        raise ImageNetLayoutError(
            f"config key 'data.n_eval': {n_eval} images requested but {index.root} has only {len(index.entries)}"
        )
    order = np.random.default_rng(seed).permutation(len(index.entries))
    images = np.empty((n_eval, 3, crop, crop), dtype=np.uint8)
    rows, modes, skipped = [], Counter(), []
    for j in order:
        if len(rows) == n_eval:
            break
        e = index.entries[int(j)]
        try:
            image, info = read_image(e.path, resize, crop, modes)
        except CorruptImageError as exc:
            if on_corrupt == "error":
                raise CorruptImageError(
                    f"{exc}; delete or replace the file, or set data.imagenet.on_corrupt: "
                    f"replace to draw the next image instead (it is reported)"
                ) from exc
            log.warning("skipped (on_corrupt: replace): %s", exc)
            skipped.append(str(e.path))
            continue
        i = len(rows)
        images[i] = image
        rows.append(
            {
                "id": i,
                "file": str(e.path.relative_to(index.root)),
                "wnid": e.wnid,
                "label": e.label,
                "class_name": index.class_names[e.label],
                **info,
            }
        )
    if len(rows) < n_eval:
        raise ImageNetLayoutError(
            f"only {len(rows)} of the {len(index.entries)} images in {index.root} could be "
            f"decoded ({len(skipped)} skipped); data.n_eval is {n_eval}"
        )
    stats = {
        "layout": index.layout,
        "n_images_found": len(index.entries),
        "seed": seed,
        **mode_stats(modes),
        "skipped": skipped,
    }
    log.info(
        "ImageNet (%s layout): %d images found, %d drawn with seed %d; converted to RGB: %s; skipped: %d",
        index.layout,
        len(index.entries),
        n_eval,
        seed,
        {k: v for k, v in modes.items() if k != "RGB"} or "none",
        len(skipped),
    )
    return {
        "images": images,
        "labels": np.array([r["label"] for r in rows], dtype=np.int64),
        "manifest": rows,
        "stats": stats,
    }


def eval_arrays(sample: dict) -> dict:
    """The eval npz of the workflow (same keys as the synthetic benchmark's). ImageNet
    has no object masks: `masks` are zeros and `has_masks` is False; a folder with
    data.folder.masks gives its own (sample["masks"]) and `has_masks` True."""
    n, _, h, w = sample["images"].shape
    if sample.get("masks") is not None:
        return {
            "images": sample["images"],
            "labels": sample["labels"],
            "masks": sample["masks"],
            "has_masks": np.array(True),
        }
    return {
        "images": sample["images"],
        "labels": sample["labels"],
        "masks": np.zeros((n, h, w), dtype=np.uint8),
        "has_masks": np.array(False),
    }


# the eval set's first images, the examples figure's (rule plot_dataset_examples) pool
N_EXAMPLES = 16


def write_eval_set(sample: dict, output, summary: dict, n_examples: int = N_EXAMPLES) -> None:
    """make_dataset's files for sampled real images (ImageNet or your own folder):
    the eval npz, the manifest, the class names, the images of the examples figure
    and a summary (the sample's stats plus `summary`)."""
    import pandas as pd

    from fudbench.core.io import write_csv, write_json, write_npz

    write_npz(output.eval, **eval_arrays(sample))
    write_csv(output.manifest, pd.DataFrame(sample["manifest"]), index=False)
    write_json(output.classes, sample["class_names"])
    write_npz(output.examples, images=sample["images"][:n_examples], labels=sample["labels"][:n_examples])
    write_json(output.summary, {**sample["stats"], **summary})


def build_eval_set(cfg: dict, n_eval: int, n_classes: int | None = N_CLASSES) -> dict:
    """index + sample from the `data.imagenet` config (paths already resolved)."""
    index = index_imagenet(cfg.get("root"), cfg.get("layout", "auto"), cfg.get("labels"), cfg.get("synsets"), n_classes)
    sample = sample_eval_set(index, n_eval, cfg["seed"], cfg["resize"], cfg["crop"], cfg.get("on_corrupt", "error"))
    return {**sample, "class_names": index.class_names, "wnids": index.wnids}
