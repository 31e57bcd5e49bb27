"""Draw examples/photos/masks/*.png from boxes.csv: one bounding box per photo,
drawn once by hand on the original photo's pixels (x0, y0 inclusive, x1, y1
exclusive), written as 1-bit PNGs of the photo's size (config/photos.yaml's
data.folder.masks). The masks are committed; rerun this after editing a box:

    ./fud python examples/photos/make_masks.py
"""

import csv
from pathlib import Path

from PIL import Image, ImageDraw

from fudbench.core.paths import resolve_path

HERE = Path(__file__).resolve().parent
ROOT = resolve_path("pkg:skimage/data")  # data.folder.root of config/photos.yaml


def main():
    (HERE / "masks").mkdir(exist_ok=True)
    with open(HERE / "boxes.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            with Image.open(ROOT / row["file"]) as photo:
                size = photo.size
            mask = Image.new("1", size, 0)
            x0, y0, x1, y1 = (int(row[k]) for k in ("x0", "y0", "x1", "y1"))
            ImageDraw.Draw(mask).rectangle([x0, y0, x1 - 1, y1 - 1], fill=1)
            out = HERE / "masks" / Path(row["file"]).with_suffix(".png")
            mask.save(out, optimize=True)
            print(f"{out.relative_to(HERE)}: {size[0]}x{size[1]}, box {x0},{y0}-{x1},{y1} ({row['what']})")


if __name__ == "__main__":
    main()
