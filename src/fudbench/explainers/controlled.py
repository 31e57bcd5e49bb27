"""Controlled explainers for meta-evaluation: their quality is known by construction.

- random:     a seeded noise map (a metric should score it at chance level).
- oracle:     the ground-truth object mask of the synthetic benchmark.
- background: the complement of that mask (1 on the background): a sanity
              anchor that a faithful metric ranks last, below random.
- degrade:    any explainer's map mixed with a fraction p of random noise
              (the F-Fidelity paper's protocol, seeds/004): the more noise,
              the worse the explanation, which gives a ground-truth ranking.
- random_smooth: the `random` entry's map smoothed (Gaussian, sigma px) and
              histogram-matched back to its own values: no information
              either, but spatially compact (a scatter control: the pair
              random_smooth - random shows a metric's reaction to scatter).
- reorder:    a base map whose top set (its maximal pixels, e.g. the oracle
              mask) is ordered compactly (outward from the set's deepest
              pixel) or in a seeded random order (scattered): the same set at
              every tie level, so the pair differs in scatter only.
- translate:  a base map moved by `shift` px in a seeded direction per image
              (circular: values and local structure kept, evidence moved off
              the object): a family of equal scatter and decreasing faithfulness.
- displace:   the base map's top set (e.g. the cue's square) moved by `shift` px without wrapping, in a
              seeded inward direction, then made strict (a family of known order for keep-top
              and keep-bottom sets; issue 44).
- block_shuffle: a fraction p of the base map's block x block tiles shuffled
              among themselves as whole tiles (nested across p): ranking
              damage with the local structure inside each tile kept.
- randomise_model: any explainer run on a copy of the model whose last
              fraction of layers is re-initialised (Adebayo et al. 2018's
              cascading model-parameter randomisation): the more layers
              randomised, the less the map can reflect the trained model.

Degradation rule (the seed paper adds "a proportion of noise perturbations" to
the explanation without a formula; ours): the per-pixel map a (|attribution|
summed over channels) is min-max normalised per image to [0, 1]; then
- mode "shuffle" (default): a seeded permutation of the image's pixels picks
  the first round(p * HW) of them, and their values are moved one place along
  that permutation (a cyclic derangement among the picked pixels). The picked
  set is uniform over pixels, so in expectation it hits the top and the bottom
  of the ranking alike (a share p of each decile), the value distribution is
  kept, the sets are nested across p (same permutation for one base map and
  image: explainers.seeds.explainer_seed_name), p = 0 is the base ranking and p = 1
  a full derangement. It degrades binary maps such as the oracle mask too;
- mode "replace" (biased, kept to reproduce earlier runs): a seeded random
  fraction p of the pixels get a fresh uniform [0, 1] value. Attribution maps
  are heavy-tailed (most values near 0), so the noise takes over the top of
  the ranking at once and leaves the bottom nearly intact (simulated on a
  32x32 IG-like map: noise share of the top decile 0.95 at p = 0.2, of the
  bottom decile 0.00); members with p >= 0.2 are nearly interchangeable;
- mode "mix": a_p = (1 - p) * norm(a) + p * u, a convex mix with uniform
  noise u (suits continuous maps only: a binary map keeps its ranking for
  p <= 0.5).
The result is broadcast back over the channels.

Ties (issue 44). A map with tied pixels (the binary oracle mask: every object
pixel 1, every background pixel 0) does not say which of them to keep first;
each evaluation then breaks the ties with its own seeded permutation, so at
a ratio below the object's area the kept set is a random scatter of the
object, and above it the object plus random background. What the protocol
measures then depends on that draw, not on the map. The wrappers (degrade,
reorder, translate, block_shuffle) therefore give their normalised base map a
strict order first (`ties: compact`, the default; break_ties): within a tie
level, pixels nearer the pixels of higher value come first, and within the
top level, pixels nearer its deepest pixel (the one farthest from its
complement) come first; equal distances by a fixed per-image jitter of 1e-3
px. The values move by at most 1e-3 of the map's range, so value-weighted
metrics see the same map. `ties: protocol` keeps the old behaviour (the runs
before issue 44); the binary `oracle` itself is kept as the named control of
what ties do.
"""

from __future__ import annotations

import copy
import math
import weakref

import torch

from fudbench.explainers.base import Explainer


def seeded_uniform(shape, seeds, device) -> torch.Tensor:
    """One (H, W) uniform map per image, each from its own CPU generator."""
    if seeds is None:
        raise ValueError("this explainer is random: pass one seed per image")
    maps = [torch.rand(shape, generator=torch.Generator().manual_seed(int(s))) for s in seeds]
    return torch.stack(maps).to(device)


class RandomExplainer(Explainer):
    name = "random"

    def explain(self, model, x, target, seeds=None):
        return seeded_uniform(x.shape[-2:], seeds, x.device).unsqueeze(1).expand_as(x).clone()


def _mask_map(name: str, masks, x: torch.Tensor) -> torch.Tensor:
    """The (N, H, W) object masks as maps of x's shape, dtype and device."""
    if masks is None:
        raise ValueError(f"the {name} explainer needs the ground-truth masks (synthetic benchmark only)")
    return masks.to(x.device, x.dtype).view(len(x), 1, *x.shape[-2:]).expand_as(x).clone()


class OracleExplainer(Explainer):
    """The ground-truth object mask (1 inside the object); needs `masks`."""

    name = "oracle"
    uses_masks = True

    def explain(self, model, x, target, seeds=None, masks=None):
        return _mask_map(self.name, masks, x)


class BackgroundExplainer(Explainer):
    """The complement of the ground-truth object mask (1 on the background, 0 on
    the object); needs `masks`. Every background pixel outranks every object
    pixel: a faithful metric scores it below the random map."""

    name = "background"
    uses_masks = True

    def explain(self, model, x, target, seeds=None, masks=None):
        return 1 - _mask_map(self.name, masks, x)


def base_seeds(seeds):
    """The seeds a wrapper (degrade, randomise_model) passes to its base explainer:
    its own, each XOR 0xBA5E, so the base draws apart from the wrapper's noise."""
    return None if seeds is None else [int(s) ^ 0xBA5E for s in seeds]


def _minmax(a: torch.Tensor) -> torch.Tensor:
    flat = a.flatten(1)
    lo, hi = flat.min(1, keepdim=True).values, flat.max(1, keepdim=True).values
    return ((flat - lo) / (hi - lo).clamp_min(1e-12)).view_as(a)


TIES = ("compact", "protocol")
TIE_SPREAD = 1e-3  # a tie level's pixels spread over at most this share of the map's range


def break_ties(a: torch.Tensor, seeds) -> torch.Tensor:
    """(N, H, W) -> the same maps with every tie level made strict (see the
    module's "Ties"): a level's pixels are ordered by their distance to the
    pixels of higher value (nearest first) or, for the top level, to its
    deepest pixel (nearest first), then by a fixed per-image jitter; they get
    values spread over [L, L + spread) in that order, spread = min(half the
    gap to the next level, TIE_SPREAD x the map's range). Levels of one pixel
    are untouched, so a map without ties comes back unchanged."""
    from scipy.ndimage import distance_transform_edt

    if seeds is None:
        raise ValueError("break_ties needs one seed per image (the jitter that orders equal distances)")
    out = a.detach().cpu().double().clone()
    n, h, w = out.shape
    for i, s in enumerate(seeds):
        m = out[i]
        values, counts = torch.unique(m, return_counts=True)
        if bool((counts == 1).all()):
            continue
        jitter = (torch.rand((h, w), generator=_image_generator(s, 0x71E5), dtype=torch.float64) * 1e-3).numpy()
        span = float(values[-1] - values[0]) or 1.0
        new = m.clone()
        for k in torch.nonzero(counts > 1).flatten().tolist():
            level = values[k]
            tied = (m == level).numpy()
            higher = (m > level).numpy()
            if higher.any():  # distance to the nearest pixel of higher value
                dist = distance_transform_edt(~higher)
            else:  # the top level: distance to its deepest pixel
                depth = distance_transform_edt(tied) + jitter
                centre = divmod(int(depth.argmax()), w)
                yy, xx = torch.meshgrid(
                    torch.arange(h, dtype=torch.float64), torch.arange(w, dtype=torch.float64), indexing="ij"
                )
                dist = torch.sqrt((yy - centre[0]) ** 2 + (xx - centre[1]) ** 2).numpy()
            key = torch.from_numpy(dist + jitter)[torch.from_numpy(tied)]
            gap = float(values[k + 1] - level) if k + 1 < len(values) else span
            spread = min(0.5 * gap, TIE_SPREAD * span)
            rank = torch.argsort(torch.argsort(key, descending=True))  # 0 = farthest, count - 1 = nearest
            new[torch.from_numpy(tied)] = level + spread * rank.double() / len(key)
        out[i] = new
    return out.to(a.dtype).to(a.device)


class Wrapper(Explainer):
    """An explainer that runs another registered method, its `base` (with its
    `base_settings`), and changes a `fraction` of something: the map (degrade)
    or the model (randomise_model). The base gets base_seeds(seeds) and the
    masks when it uses them."""

    ties = "protocol"  # map wrappers take `ties` (default compact); randomise_model changes the model, not the map

    def normalised_base(self, model, x, target, seeds=None, masks=None) -> torch.Tensor:
        """(N, H, W): the base map reduced (|.| summed over channels), min-max
        normalised and, with `ties: compact`, made strict (break_ties)."""
        a = _minmax(self.base_map(model, x, target, seeds, masks).abs().sum(1))
        return break_ties(a, seeds) if self.ties == "compact" else a

    def _set_ties(self, ties: str) -> None:
        if ties not in TIES:
            raise ValueError(f"{self.name} ties must be one of {TIES}, got {ties!r}")
        self.ties = ties

    def __init__(self, base: str, fraction: float, base_settings: dict | None = None):
        from fudbench.explainers import build_explainer

        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"{self.name} fraction must be in [0, 1], got {fraction}")
        if base == self.name:
            raise ValueError(f"{self.name} cannot wrap itself")
        self.fraction = fraction
        self.base = build_explainer(base, base_settings or {})
        self.uses_masks = self.base.uses_masks

    def prepare(self, references):
        self.base.prepare(references)

    def base_map(self, model, x, target, seeds=None, masks=None) -> torch.Tensor:
        """The base explainer's map of x under `model`."""
        kwargs = {"masks": masks} if self.uses_masks else {}
        return self.base.explain(model, x, target, seeds=base_seeds(seeds), **kwargs)


def picked_order(hw: int, seeds) -> torch.Tensor:
    """(N, hw): one seeded permutation of the pixel indices per image. Its
    first round(p * hw) entries are the pixels that degrade at level p
    changes, so the picked sets are nested across p."""
    if seeds is None:
        raise ValueError("degrade is random: pass one seed per image")
    return torch.stack([torch.randperm(hw, generator=torch.Generator().manual_seed(int(s) ^ 0x5A1F)) for s in seeds])


def shuffle_degrade(a: torch.Tensor, fraction: float, seeds) -> torch.Tensor:
    """a (N, H, W) with the values of its first round(fraction * HW) pixels of
    picked_order moved one place along that order (each picked pixel gets the
    next one's value, the last the first's). The values are kept, only where
    they sit changes; with one picked pixel nothing moves."""
    flat = a.flatten(1).clone()
    k = round(fraction * flat.shape[1])
    if k > 1:
        picked = picked_order(flat.shape[1], seeds)[:, :k].to(a.device)
        flat.scatter_(1, picked, a.flatten(1).gather(1, picked.roll(-1, dims=1)))
    return flat.view_as(a)


class Degrade(Wrapper):
    """`base` explainer (a registered name) with a fraction of its pixel scores
    shuffled among themselves (default), replaced by noise or mixed with it."""

    name = "degrade"
    MODES = ("shuffle", "replace", "mix")

    def __init__(
        self,
        base: str,
        fraction: float,
        base_settings: dict | None = None,
        mode: str = "shuffle",
        ties: str = "compact",
    ):
        if mode not in self.MODES:
            raise ValueError(f"degrade mode must be one of {self.MODES}, got {mode!r}")
        super().__init__(base, fraction, base_settings)
        self.mode = mode
        self._set_ties(ties)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None and self.ties == "compact":
            raise ValueError("degrade is random: pass one seed per image")
        a = self.normalised_base(model, x, target, seeds, masks)
        if self.mode == "shuffle":
            out = shuffle_degrade(a, self.fraction, seeds)
        elif self.mode == "mix":
            out = (1 - self.fraction) * a + self.fraction * seeded_uniform(x.shape[-2:], seeds, x.device)
        else:  # replace: which pixels, a second seeded uniform map thresholded; their values, the first
            noise = seeded_uniform(x.shape[-2:], seeds, x.device)
            picked = seeded_uniform(x.shape[-2:], [int(s) ^ 0x9E1EC7 for s in seeds], x.device) < self.fraction
            out = torch.where(picked, noise, a)
        return out.unsqueeze(1).expand_as(x).clone()


# ------------------------------------------------ scatter controls (issue 38)


def _gaussian_blur(a: torch.Tensor, sigma: float) -> torch.Tensor:
    """(N, H, W) blurred with a normalised Gaussian (radius 3 sigma), circular
    padding: no border is darker or brighter than the middle."""
    r = max(1, int(math.ceil(3 * sigma)))
    k = torch.exp(-0.5 * (torch.arange(-r, r + 1, dtype=a.dtype, device=a.device) / sigma) ** 2)
    k = k / k.sum()
    x = a.unsqueeze(1)
    x = torch.nn.functional.pad(x, (r, r, 0, 0), mode="circular")
    x = torch.nn.functional.conv2d(x, k.view(1, 1, 1, -1))
    x = torch.nn.functional.pad(x, (0, 0, r, r), mode="circular")
    return torch.nn.functional.conv2d(x, k.view(1, 1, -1, 1)).squeeze(1)


def histogram_match(a: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """a's ranking with reference's values: per image, the k-th largest pixel of
    a gets the k-th largest value of reference (same value multiset, a's order)."""
    flat, ref = a.flatten(1), reference.flatten(1)
    out = torch.empty_like(ref)
    out.scatter_(1, torch.argsort(flat, dim=1, stable=True), ref.sort(1).values)
    return out.view_as(a)


class RandomSmooth(Explainer):
    """The `random` explainer's map (same seeds: explainers.seeds.explainer_seed_name keys
    this method as `random`) smoothed with a Gaussian of `sigma` px and matched
    back to its own values: as uninformative as `random`, but its top pixels
    lie in blobs instead of scattered. random_smooth - random under a metric is
    that metric's reaction to scatter alone."""

    name = "random_smooth"

    def __init__(self, sigma: float = 2.0):
        if not sigma > 0:
            raise ValueError(f"random_smooth sigma must be > 0, got {sigma}")
        self.sigma = float(sigma)

    def explain(self, model, x, target, seeds=None):
        u = seeded_uniform(x.shape[-2:], seeds, x.device)
        return histogram_match(_gaussian_blur(u, self.sigma), u).unsqueeze(1).expand_as(x).clone()


def _image_generator(seed: int, salt: int) -> torch.Generator:
    return torch.Generator().manual_seed(int(seed) ^ salt)


def top_set(a: torch.Tensor) -> torch.Tensor:
    """(N, H, W) bool: each image's maximal pixels (within 1e-6 of its maximum)."""
    hi = a.flatten(1).max(1).values.view(-1, 1, 1)
    return a >= hi - 1e-6 * hi.abs().clamp_min(1.0)


def compact_scores(inside: torch.Tensor, seeds) -> torch.Tensor:
    """(N, H, W) in [0, 1]: inside each image's set, 1 at its deepest pixel (the
    one farthest from the set's complement, ties by a seeded jitter) falling
    with the distance to it; 0 outside. Growing the set from there keeps every
    prefix of the order a compact blob."""
    from scipy.ndimage import distance_transform_edt

    out = torch.zeros(inside.shape, dtype=torch.float32)
    h, w = inside.shape[-2:]
    yy, xx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    for i, (m, s) in enumerate(zip(inside.cpu(), seeds)):
        if not m.any():
            continue
        depth = torch.from_numpy(distance_transform_edt(m.numpy())).float()
        jitter = torch.rand((h, w), generator=_image_generator(s, 0xC0A1)) * 1e-3
        centre = int(torch.argmax(torch.where(m, depth + jitter, torch.tensor(-1.0))))
        dist = torch.sqrt((yy - centre // w) ** 2 + (xx - centre % w) ** 2) + jitter
        out[i] = torch.where(m, 1 - dist / (dist[m].max() + 1e-3), torch.tensor(0.0))
    return out


def scattered_scores(inside: torch.Tensor, seeds) -> torch.Tensor:
    """(N, H, W) in (0, 1]: inside each image's set a seeded random order; 0 outside."""
    h, w = inside.shape[-2:]
    u = torch.stack([torch.rand((h, w), generator=_image_generator(s, 0x5CA7)) * 0.999 + 0.001 for s in seeds])
    return torch.where(inside.cpu(), u, torch.tensor(0.0))


class Reorder(Wrapper):
    """`base`'s map with the order inside its top set made compact or scattered:
    the set (e.g. the oracle mask, or the background) outranks the rest as in
    the base, every other pixel keeps its score (ties broken by the
    evaluations' seeded permutation, as for the base), and within the set the
    pixels are ordered outward from its deepest pixel (`compact`) or in a
    seeded random order (`scattered`). The two members of a pair hold the same
    pixels at every level of the base's ranking: their difference under a
    metric is its reaction to the scatter of the top pixels."""

    name = "reorder"
    ORDERS = ("compact", "scattered")

    def __init__(self, base: str, order: str = "compact", base_settings: dict | None = None, ties: str = "compact"):
        if order not in self.ORDERS:
            raise ValueError(f"reorder order must be one of {self.ORDERS}, got {order!r}")
        super().__init__(base, 0.0, base_settings)
        self.order = order
        self._set_ties(ties)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None:
            raise ValueError("reorder is random: pass one seed per image")
        a = _minmax(self.base_map(model, x, target, seeds, masks).abs().sum(1))
        inside = top_set(a)
        within = (compact_scores if self.order == "compact" else scattered_scores)(inside, seeds).to(a.device)
        out = torch.where(inside, 1.0 + within.to(a.dtype), a)
        if self.ties == "compact":  # the rest (e.g. the background, all 0) by distance to the set: same for both orders
            out = break_ties(out, seeds)
        return out.unsqueeze(1).expand_as(x).clone()


def shift_offsets(shift: float, seeds) -> list[tuple[int, int]]:
    """(dy, dx) per image: `shift` px in a seeded direction, rounded to pixels.
    The direction depends on the seed only, so a family's members move the same
    way, by more at a higher level."""
    out = []
    for s in seeds:
        angle = float(torch.rand((), generator=_image_generator(s, 0x7A4)) * 2 * math.pi)
        out.append((round(shift * math.sin(angle)), round(shift * math.cos(angle))))
    return out


class Translate(Wrapper):
    """`base`'s normalised map moved by `shift` px in a seeded direction per image
    (torch.roll: circular, so the values, their histogram and the map's local
    structure are kept exactly and no border value is invented; what moves off
    one side comes back on the other, far from the object). At a larger shift
    the map's evidence sits further from where the model found it: a family of
    known order at equal scatter (analysis.meta: "{base}_shifted")."""

    name = "translate"

    def __init__(self, base: str, shift: float, base_settings: dict | None = None, ties: str = "compact"):
        if not shift >= 0:
            raise ValueError(f"translate shift must be >= 0 pixels, got {shift}")
        super().__init__(base, 0.0, base_settings)
        self.shift = float(shift)
        self._set_ties(ties)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None:
            raise ValueError("translate is random: pass one seed per image")
        a = self.normalised_base(model, x, target, seeds, masks)
        out = torch.stack(
            [torch.roll(m, shifts=off, dims=(0, 1)) for m, off in zip(a, shift_offsets(self.shift, seeds))]
        )
        return out.unsqueeze(1).expand_as(x).clone()


def inward_offsets(inside: torch.Tensor, shift: float, max_shift: float, seeds) -> list[tuple[int, int]]:
    """(dy, dx) per image: `shift` px in a seeded direction along which the set `inside` (N, H, W) moved by
    `max_shift` px stays inside the image (rejection over seeded angles; the family's members share it, so
    a set moves the same way by more at a higher level). Refused if no direction keeps it inside."""
    out = []
    h, w = inside.shape[-2:]
    for m, s in zip(inside.cpu(), seeds):
        ys, xs = torch.nonzero(m, as_tuple=True)
        if len(ys) == 0:
            raise ValueError("displace: the base map's top set is empty")
        g = _image_generator(s, 0xD15)
        for _ in range(720):
            angle = float(torch.rand((), generator=g) * 2 * math.pi)
            dy, dx = round(max_shift * math.sin(angle)), round(max_shift * math.cos(angle))
            if (
                0 <= int(ys.min()) + dy
                and int(ys.max()) + dy < h
                and 0 <= int(xs.min()) + dx
                and int(xs.max()) + dx < w
            ):
                out.append((round(shift * math.sin(angle)), round(shift * math.cos(angle))))
                break
        else:
            raise ValueError(
                f"displace: no direction keeps the set ({len(ys)} px) inside the {h}x{w} image at max_shift {max_shift}"
            )
    return out


class Displace(Wrapper):
    """The base map's top set (e.g. the planted cue's square: `oracle` on the cue data) moved by `shift` px
    without wrapping, in a seeded direction that keeps it inside the image at the family's `max_shift`,
    then made strict (break_ties: the moved set from its deepest pixel outward, every other pixel by its
    distance to the moved set). Unlike `translate` (torch.roll), nothing comes back on the far side, so a
    pixel of the original set is nearer the moved set at a smaller shift, at every rank: the keep-top set
    of every ratio holds no more of the original set at a larger shift (issue 44's design review found
    roll's wrapped values on sets near the border inverting that order)."""

    name = "displace"

    def __init__(self, base: str, shift: float, max_shift: float = 8.0, base_settings: dict | None = None):
        if not 0 <= shift <= max_shift:
            raise ValueError(f"displace shift must be in [0, max_shift = {max_shift}] pixels, got {shift}")
        super().__init__(base, 0.0, base_settings)
        self.shift, self.max_shift = float(shift), float(max_shift)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None:
            raise ValueError("displace is random: pass one seed per image")
        inside = top_set(_minmax(self.base_map(model, x, target, seeds, masks).abs().sum(1))).cpu()
        moved = torch.zeros_like(inside)
        for i, (dy, dx) in enumerate(inward_offsets(inside, self.shift, self.max_shift, seeds)):
            ys, xs = torch.nonzero(inside[i], as_tuple=True)
            moved[i, ys + dy, xs + dx] = True
        out = break_ties(moved.float(), seeds).to(x.device, x.dtype)
        return out.unsqueeze(1).expand_as(x).clone()


def block_shuffle(a: torch.Tensor, fraction: float, block: int, seeds) -> torch.Tensor:
    """a (N, H, W) with round(fraction * B) of its B block x block tiles moved one
    place along a seeded permutation of the tiles (nested across fractions,
    like shuffle_degrade for pixels); the inside of every tile is kept."""
    n, h, w = a.shape
    if h % block or w % block:
        raise ValueError(f"block_shuffle block {block} must divide the map's size {h}x{w}")
    gh, gw = h // block, w // block
    tiles = a.view(n, gh, block, gw, block).permute(0, 1, 3, 2, 4).reshape(n, gh * gw, block * block)
    k = round(fraction * gh * gw)
    if k > 1:
        picked = torch.stack([torch.randperm(gh * gw, generator=_image_generator(s, 0xB10C))[:k] for s in seeds])
        picked = picked.to(a.device)
        idx = picked.unsqueeze(-1).expand(-1, -1, block * block)
        moved = tiles.gather(1, picked.roll(-1, dims=1).unsqueeze(-1).expand(-1, -1, block * block))
        tiles = tiles.clone().scatter_(1, idx, moved)
    return tiles.view(n, gh, gw, block, block).permute(0, 1, 3, 2, 4).reshape(n, h, w)


class BlockShuffle(Wrapper):
    """`base`'s normalised map with a fraction of its block x block tiles
    shuffled among themselves as whole tiles: ranking damage that keeps the
    spatial structure inside each tile (beside the pixel shuffle of degrade,
    which also scatters the top pixels; analysis.meta: "{base}_blocks")."""

    name = "block_shuffle"

    def __init__(
        self, base: str, fraction: float, base_settings: dict | None = None, block: int = 4, ties: str = "compact"
    ):
        super().__init__(base, fraction, base_settings)
        if int(block) < 1:
            raise ValueError(f"block_shuffle block must be >= 1, got {block}")
        self.block = int(block)
        self._set_ties(ties)

    def explain(self, model, x, target, seeds=None, masks=None):
        if seeds is None:
            raise ValueError("block_shuffle is random: pass one seed per image")
        a = self.normalised_base(model, x, target, seeds, masks)
        return block_shuffle(a, self.fraction, self.block, seeds).unsqueeze(1).expand_as(x).clone()


# ------------------------------------------------ model-parameter randomisation


def parameterised_layers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The layers randomise_model counts: every module of `model.modules()` (in
    that order, duplicates once) that holds parameters of its own, i.e.
    `module.parameters(recurse=False)` is not empty: Linear, Conv, norms with
    an affine part, embeddings ..., and also a container owning bare
    nn.Parameter attributes (a ViT's class token and positional embedding).
    A parent comes before its children, so its own parameters count as the
    layer just before its first child's. Modules without parameters of their
    own (ReLU, pooling, Sequential, a BatchNorm without affine part) do not count."""
    return [m for m in model.modules() if next(m.parameters(recurse=False), None) is not None]


def reinitialise(layer: torch.nn.Module) -> None:
    """Re-draw a layer's own parameters in place (under the caller's RNG state):
    its own `reset_parameters()` if it defines one (BatchNorm's also resets its
    running statistics); otherwise each of its own parameters is redrawn from
    N(0, s^2), s = the standard deviation of the parameter's current values, or
    0.02 (the usual scale of ViT embeddings' initialisation) where it has a
    single value or they are all equal."""
    reset = getattr(layer, "reset_parameters", None)
    if callable(reset):
        reset()
        return
    with torch.no_grad():
        for p in layer.parameters(recurse=False):
            s = float(p.detach().float().std()) if p.numel() > 1 else 0.0
            p.normal_(0.0, s if s > 0 and math.isfinite(s) else 0.02)


def n_randomised(fraction: float, n_layers: int) -> int:
    """Layers re-initialised for a fraction: round(fraction * n_layers), half up."""
    return min(n_layers, int(fraction * n_layers + 0.5 + 1e-9))


def randomise_layers(model: torch.nn.Module, fraction: float, seed: int = 0) -> torch.nn.Module:
    """A deep copy of `model` whose last n_randomised(fraction, L) of its L
    parameterised_layers are re-initialised (reinitialise), in eval mode, on
    the device of the model's first parameter, every parameter's requires_grad
    as in the model. The original is not touched.

    The layers are re-drawn one after the other from the output end, on the CPU,
    from a torch RNG seeded with `seed` inside torch.random.fork_rng (the global
    CPU and CUDA RNG states are left as they were). Hence the copy does not
    depend on the device, and the randomisation cascades: for the same seed, a
    larger fraction re-draws the same values in the layers a smaller one
    re-draws, and more layers before them."""
    layers = parameterised_layers(model)
    if not layers:
        raise ValueError(
            f"randomise_model: the model ({type(model).__name__}) has no parameterised layers "
            f"(no module holds parameters of its own) to re-initialise"
        )
    device = next(model.parameters()).device
    randomised = copy.deepcopy(model).cpu()
    picked = parameterised_layers(randomised)[len(layers) - n_randomised(fraction, len(layers)) :]
    forked = (
        [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
    )
    with torch.random.fork_rng(devices=forked):
        torch.manual_seed(int(seed))
        for layer in reversed(picked):
            reinitialise(layer)
    return randomised.to(device).eval()


class RandomiseModel(Wrapper):
    """`base` explainer (a registered name) run on a copy of the model whose last
    `fraction` of parameterised layers is re-initialised (Adebayo et al. 2018,
    "Sanity checks for saliency maps", cascading model-parameter randomisation).
    Layers, their order, how each is re-drawn and the seeding: parameterised_layers,
    reinitialise, randomise_layers. fraction 0 is the trained model (the base's
    map, bit for bit), 1 re-initialises every layer.

    The base gets the per-image seeds as from degrade (base_seeds), so with the
    same seeds fraction 0 gives the map degrade's fraction 0 normalises. The
    randomised copy is built once per model object (held weakly: it goes with the
    model) and reused by every explain call; a model changed in place after the
    first call keeps its stale copy."""

    name = "randomise_model"

    def __init__(self, base: str, fraction: float, base_settings: dict | None = None, seed: int = 0):
        super().__init__(base, float(fraction), base_settings)
        self.seed = int(seed)
        self._copies: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def randomised(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model's randomised copy (built on the first call for that model)."""
        out = self._copies.get(model)
        if out is None:
            out = self._copies[model] = randomise_layers(model, self.fraction, self.seed)
        return out

    def explain(self, model, x, target, seeds=None, masks=None):
        return self.base_map(self.randomised(model), x, target, seeds, masks)
