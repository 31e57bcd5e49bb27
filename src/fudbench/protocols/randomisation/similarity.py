"""How alike two maps are, per image: Spearman rank correlation and SSIM of (H, W) pixel maps.

The first map of a pair is the reference (the explainer's map of the trained model and true class), the
second the map made again (randomised model, other class). Both give 1 for identical maps, including two
equal constant maps (whose correlation would be 0/0: the same ranking, all tied). A varying reference
against a constant map made again has no rank relation: 0. A constant reference (a dead map, e.g. all
zero) has no pattern to lose: the check is undefined there, NaN, never a pass.

SSIM compares each map divided by its largest |value| (Quantus' `normalise=True` default): SSIM depends on
scale, and randomising one layer shrinks gradient maps 10-1000x, which raw SSIM reads as a lost pattern
(a map whose pattern ignores the model and whose scale follows it would pass; Spearman is scale-free).
"""

from __future__ import annotations

import torch

# SSIM as Wang et al. 2004 and skimage.metrics.structural_similarity's defaults (which Quantus' `ssim`
# calls): a 7 x 7 uniform window inside the image (no padding), sample covariances, K1 0.01, K2 0.03, the
# data range the two maps' joint max - min (Quantus' choice).
SSIM_WINDOW, SSIM_K1, SSIM_K2 = 7, 0.01, 0.03


def _ranks(v: torch.Tensor) -> torch.Tensor:
    """(B, d) average ranks of each row (ties share the mean of their ranks), float64."""
    v = v.double()
    order = v.argsort(dim=1, stable=True)
    sorted_v = v.gather(1, order)
    position = torch.arange(v.shape[1], dtype=torch.float64, device=v.device).expand_as(v)
    ranks = torch.empty_like(v)
    for b in range(v.shape[0]):  # tie groups: mean position per run of equal sorted values
        _, inverse, counts = torch.unique_consecutive(sorted_v[b], return_inverse=True, return_counts=True)
        sums = torch.zeros(len(counts), dtype=torch.float64, device=v.device).index_add_(0, inverse, position[b])
        ranks[b, order[b]] = (sums / counts)[inverse]
    return ranks


def spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(B,) Spearman correlation of each pair of rows of (B, ...) tensors (1 for two equal constant rows, 0
    for a varying reference `a` against a constant `b`, NaN for a constant reference against a varying `b`)."""
    ra, rb = _ranks(a.flatten(1)), _ranks(b.flatten(1))
    ra, rb = ra - ra.mean(1, keepdim=True), rb - rb.mean(1, keepdim=True)
    na, nb = ra.norm(dim=1), rb.norm(dim=1)
    rho = (ra * rb).sum(1) / (na * nb).clamp(min=1e-300)
    constant_a, constant_b = na == 0, nb == 0
    rho = torch.where(constant_b, 0.0, rho)
    return torch.where(constant_a, torch.where(constant_b, 1.0, torch.nan), rho)


def ssim(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(B,) mean structural similarity of each pair of (B, H, W) maps, each divided by its largest |value|
    (window SSIM_WINDOW, or the largest odd size the image allows); 1 for identical maps, NaN for a
    constant reference `a` against a varying `b`."""
    a, b = _by_max(a.double()).unsqueeze(1), _by_max(b.double()).unsqueeze(1)
    win = min(SSIM_WINDOW, a.shape[-1], a.shape[-2])
    win -= 1 - win % 2
    lo = torch.minimum(a.flatten(1).amin(1), b.flatten(1).amin(1))
    hi = torch.maximum(a.flatten(1).amax(1), b.flatten(1).amax(1))
    data_range = (hi - lo).view(-1, 1, 1, 1)
    c1, c2 = (SSIM_K1 * data_range) ** 2, (SSIM_K2 * data_range) ** 2

    def mean(v):
        return torch.nn.functional.avg_pool2d(v, win, stride=1)

    n = win * win
    cov_norm = n / (n - 1) if n > 1 else 1.0
    mu_a, mu_b = mean(a), mean(b)
    var_a = cov_norm * (mean(a * a) - mu_a**2)
    var_b = cov_norm * (mean(b * b) - mu_b**2)
    cov = cov_norm * (mean(a * b) - mu_a * mu_b)
    num = (2 * mu_a * mu_b + c1) * (2 * cov + c2)
    den = (mu_a**2 + mu_b**2 + c1) * (var_a + var_b + c2)
    value = (num / den).flatten(1).mean(1)
    same = (a == b).flatten(1).all(1)  # also two equal constant maps, where c1 = c2 = 0 gives 0/0
    flat = a.flatten(1)
    dead = (flat == flat[:, :1]).all(1)  # a constant reference: nothing to compare
    return torch.where(same, 1.0, torch.where(dead, torch.nan, value))


def _by_max(v: torch.Tensor) -> torch.Tensor:
    """Each (H, W) map divided by its largest |value| (an all-zero map stays zero)."""
    top = v.flatten(1).abs().amax(1).view(-1, 1, 1)
    return v / torch.where(top > 0, top, 1.0)
