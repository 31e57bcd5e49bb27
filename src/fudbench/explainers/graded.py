"""A graded family on the planted cue whose order is known for every protocol that keeps or removes a
map's top pixels (round five, issue 59; studies/round5/README.md).

The map is a strict ranking built from the base map's top set (the cue's square on the cue data, via
`oracle`). One rank block B straddles the protocol cut K = round(cut x HW):

- the *strip*: the cue's square and a *decoy* square of the same shape beside it (the side with more
  room), read as 2w lines of h pixels from the cue's far edge to the decoy's far edge, line by line; its
  pixels get the ranks K - w.h .. K + w.h - 1, a window of w.h consecutive strip pixels in front of the
  cut. At `shift` s the window starts s pixels into the strip, so it holds w.h - s of the cue's pixels
  (s = 4m: whole lines, 16 / 12 / 8 / 4 / 0 at m = 0..4, round five's first grading; s = 1, 3, 5, 7, 9:
  15 / 13 / 11 / 9 / 7, pixel by pixel). A window of whole lines is an h x w rectangle (outline 16 inside
  the image); every other window is the rectangle with a notch at one end and a step at the other, all
  of one outline (18) as long as s is not a multiple of h: members drawn from one of the two kinds keep
  sets of equal outline. Within a line the pixels run away from the image's border, so that the notch
  and the step do not touch it;
- the *module*: an h x 2w box (the strip's shape) of other pixels at least two pixels from the strip, of
  which w.h are kept at the cut in a pattern of a given outline (`module`, PATTERNS): the same pattern
  for every member (`graded_cue`, 32 by default: scatter equal by construction) or, in
  `graded_cue_opposing`, a pattern whose outline grows for the better members (e.g. 64 for the member
  with most cue: 16 isolated pixels; 16 for the least: one compact square): scatter against evidence.

Every other pixel is ranked by its distance to B, farthest first (ties by a seeded jitter), the first
K - 2 w.h of them in front of B; behind the cut come the strip's rest, then the module's. So at every
kept count other than K (and K + 1 .. K + 2 w.h - 1, which no protocol uses at 32 x 32) the kept set is the same pixel set for
every member, and at K the members differ only in how much of the cue the kept set holds (and, in
the opposing arm, in the module's scatter). Keep-top (FUD, Insertion, ROAD LeRF) keeps less of the cue
at K for a larger shift, keep-bottom (FUD bottom, Deletion's and ROAD MoRF's kept pixels) more: the
order is known for every protocol whose kept counts include K (FUD's and ROAD's ratios, Insertion /
Deletion's steps of HW / n_steps pixels: K = 512 at 32 x 32 for cut 0.5). The licence of "more cue
kept = more evidence" is the planted cue's dose-response (rule cue_intervention), which uses no metric.

Floor 2: imports fudbench.core and the explainers' own modules.
"""

from __future__ import annotations

import numpy as np
import torch

from fudbench.explainers.controlled import Wrapper, _image_generator, _minmax, top_set

# the module's kept patterns: 16 of the 4 x 8 box's 32 pixels, groups touching at corners at most;
# outline (4-neighbour pairs straddling the set) 64, 48, 32, 24, 16
PATTERNS = {
    64: [(r, c) for r in range(4) for c in range(8) if (r + c) % 2 == 0],  # 16 isolated pixels
    48: [(r + a, c) for r, cols in ((0, (0, 2, 4, 6)), (2, (1, 3, 5, 7))) for c in cols for a in (0, 1)],  # 8 dominoes
    32: [(r + a, c + b) for r, c in ((0, 0), (0, 4), (2, 2), (2, 6)) for a in (0, 1) for b in (0, 1)],  # 4 squares
    24: [(r, c + b) for c in (0, 4) for r in range(4) for b in (0, 1)],  # 2 bars of 4 x 2
    16: [(r, c) for r in range(4) for c in range(4)],  # one 4 x 4 square
}
EQUAL_PATTERN = 32  # the main arm's module: the middle of the opposing arm's outlines
MODULE_GAP = 2  # pixels between the module and the strip (Chebyshev): nothing kept touches both


def cue_box(inside: np.ndarray) -> tuple[int, int, int, int]:
    """(y0, x0, h, w) of a set that must be a filled rectangle (the cue's square)."""
    ys, xs = np.nonzero(inside)
    if len(ys) == 0:
        raise ValueError("graded_cue: the base map's top set is empty")
    y0, x0, y1, x1 = ys.min(), xs.min(), ys.max() + 1, xs.max() + 1
    if not inside[y0:y1, x0:x1].all():
        raise ValueError("graded_cue: the base map's top set must be one filled rectangle (the cue's square)")
    return int(y0), int(x0), int(y1 - y0), int(x1 - x0)


def strip_layout(inside: np.ndarray) -> tuple[np.ndarray, bool]:
    """(columns, clean): the strip as a (2w, h, 2) array of (y, x) pixels, its lines ordered from the
    cue's far edge to the decoy's far edge, and whether every window has the same outline. The decoy
    goes beside the cue (left, right, above or below) where it has room (w + 1 lines: no window touches
    the border beyond it) and the cue's far edge is off the border (a window there would lose its outer
    pairs); among those the side with most room. A cue in a corner has no such side: the strip goes where
    there is most room and `clean` is False (the family's gate, fudbench.meta.graded, drops the image)."""
    h_img, w_img = inside.shape
    y0, x0, h, w = cue_box(inside)
    options = []  # (clean, room, axis, step)
    for axis, start, length, size in ((1, x0, w, w_img), (0, y0, h, h_img)):
        for step, room, far_edge_free in ((1, size - (start + length), start > 0), (-1, start, start + length < size)):
            if room >= length + 1:
                options.append((far_edge_free, room, axis, step))
    if not options:
        raise ValueError(f"graded_cue: no room for a decoy beside the {h} x {w} cue in a {h_img} x {w_img} image")
    clean, _, axis, step = max(options, key=lambda o: (o[0], o[1], o[2], o[3]))
    start, length = (x0, w) if axis == 1 else (y0, h)
    cue_lines = list(range(start, start + length)) if step == 1 else list(range(start + length - 1, start - 1, -1))
    lines = cue_lines + [cue_lines[-1] + step * (k + 1) for k in range(length)]
    across = list(range(y0, y0 + h)) if axis == 1 else list(range(x0, x0 + w))
    if across[0] == 0:  # a partly kept line's pixels start away from the border (the outline stays 18)
        across = across[::-1]
    if axis == 1:
        out = np.array([[(y, c) for y in across] for c in lines])
    else:
        out = np.array([[(r, x) for x in across] for r in lines])
    return out, bool(clean)


def module_origin(strip: np.ndarray, shape: tuple[int, int], size: tuple[int, int]) -> tuple[int, int]:
    """Top-left corner of the module box of `size` (rows, columns): inside the image with a pixel of margin, at least
    MODULE_GAP pixels from the strip, farthest from the strip's centre (ties: the first in raster order)."""
    h_img, w_img = shape
    mh, mw = size
    ys, xs = strip[..., 0], strip[..., 1]
    sy0, sy1, sx0, sx1 = ys.min(), ys.max(), xs.min(), xs.max()
    centre = np.array([(sy0 + sy1) / 2, (sx0 + sx1) / 2])
    best, best_d = None, -1.0
    for y in range(1, h_img - mh):
        for x in range(1, w_img - mw):
            clear = (
                y > sy1 + MODULE_GAP
                or y + mh - 1 < sy0 - MODULE_GAP
                or x > sx1 + MODULE_GAP
                or x + mw - 1 < sx0 - MODULE_GAP
            )
            if not clear:
                continue
            d = float(np.hypot(*(np.array([y + (mh - 1) / 2, x + (mw - 1) / 2]) - centre)))
            if d > best_d:
                best, best_d = (y, x), d
    if best is None:
        raise ValueError(f"graded_cue: no room for a {mh} x {mw} module clear of the strip")
    return best


def graded_ranking(inside: np.ndarray, shift: int, cut: float, module: int, seed: int) -> np.ndarray:
    """(H, W) float map, strictly ranked (values 1 - rank / HW), of one image and member: the kept window
    starts `shift` strip pixels from the cue's far edge; the module keeps PATTERNS[module]."""
    from scipy.ndimage import distance_transform_edt

    from fudbench.core.masks import n_pixels

    h_img, w_img = inside.shape
    hw = h_img * w_img
    strip, _ = strip_layout(inside)
    w, h = strip.shape[0] // 2, strip.shape[1]  # lines along the slide, pixels across it
    if (h, w) != (4, 4):
        raise ValueError(f"graded_cue needs a 4 x 4 cue (its module patterns hold 16 pixels), got {h} x {w}")
    if not 0 <= shift <= w * h:
        raise ValueError(f"graded_cue shift must be in [0, {w * h}] (cue pixels moved out of the window), got {shift}")
    if module not in PATTERNS:
        raise ValueError(f"graded_cue module must be one of the pattern outlines {sorted(PATTERNS)}, got {module}")
    pixels = strip.reshape(-1, 2)  # line by line from the cue's far edge
    window = pixels[shift : shift + w * h]  # kept at the cut
    rest = np.concatenate([pixels[:shift], pixels[shift + w * h :]])
    mh, mw = h, 2 * w
    oy, ox = module_origin(strip, inside.shape, (mh, mw))
    pattern = PATTERNS[module]
    kept_module = {(oy + r, ox + c) for r, c in pattern}
    box = [(oy + r, ox + c) for r in range(mh) for c in range(mw)]
    module_kept = np.array(sorted(kept_module))
    module_rest = np.array([p for p in box if p not in kept_module])
    block = np.zeros((h_img, w_img), bool)
    for part in (window, rest, module_kept, module_rest):
        block[part[:, 0], part[:, 1]] = True
    k = n_pixels(float(cut), hw)
    front = k - len(window) - len(module_kept)
    if front < 0 or k + len(rest) + len(module_rest) > hw:
        raise ValueError(f"graded_cue cut {cut}: the strip and module do not fit around {k} kept pixels")
    jitter = torch.rand((h_img, w_img), generator=_image_generator(seed, 0x6AD3), dtype=torch.float64).numpy()
    distance = distance_transform_edt(~block) + 1e-3 * jitter
    others = np.flatnonzero(~block.ravel())
    others = others[np.argsort(-distance.ravel()[others], kind="stable")]  # farthest first

    def flat(p):
        return p[:, 0] * w_img + p[:, 1]

    order = np.concatenate(
        [others[:front], flat(window), flat(module_kept), flat(rest), flat(module_rest), others[front:]]
    )
    values = np.empty(hw)
    values[order] = 1.0 - np.arange(hw) / hw
    return values.reshape(h_img, w_img)


class GradedCue(Wrapper):
    """The graded family's member at `shift` (0 = the whole cue kept at the cut), scatter equal: every
    member keeps the module's pattern of outline `module`."""

    name = "graded_cue"

    def __init__(
        self, base: str, shift: int, cut: float = 0.5, module: int = EQUAL_PATTERN, base_settings: dict | None = None
    ):
        super().__init__(base, 0.0, base_settings)
        if int(shift) != shift or shift < 0:
            raise ValueError(f"{self.name} shift must be a whole number >= 0, got {shift}")
        if not 0.0 < cut < 1.0:
            raise ValueError(f"{self.name} cut must be in (0, 1), got {cut}")
        if module not in PATTERNS:
            raise ValueError(f"{self.name} module must be one of the pattern outlines {sorted(PATTERNS)}, got {module}")
        self.shift, self.cut, self.module = int(shift), float(cut), int(module)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None:
            raise ValueError(f"{self.name} is seeded (the distance ties): pass one seed per image")
        inside = top_set(_minmax(self.base_map(model, x, target, seeds, masks).abs().sum(1))).cpu().numpy()
        maps = [graded_ranking(m, self.shift, self.cut, self.module, int(s)) for m, s in zip(inside, seeds)]
        out = torch.as_tensor(np.stack(maps), dtype=x.dtype, device=x.device)
        return out.unsqueeze(1).expand_as(x).clone()


class GradedCueOpposing(GradedCue):
    """The same member with the module's scatter against the evidence: each member names its module
    outline, larger for the members with more cue (the gate checks that it falls with the shift)."""

    name = "graded_cue_opposing"
