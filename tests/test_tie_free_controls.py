"""Tie-free controls (issue 44): no family member of any profile leaves ties for an evaluation to break
at random, and the rule that breaks them (explainers.controlled.break_ties) is the documented one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from fudbench.config.files import resolve_config
from fudbench.explainers import build_explainer
from fudbench.explainers.controlled import TIE_SPREAD, break_ties

REPO = Path(__file__).resolve().parents[1]
MAP_WRAPPERS = ("degrade", "reorder", "translate", "block_shuffle", "displace")
# profiles as they are run: overlays stacked as their headers say
PROFILES = {
    "default": [],
    "smoke": ["config/smoke.yaml"],
    "meta": ["config/meta.yaml"],
    "endpoint": ["studies/round3_endpoint/endpoint.yaml"],
    "cue": ["studies/planted_cue/cue.yaml"],
    "round4": ["studies/planted_cue/cue.yaml", "studies/round4/round4.yaml"],
}


def _binary_masks(n: int, size: int = 16) -> torch.Tensor:
    m = torch.zeros(n, size, size)
    for i in range(n):
        m[i, 2 + i : 9 + i, 3 : 10 + i] = 1  # objects of different sizes and places
    return m


def test_binary_mask_becomes_a_strict_compact_order():
    m = _binary_masks(2)
    out = break_ties(m, seeds=[11, 12])
    for o, mask in zip(out, m):
        flat, inside = o.flatten(), mask.flatten().bool()
        assert len(torch.unique(flat)) == flat.numel()  # no ties left
        assert flat[inside].min() > flat[~inside].max()  # the mask's pixels still come first
        assert (o - mask).abs().max() <= TIE_SPREAD * 1.0 + 1e-6  # values move by at most the spread
        # outside: a background pixel nearer the object outranks a farther one
        from scipy.ndimage import distance_transform_edt

        dist = torch.from_numpy(distance_transform_edt(~mask.bool().numpy())).flatten()
        near, far = (dist[~inside] <= 1.0), (dist[~inside] >= 3.0)
        assert flat[~inside][near].min() > flat[~inside][far].max()
        # inside: the kept set at 25% of the object is one compact blob (within 2 px of its centre's span)
        k = int(inside.sum()) // 4
        top = torch.topk(flat, k).indices
        ys, xs = top // 16, top % 16
        assert (ys.max() - ys.min()) <= 2 * int(k**0.5) and (xs.max() - xs.min()) <= 2 * int(k**0.5)


def test_map_without_ties_is_unchanged_and_seed_fixes_equal_distances():
    torch.manual_seed(0)
    a = torch.rand(3, 16, 16)
    assert torch.equal(break_ties(a, [1, 2, 3]), a)
    m = _binary_masks(1)
    assert torch.equal(break_ties(m, [5]), break_ties(m, [5]))  # deterministic per image seed
    with pytest.raises(ValueError, match="one seed per image"):
        break_ties(m, None)


def test_ties_protocol_keeps_the_binary_map():
    x = torch.rand(2, 3, 16, 16)
    masks = _binary_masks(2)
    binary = build_explainer("t", {"method": "translate", "base": "oracle", "shift": 0, "ties": "protocol"})
    strict = build_explainer("t", {"method": "translate", "base": "oracle", "shift": 0})
    a = binary.explain(None, x, torch.zeros(2, dtype=torch.long), seeds=[1, 2], masks=masks)[:, 0]
    b = strict.explain(None, x, torch.zeros(2, dtype=torch.long), seeds=[1, 2], masks=masks)[:, 0]
    assert len(torch.unique(a[0])) == 2 and len(torch.unique(b[0])) == 256
    assert torch.equal(a, masks)  # shift 0, protocol ties: the mask itself
    with pytest.raises(ValueError, match="ties must be one of"):
        build_explainer("t", {"method": "translate", "base": "oracle", "shift": 0, "ties": "random"})


def _family_members():
    for profile, files in PROFILES.items():
        config = resolve_config([str(REPO / f) for f in files])
        for name, settings in config["explainers"].items():
            if (settings or {}).get("method") in MAP_WRAPPERS:
                yield pytest.param(name, settings, id=f"{profile}:{name}")


@pytest.mark.parametrize("name,settings", list(_family_members()))
def test_every_family_member_of_every_profile_is_tie_free(name, settings, tiny_cnn):
    """Each profile's family members on 8 px images of a tiny CNN, with binary masks as the oracle:
    every image's map has as many distinct values as pixels, so no evaluation breaks a tie at random."""
    assert settings.get("ties", "compact") == "compact", f"{name}: a family member must not leave ties"
    settings = dict(settings)
    if settings.get("method") == "block_shuffle":
        settings["block"] = 2  # 8 px images
    torch.manual_seed(0)
    size = 32 if settings.get("method") == "displace" else 8  # a displaced set needs room to move
    x = torch.rand(3, 3, size, size)
    y = tiny_cnn(x).argmax(1)
    explainer = build_explainer(name, {k: v for k, v in settings.items()})
    masks = _binary_masks(3, 16)[:, :8, :8] if size == 8 else torch.zeros(3, size, size)
    if size != 8:
        for i in range(3):
            masks[i, 4 * i : 4 * i + 4, 6:10] = 1  # cue-like 4 x 4 squares
    kwargs = {"masks": masks} if explainer.uses_masks else {}
    a = explainer.explain(tiny_cnn, x, y, seeds=[3, 4, 5], **kwargs).detach().abs().sum(1)
    for m in a:
        assert len(torch.unique(m)) == m.numel(), f"{name}: ties left in its map"
