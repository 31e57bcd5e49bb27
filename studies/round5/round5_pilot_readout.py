"""Round five's pilot read (studies/round5/README.md, "Pilot"): which candidate grading the registered
rule picks, from the pilot's finished run.

    ./fud python studies/round5/round5_pilot_readout.py --results results/round5_pilot --out studies/round5/results/pilot

The pilot ran every main-arm member whose window is not a whole line (shifts 1-3, 5-7, 9-11, 13-15:
one outline for all). Each candidate grading (CANDIDATES, written down before the pilot was read) is a
subset of them. Per candidate, model and ranked curve, on the images the map gate passes for that
subset: the per-image recovery (Spearman of the oriented scores with the known order), the share of
images ordered perfectly and the share at the floor (r <= 0). A candidate is usable where, on both
models, no more than two of the seven ranked curves order it perfectly on >= 90% of the images and none
is at the floor on every image; the rule picks among the usable ones the largest step, then the most
members, then the fewest curves at >= 90% perfect (both models summed), then the list's order.

Beside it: the check that the ratios other than the cut add the same to every member (the largest
difference of FUD's confidence between members at kept 0.4 and 0.6, per model and curve).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

# (name, step in cue pixels, shifts): written before the pilot was read (README, "Pilot")
CANDIDATES = [
    ("4 px, upper", 4, [1, 5, 9, 13]),
    ("4 px, lower", 4, [2, 6, 10, 14]),
    ("2 px, upper", 2, [1, 3, 5, 7, 9]),
    ("2 px, lower", 2, [5, 7, 9, 11, 13]),
    ("1-2 px, upper", 1, [1, 2, 3, 5, 6]),
    ("1-2 px, lower", 1, [9, 10, 11, 13, 14]),
]
PERFECT, MAX_AT_CEILING = 0.9, 2


def member(shift: int) -> str:
    return f"cue_p{shift:02d}"


def candidate_table(
    per_image: pd.DataFrame, maps: dict, cue: np.ndarray, counts, cut: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per candidate, model and ranked curve; the per-image recoveries behind them).
    maps: {model: (ids, {member: (N, H, W)})}."""
    import round5_analysis as r5

    from fudbench.meta.claims import per_image_recovery
    from fudbench.meta.graded import graded_gate

    rows, per = [], []
    for name, step, shifts in CANDIDATES:
        members = [member(s) for s in shifts]
        for model, (ids, by_member) in maps.items():
            g = graded_gate([by_member[m] for m in members], cue[ids], counts, cut, "equal")
            ok = set(np.asarray(ids)[g["passes"].to_numpy()].tolist())
            for curve in r5.RANKED:
                sign = 1.0 if r5.higher_is_better(curve) else -1.0
                r = per_image_recovery(per_image, model, curve, sign, members, [float(s) for s in shifts], "total")
                r = r[[i in ok for i in r.index]]
                per += [
                    {"candidate": name, "model": model, "curve": curve, "image": int(i), "r": float(v)}
                    for i, v in r.items()
                ]
                rows.append(
                    {
                        "candidate": name,
                        "step": step,
                        "members": len(members),
                        "model": model,
                        "curve": curve,
                        "images": len(r),
                        "gate_dropped": len(ids) - len(ok),
                        "recovery": float(r.mean()),
                        "sd": float(r.std(ddof=1)),
                        "perfect": float((r > 1 - 1e-9).mean()),
                        "floor_every_image": bool((r <= 0).all()),
                    }
                )
    return pd.DataFrame(rows), pd.DataFrame(per)


def pick(table: pd.DataFrame) -> pd.DataFrame:
    """Per candidate: curves at >= 90% perfect per model, any at the floor, usable, and the rule's pick."""
    rows = []
    for (name, step, n), d in table.groupby(["candidate", "step", "members"], sort=False):
        row = {"candidate": name, "step": step, "members": n}
        usable = True
        for model, m in d.groupby("model", sort=True):
            at_ceiling = int((m["perfect"] >= PERFECT).sum())
            floor = int(m["floor_every_image"].sum())
            row[f"{model}_curves_at_90pct_perfect"] = at_ceiling
            row[f"{model}_curves_at_floor"] = floor
            usable &= at_ceiling <= MAX_AT_CEILING and floor == 0
        row["usable"] = usable
        row["ceiling_total"] = sum(v for k, v in row.items() if k.endswith("_perfect"))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["order"] = range(len(out))
    ranked = out[out["usable"]].sort_values(
        ["step", "members", "ceiling_total", "order"], ascending=[False, False, True, True]
    )
    out["picked"] = out["candidate"] == (ranked["candidate"].iloc[0] if len(ranked) else None)
    return out.drop(columns="order")


def other_ratios_check(results: Path, models, members) -> pd.DataFrame:
    """Largest |confidence difference| between members at the kept fractions other than the cut."""
    rows = []
    for model in models:
        parts = [
            pd.read_parquet(f)
            for m in members
            for f in sorted((results / "records" / model / m / "fud").glob("*.parquet"))
        ]
        if not parts:
            continue
        rec = pd.concat(parts, ignore_index=True)
        for curve, d in rec.groupby("curve"):
            for kept, k in d.groupby(d["kept"].round(2)):
                w = k.pivot_table(index="image", columns="explainer", values="confidence")
                rows.append(
                    {
                        "model": model,
                        "curve": curve,
                        "kept": kept,
                        "max_member_spread": float((w.max(axis=1) - w.min(axis=1)).max()),
                    }
                )
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    import round5_analysis as r5

    from fudbench.config.files import resolve_config
    from fudbench.core.io import load_npz, write_csv
    from fudbench.core.masks import n_pixels
    from fudbench.meta.graded import protocol_counts

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results/round5_pilot")
    ap.add_argument("--out", default="studies/round5/results/pilot")
    args = ap.parse_args(argv)
    caller = Path(os.environ.get("FUD_CALLER_CWD", "."))
    results, out = caller / args.results, caller / args.out
    out.mkdir(parents=True, exist_ok=True)
    _, overlays, _ = r5.RUNS["pilot"]
    config = resolve_config([str(REPO / f) for f in (r5.CUE, *overlays)])
    members = sorted({member(s) for _, _, shifts in CANDIDATES for s in shifts})
    cue = load_npz(results / "data" / "eval.npz")["masks"].astype(bool)
    hw = cue.shape[1] * cue.shape[2]
    counts = protocol_counts(
        hw, config["evaluation"]["ratios"], (config["evaluators"].get("insdel") or {}).get("n_steps")
    )
    maps = {}
    for model in config["models"]["classifiers"]:
        ids, arrays = r5.member_maps(results, config, model, members)
        maps[model] = (ids, dict(zip(members, arrays)))
    per_image = pd.read_parquet(results / "analysis" / "per_image.parquet")
    table, per = candidate_table(per_image, maps, cue, counts, n_pixels(0.5, hw))
    picked = pick(table)
    check = other_ratios_check(results, list(maps), members)
    write_csv(out / "candidates.csv", table, index=False, float_format="%.4f")
    write_csv(out / "pick.csv", picked, index=False)
    write_csv(out / "per_image_recovery.csv", per, index=False, float_format="%.4f")
    write_csv(out / "other_ratios.csv", check, index=False, float_format="%.3g")
    pd.set_option("display.width", 200)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    print()
    print(picked.to_string(index=False))
    print()
    print(check.to_string(index=False))


if __name__ == "__main__":
    main()
