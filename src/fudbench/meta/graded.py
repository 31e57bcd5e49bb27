"""The graded cue family's gate, from the maps alone (round five, issue 59; explainers.graded).

Checked per image before any score is read: at every kept count a protocol uses (FUD's and ROAD's
ratios and their complements, Insertion / Deletion's steps), the members' keep-top sets are the same
pixel set except at the cut, where the kept cue pixels fall strictly with the level (the order, known
for keep-top protocols; keep-bottom ones keep the complement and see the reverse); in the main arm every
member's kept set has the same outline at every count (scatter equal), in the opposing arm the outline
at the cut falls strictly with the level (the better member more scattered). An image that fails is
dropped from every cell of its family and counted in the gate table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def protocol_counts(hw: int, ratios, insdel_steps: int | None = None) -> list[int]:
    """Every kept count of the protocols: n_pixels(rho) and HW - n_pixels(rho) for each ratio (keep-top,
    keep-bottom; ROAD removes at p = 1 - rho), and the multiples of HW / insdel_steps."""
    from fudbench.core.masks import n_pixels

    counts = {n_pixels(float(r), hw) for r in ratios} | {hw - n_pixels(float(r), hw) for r in ratios}
    if insdel_steps:
        counts |= {round(i * hw / insdel_steps) for i in range(insdel_steps + 1)}
    return sorted(c for c in counts if 0 < c < hw)


def keep_top(values: np.ndarray, k: int) -> np.ndarray:
    """(H, W) bool: the k highest pixels (descending, stable: the protocols' order)."""
    kept = np.zeros(values.size, bool)
    kept[np.argsort(-values.ravel(), kind="stable")[:k]] = True
    return kept.reshape(values.shape)


def outline(kept: np.ndarray) -> int:
    """4-neighbour pixel pairs inside the image that straddle the kept set's edge."""
    return int((kept[1:] != kept[:-1]).sum() + (kept[:, 1:] != kept[:, :-1]).sum())


def graded_gate(members: list[np.ndarray], cue: np.ndarray, counts, cut: int, arm: str = "equal") -> pd.DataFrame:
    """members: the family's maps (N, H, W), best (level 0) first; cue (N, H, W) bool. One row per image:
    the kept cue pixels of each member at the cut, `ordered` (strictly falling with the level),
    `same_elsewhere` (one kept set at every other count), `outlines_at_cut`, `scatter_ok` (equal at every
    count in the main arm; strictly falling with the level at the cut in the opposing arm) and `passes`."""
    if arm not in ("equal", "opposing"):
        raise ValueError(f"arm must be 'equal' or 'opposing', got {arm!r}")
    if cut not in counts:
        raise ValueError(f"the cut ({cut} pixels) is not among the protocols' kept counts: no protocol sees it")
    rows = []
    for i in range(len(cue)):
        maps = [m[i] for m in members]
        at_cut = [keep_top(v, cut) for v in maps]
        kept_cue = [int((s & cue[i]).sum()) for s in at_cut]
        ordered = all(a > b for a, b in zip(kept_cue, kept_cue[1:]))
        same, equal_outline = True, True
        for k in counts:
            sets = [keep_top(v, k) for v in maps]
            if k != cut and not all((s == sets[0]).all() for s in sets):
                same = False
            if len({outline(s) for s in sets}) > 1:
                equal_outline = False
        outlines = [outline(s) for s in at_cut]
        scatter_ok = equal_outline if arm == "equal" else all(a > b for a, b in zip(outlines, outlines[1:]))
        rows.append(
            {
                "image": i,
                "kept_cue_at_cut": kept_cue,
                "ordered": ordered,
                "same_elsewhere": same,
                "outlines_at_cut": outlines,
                "scatter_ok": scatter_ok,
                "passes": ordered and same and scatter_ok,
            }
        )
    return pd.DataFrame(rows)
