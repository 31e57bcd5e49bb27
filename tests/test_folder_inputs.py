"""Folder-data inputs that could become wrong numbers are
converted so that the pixels keep their meaning, with a message saying what was
done, or refused naming the file, before any job (docs/your_own.md, "What folder
data accepts"). Every test fails on 6c8cba0."""

import io
import logging
import re
import struct
import zlib
from collections import Counter

import numpy as np
import pytest
from PIL import Image, ImageOps

from fudbench.data.folder import (
    FolderDataError,
    MaskError,
    build_eval_set,
    folder_problems,
    image_problems,
    read_mask,
)
from fudbench.data.imagenet import (
    EXIF_TURNS,
    MIN_SIDE,
    CorruptImageError,
    UnsupportedImageError,
    decode_rgb,
    read_image,
)

RAMP16 = np.linspace(0, 65535, 32 * 40).reshape(32, 40).astype(np.uint16)  # h 32, w 40


def png16(path, arr):
    """A 16-bit PNG (gray: (h, w); RGB: (h, w, 3); RGBA: (h, w, 4)), written by hand:
    Pillow does not write 16-bit RGB."""
    colour = 0 if arr.ndim == 2 else {2: 4, 3: 2, 4: 6}[arr.shape[2]]  # PNG colour types
    h, w = arr.shape[:2]
    raw = b"".join(b"\0" + arr[i].astype(">u2").tobytes() for i in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, colour, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return path


def _folder(tmp_path, files: dict, masks: dict | None = None, resize=32, crop=32):
    """A data.folder config over `files` {name: writer(path)} (labels all 0) and masks {name: writer}."""
    root = tmp_path / "images"
    root.mkdir(exist_ok=True)
    for name, write in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        write(root / name)
    (tmp_path / "labels.csv").write_text("file,label\n" + "".join(f"{f},0\n" for f in files))
    cfg = {"root": str(root), "labels": str(tmp_path / "labels.csv"), "resize": resize, "crop": crop}
    if masks is not None:
        (tmp_path / "masks").mkdir(exist_ok=True)
        for name, write in masks.items():
            write(tmp_path / "masks" / name)
        cfg["masks"] = str(tmp_path / "masks")
    return cfg


def _save(arr, mode=None, fmt=None, **kw):
    return lambda p: (Image.fromarray(arr) if mode is None else Image.fromarray(arr).convert(mode)).save(
        p, format=fmt, **kw
    )


# --- image modes and bit depths ------------------------------------------------------------------


def test_16bit_grayscale_png_is_scaled_not_clipped(tmp_path, caplog):
    """6c8cba0: Pillow's conversion clipped at 255, so the ramp turned ~99% white with an INFO line."""
    path = png16(tmp_path / "g16.png", RAMP16)
    assert Image.open(path).mode == "I;16"
    dec = decode_rgb(path)
    a = np.asarray(dec.image)
    np.testing.assert_array_equal(a[..., 0], (RAMP16 >> 8).astype(np.uint8))
    assert (a[..., 0] == a[..., 2]).all() and a.max() == 255 and a.min() == 0
    assert (a == 255).mean() < 0.01
    with caplog.at_level(logging.INFO):
        _, info = read_image(path, 32, 32, Counter())
    assert "g16.png: 16-bit grayscale: scaled to 8 bits" in caplog.text and info["conversion"].startswith("16-bit")
    # equals the 8-bit file of the same picture (stored as v * 257) and Pillow's own 16-bit RGB reduction
    eight = (RAMP16 >> 8).astype(np.uint8)
    np.testing.assert_array_equal(
        np.asarray(decode_rgb(png16(tmp_path / "g8x257.png", eight.astype(np.uint16) * 257)).image)[..., 0], eight
    )
    rgb = decode_rgb(png16(tmp_path / "rgb16.png", np.stack([RAMP16] * 3, -1)))
    np.testing.assert_array_equal(np.asarray(rgb.image), a)
    assert rgb.notes and rgb.notes[0][0] == "16-bit"


def test_16bit_grayscale_tiff_and_pgm_are_scaled(tmp_path):
    Image.fromarray(RAMP16).save(tmp_path / "g.tif")  # I;16
    (tmp_path / "g.pgm").write_bytes(b"P5 40 32 65535\n" + RAMP16.astype(">u2").tobytes())  # mode I, raw I;16B
    for name in ("g.tif", "g.pgm"):
        np.testing.assert_array_equal(np.asarray(decode_rgb(tmp_path / name).image)[..., 1], RAMP16 >> 8)


def test_16bit_image_in_folder_data_reaches_the_eval_set_scaled(tmp_path):
    cfg = _folder(tmp_path, {"a.png": lambda p: png16(p, RAMP16)})
    out = build_eval_set(cfg, 1)
    assert 100 < out["images"].mean() < 155  # the ramp's mean, not white
    assert out["manifest"][0]["conversion"].startswith("16-bit grayscale") and out["stats"]["conversions"] == {
        "16-bit": 1
    }


@pytest.mark.parametrize(
    "name,writer,match",
    [
        ("i32.tif", _save(RAMP16.astype(np.int32) * 40000), r"32-bit integer pixels .*no standard white level"),
        ("lab.tif", _save(np.zeros((32, 40, 3), np.uint8), "LAB"), r"pixel mode LAB is not supported"),
        ("nan.tif", _save(np.full((32, 40), np.nan, np.float32)), r"floating-point pixels include NaN"),
        ("wide.tif", _save(RAMP16.astype(np.float32) - 1), r"floating-point pixels range over \[-1, 65534\]"),
    ],
)
def test_modes_that_cannot_keep_their_meaning_are_refused_naming_the_file(tmp_path, name, writer, match):
    writer(tmp_path / name)
    with pytest.raises(UnsupportedImageError, match=rf"{name}: {match}"):
        decode_rgb(tmp_path / name)


@pytest.mark.parametrize("scale,note", [(1 / 65535, r"\[0, 1\]: scaled by 255"), (255 / 65535, r"\[0, 255\]")])
def test_float_tiff_is_scaled_by_its_range_with_a_warning(tmp_path, caplog, scale, note):
    """6c8cba0: float pixels in [0, 1] became black (0 or 1 of 255)."""
    Image.fromarray((RAMP16 * scale).astype(np.float32)).save(tmp_path / "f.tif")
    with caplog.at_level(logging.WARNING):
        a = np.asarray(read_image(tmp_path / "f.tif", 32, 32, Counter())[0])
    assert 100 < a.mean() < 155
    assert "floating-point grayscale in" in caplog.text and caplog.records[0].levelname == "WARNING"
    assert any(re.search(note, r.message) for r in caplog.records)


def test_alpha_with_transparency_is_dropped_with_a_warning(tmp_path, caplog):
    rgba = np.zeros((32, 40, 4), np.uint8)
    rgba[..., 0], rgba[:16, :, 3] = 200, 255  # the lower half transparent
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    dec = decode_rgb(tmp_path / "a.png")
    assert (np.asarray(dec.image)[..., 0] == 200).all()  # the stored colours, as torchvision's loader
    with caplog.at_level(logging.INFO):
        read_image(tmp_path / "a.png", 32, 32, Counter())
    assert "alpha channel dropped, 50.0% of the pixels are (partly) transparent" in caplog.text
    assert caplog.records[0].levelname == "WARNING"
    rgba[..., 3] = 255
    Image.fromarray(rgba, "RGBA").save(tmp_path / "b.png")
    assert decode_rgb(tmp_path / "b.png").notes == [("alpha", "RGBA: opaque alpha channel dropped", False)]


@pytest.mark.parametrize("mode", ["1", "L", "P", "CMYK", "LA"])
def test_other_modes_are_converted_and_said(tmp_path, mode):
    img = Image.fromarray(np.tile((np.arange(40) * 6).astype(np.uint8), (32, 1))).convert(mode)
    path = tmp_path / ("a.jpg" if mode == "CMYK" else "a.png")
    img.save(path)
    dec = decode_rgb(path)
    assert dec.mode == mode and dec.image.mode == "RGB" and dec.notes


def test_exif_rotated_jpeg_is_turned_upright_for_folder_data_only(tmp_path, caplog):
    arr = np.zeros((20, 40, 3), np.uint8)
    arr[:, :10] = 255  # a white left edge
    img = Image.fromarray(arr)
    exif = img.getexif()
    exif[0x0112] = 6  # shown turned 90 degrees clockwise
    img.save(tmp_path / "r.jpg", exif=exif.tobytes(), quality=95)
    dec = decode_rgb(tmp_path / "r.jpg", exif=True)
    ref = ImageOps.exif_transpose(Image.open(tmp_path / "r.jpg"))
    assert dec.image.size == ref.size == (20, 40) and dec.stored_size == (40, 20)
    np.testing.assert_array_equal(np.asarray(dec.image), np.asarray(ref.convert("RGB")))
    with caplog.at_level(logging.WARNING):
        read_image(tmp_path / "r.jpg", 20, 16, Counter(), exif=True)
    assert "r.jpg: turned by its EXIF orientation 6 (as image viewers show it): 40x20 stored, 20x40" in caplog.text
    assert decode_rgb(tmp_path / "r.jpg").image.size == (40, 20)  # ImageNet: as torchvision reads it
    for orientation in range(2, 9):  # our table is Pillow's
        exif[0x0112] = orientation
        img.save(tmp_path / "o.png", exif=exif.tobytes())
        np.testing.assert_array_equal(
            np.asarray(decode_rgb(tmp_path / "o.png", exif=True).image),
            np.asarray(ImageOps.exif_transpose(Image.open(tmp_path / "o.png"))),
        )
    assert EXIF_TURNS.keys() == set(range(2, 9))


@pytest.mark.parametrize("size", [(1, 1), (MIN_SIDE - 1, 64), (64, 3)])
def test_a_tiny_image_is_refused_before_any_job(tmp_path, size):
    """6c8cba0: a 1x1 image was upsampled to a constant crop without a word."""
    big = _save(np.zeros((32, 32, 3), np.uint8))
    cfg = _folder(tmp_path, {"a.png": big, "tiny.png": _save(np.zeros(size[::-1] + (3,), np.uint8))})
    problems = image_problems(cfg, 2)
    assert len(problems) == 1 and f"tiny.png: {size[0]}x{size[1]} pixels, too small" in problems[0]
    with pytest.raises(UnsupportedImageError, match="tiny.png"):
        build_eval_set(cfg, 2)


def test_first_frame_of_an_animation_is_said(tmp_path):
    frames = [Image.new("RGB", (16, 16), (80 * i, 0, 0)) for i in range(3)]
    frames[0].save(tmp_path / "a.gif", save_all=True, append_images=frames[1:], duration=100)
    assert Image.open(tmp_path / "a.gif").n_frames == 3
    dec = decode_rgb(tmp_path / "a.gif")
    assert ("frames", "the first of 3 frames used", True) in dec.notes and np.asarray(dec.image).max() == 0
    Image.new("RGB", (16, 16), (10, 20, 30)).save(tmp_path / "b.webp")
    assert decode_rgb(tmp_path / "b.webp").notes == []


# --- one mask per image ---------------------------------------------------------------------------


def test_two_images_sharing_a_stem_are_an_error_naming_both(tmp_path):
    """6c8cba0: a.png and a.jpg both read masks/a.png."""
    img = _save(np.zeros((32, 32, 3), np.uint8))
    cfg = _folder(
        tmp_path,
        {"a.png": img, "a.jpg": img, "b.png": img},
        masks={"a.png": _save(np.full((32, 32), 255, np.uint8)), "b.png": _save(np.ones((32, 32), np.uint8))},
    )
    problems = folder_problems(cfg, 3)
    assert len(problems) == 1 and "a.jpg and a.png share the mask" in problems[0] and "masks/a.png" in problems[0]
    with pytest.raises(FolderDataError, match="a.jpg and a.png share the mask"):
        build_eval_set(cfg, 3)
    assert folder_problems({k: v for k, v in cfg.items() if k != "masks"}, 3) == []  # no masks: no clash


def test_a_mask_folder_that_is_the_image_folder_is_refused(tmp_path):
    img = _save(np.full((32, 32, 3), 9, np.uint8))
    cfg = _folder(tmp_path, {"a.png": img})
    cfg["masks"] = cfg["root"]
    problems = folder_problems(cfg, 1)
    assert len(problems) == 1 and "would be both an evaluated image and its own mask" in problems[0]


def test_one_file_listed_under_two_names_is_refused(tmp_path):
    img = _save(np.zeros((32, 32, 3), np.uint8))
    cfg = _folder(tmp_path, {"a.png": img})
    (tmp_path / "images" / "b.png").symlink_to(tmp_path / "images" / "a.png")
    (tmp_path / "labels.csv").write_text("file,label\na.png,0\nb.png,1\n")
    problems = folder_problems(cfg, 2)
    assert len(problems) == 1 and "a.png and b.png are the same file" in problems[0]


def test_an_uppercase_png_mask_is_found(tmp_path):
    cfg = _folder(
        tmp_path,
        {"A.JPG": _save(np.zeros((32, 32, 3), np.uint8))},
        masks={"A.PNG": _save(np.full((32, 32), 255, np.uint8))},
    )
    assert folder_problems(cfg, 1) == [] and build_eval_set(cfg, 1)["masks"].all()


# --- masks: alpha, empty, size ------------------------------------------------------------------------


def _rgba_mask(path, colour=0, opaque_box=True):
    m = np.zeros((32, 32, 4), np.uint8)
    m[..., :3] = colour
    if opaque_box:
        m[8:24, 8:24, 3] = 255
    Image.fromarray(m, "RGBA").save(path)


@pytest.mark.parametrize("colour", [0, 255])
def test_an_rgba_mask_whose_object_is_only_in_alpha_is_read_from_alpha(tmp_path, colour):
    """6c8cba0: convert('L') dropped alpha: an empty mask (colour 0) or all object (colour 255)."""
    _rgba_mask(tmp_path / "m.png", colour)
    out = read_mask(tmp_path / "m.png", (32, 32), 32, 32)
    expected = np.zeros((32, 32), np.uint8)
    expected[8:24, 8:24] = 1
    np.testing.assert_array_equal(out, expected)


def test_an_rgba_mask_whose_alpha_and_colours_disagree_is_refused(tmp_path):
    m = np.zeros((32, 32, 4), np.uint8)
    m[8:24, 8:24, 3] = 255  # alpha: a box
    m[:4, :4, 0] = 255  # colours: another
    Image.fromarray(m, "RGBA").save(tmp_path / "m.png")
    with pytest.raises(MaskError, match=r"m\.png: the mask's alpha channel and its colours mark different pixels"):
        read_mask(tmp_path / "m.png", (32, 32), 32, 32)


def test_a_dark_coloured_mask_is_not_lost(tmp_path):
    m = np.zeros((32, 32, 3), np.uint8)
    m[8:24, 8:24, 2] = 1  # (0, 0, 1): luminance rounds to 0
    Image.fromarray(m).save(tmp_path / "m.png")
    assert read_mask(tmp_path / "m.png", (32, 32), 32, 32).sum() == 16 * 16


def test_an_empty_mask_is_refused_before_any_job(tmp_path):
    img = _save(np.zeros((32, 32, 3), np.uint8))
    cfg = _folder(
        tmp_path,
        {"a.png": img, "b.png": img},
        masks={"a.png": _save(np.full((32, 32), 255, np.uint8)), "b.png": _save(np.zeros((32, 32), np.uint8))},
    )
    problems = image_problems(cfg, 2)
    assert len(problems) == 1 and "masks/b.png: the mask is empty" in problems[0]
    with pytest.raises(MaskError, match=r"b\.png: the mask is empty"):
        build_eval_set(cfg, 2)


def test_a_mask_outside_the_centre_crop_is_refused(tmp_path):
    m = np.zeros((32, 64), np.uint8)
    m[:, :8] = 255  # the left edge: cropped away (64 wide -> centre 32)
    Image.fromarray(m).save(tmp_path / "m.png")
    with pytest.raises(
        MaskError,
        match=r"m\.png: no object pixel is left after the resize to 32 and the centre "
        r"crop of 32 .*the object lies outside the centre crop",
    ):
        read_mask(tmp_path / "m.png", (64, 32), 32, 32)


def test_a_mask_of_the_stored_size_of_an_exif_turned_image_says_so(tmp_path):
    img = Image.fromarray(np.zeros((20, 40, 3), np.uint8))
    exif = img.getexif()
    exif[0x0112] = 8
    cfg = _folder(
        tmp_path,
        {"r.jpg": lambda p: img.save(p, exif=exif.tobytes())},
        masks={"r.png": _save(np.full((20, 40), 255, np.uint8))},
        resize=20,
        crop=16,
    )
    problems = image_problems(cfg, 1)
    assert (
        len(problems) == 1
        and "the mask is 40x20, its image 20x40" in problems[0]
        and "turned by its EXIF orientation" in problems[0]
    )


def test_a_corrupt_image_is_still_a_corrupt_image_error(tmp_path):
    (tmp_path / "x.png").write_bytes(b"\x89PNG not really")
    with pytest.raises(CorruptImageError, match=r"x\.png: cannot decode the image"):
        decode_rgb(tmp_path / "x.png")
    with pytest.raises(CorruptImageError, match=r"x\.png: cannot decode the mask"):
        read_mask(tmp_path / "x.png", (4, 4), 4, 4)


def test_decoding_reads_a_file_object_too():
    buf = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(buf, "PNG")
    buf.seek(0)
    assert decode_rgb(buf).image.size == (16, 16)


# --- found by the hostile probe ---------------------------------------------------------------------


def test_16bit_file_holding_8bit_values_is_refused_and_12bit_warned(tmp_path, caplog):
    """Scaled by 65535, 8-bit values saved as 16-bit would be evaluated black: refused; 12-bit sensor values
    nearly black: warned."""
    png16(tmp_path / "eight.png", RAMP16 >> 8)
    with pytest.raises(
        UnsupportedImageError,
        match=r"eight\.png: a 16-bit grayscale image whose brightest pixel "
        r"is 255 of 65535 .*scale the values by 257",
    ):
        decode_rgb(tmp_path / "eight.png")
    png16(tmp_path / "twelve.png", RAMP16 >> 4)
    with caplog.at_level(logging.WARNING):
        read_image(tmp_path / "twelve.png", 32, 32, Counter())
    assert "twelve.png: its brightest pixel is 4095 of 65535" in caplog.text


@pytest.mark.parametrize("maxval", [1023, 4095, 65535])
def test_pgm_of_any_depth_keeps_its_scale(tmp_path, maxval):
    """Pillow reads a PGM of maxval > 255 as mode I scaled to 0..65535 (raw mode 'L', not 'I;16')."""
    v = np.tile(np.array([0, maxval // 2, maxval]), (8, 4))
    (tmp_path / "g.pgm").write_bytes(b"P5 12 8 %d\n" % maxval + v.astype(">u2").tobytes())
    a = np.asarray(decode_rgb(tmp_path / "g.pgm").image)[0, :3, 0]
    assert a[0] == 0 and a[2] == 255 and 126 <= a[1] <= 128


def test_a_file_pillow_cannot_identify_says_what_it_may_be(tmp_path):
    (tmp_path / "x.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="64" height="48"></svg>')
    with pytest.raises(
        CorruptImageError,
        match=r"x\.svg: cannot decode the image .*not an image Pillow reads .*"
        r"save it as PNG or JPEG",
    ):
        decode_rgb(tmp_path / "x.svg")


def test_a_jpeg_mask_is_refused(tmp_path):
    """JPEG noise makes background pixels non-zero, i.e. object (a .png name does not change the content)."""
    m = np.zeros((32, 32), np.uint8)
    m[5:19, 7:23] = 255
    Image.fromarray(m).save(tmp_path / "m.png", format="JPEG")
    assert (np.asarray(Image.open(tmp_path / "m.png")) > 0).sum() > 14 * 16  # the noise
    with pytest.raises(MaskError, match=r"m\.png: the mask is a JPEG file: its compression noise"):
        read_mask(tmp_path / "m.png", (32, 32), 32, 32)
