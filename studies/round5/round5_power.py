"""Round five's power calculation (studies/round5/README.md, "Sizes"), from round four's per-image files.

    ./fud python studies/round5/round5_power.py --out studies/round5/results

For each model of round four's primary run (cnn, vit) and each pair of the seven ranked curves (FUD
keep-top, bottom, symmetric, Insertion, Deletion, ROAD MoRF, ROAD LeRF: 21 pairs), the per-image
difference of recoveries r_i on the block family (the family closest to a graded one that ran) is
centred, shifted to a true difference delta and resampled at n images; the registered statistic
(inference.mean_interval, bounds (-2, 2)) decides it at Holm's first step (p < 0.05 / 21, the hardest
step). Power = the share of 2000 resamples decided. Writes power.csv (per model, pair, delta, n) and
prints the per-image SDs and the smallest n with power >= 0.8 for the median pair and the worst pair.

With `--pilot FILE --candidate NAME` the per-image recoveries come instead from the pilot of the graded
family itself (round5_pilot_readout.py's per_image_recovery.csv, the picked grading): few images, so a
coarse estimate, written as power_pilot.csv / per_image_sd_pilot.csv.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "studies" / "round4"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.stats import t as student_t  # noqa: E402

from fudbench.core.io import write_csv  # noqa: E402
from fudbench.meta.inference import PSEUDO_WEIGHT, mean_interval  # noqa: E402

import round4_corrections as r4  # noqa: E402  (its per-image recovery)

CURVES = ("fud", "fud_bottom", "fud_symmetric", "insertion", "deletion", "road_morf", "road_lerf")
PAIRS = list(itertools.combinations(CURVES, 2))
ALPHA = 0.05 / len(PAIRS)


def p_values(samples: np.ndarray, bounds=(-2.0, 2.0)) -> np.ndarray:
    """mean_interval's two-sided p of each row (vectorised: the same variance with two pseudo-observations)."""
    reps, n = samples.shape
    lo, hi = bounds
    w_sum = n + 2 * PSEUDO_WEIGHT
    centre = (samples.sum(1) + PSEUDO_WEIGHT * (lo + hi)) / w_sum
    ss = ((samples - centre[:, None]) ** 2).sum(1) + PSEUDO_WEIGHT * ((lo - centre) ** 2 + (hi - centre) ** 2)
    se = np.sqrt(ss / (w_sum - 1) / n)
    return 2 * student_t.sf(np.abs(samples.mean(1)) / se, n - 1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--n", type=int, nargs="+", default=[32, 48, 64, 96, 128])
    ap.add_argument("--delta", type=float, nargs="+", default=[0.15, 0.2])
    ap.add_argument("--pilot", help="round5_pilot_readout.py's per_image_recovery.csv (else round four's block family)")
    ap.add_argument("--candidate", help="with --pilot: the grading whose recoveries are used")
    args = ap.parse_args(argv)
    caller = Path(os.environ.get("FUD_CALLER_CWD", "."))
    out = caller / args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.pilot:
        if not args.candidate:
            ap.error("--pilot needs --candidate (a grading named in the file)")
        pilot = pd.read_csv(caller / args.pilot)
        pilot = pilot[pilot["candidate"] == args.candidate]
        if pilot.empty:
            ap.error(f"no rows of candidate {args.candidate!r} in {args.pilot}")

        def recoveries(model):
            return pilot[pilot["model"] == model].pivot_table(index="image", columns="curve", values="r")

        suffix = "_pilot"
    else:
        primary = pd.read_parquet(REPO / "studies/round4/results/per_image_primary.parquet")
        members = r4.FAMILIES["oracle_blocks"]

        def recoveries(model):
            return pd.concat({c: r4.recovery(primary, model, c, members) for c in CURVES}, axis=1)

        suffix = ""
    rng = np.random.default_rng(59)
    # the vectorised p equals mean_interval's on a sample
    check = rng.uniform(-1, 1, 40)
    assert abs(p_values(check[None])[0] - mean_interval(check, (-2.0, 2.0))[3]) < 1e-9
    rows, sds = [], []
    for model in ("cnn", "vit"):
        rec = recoveries(model)[list(CURVES)].dropna()
        for a, b in PAIRS:
            d = (rec[a] - rec[b]).to_numpy()
            sds.append({"model": model, "pair": f"{a} - {b}", "sd": float(d.std(ddof=1)), "mean": float(d.mean())})
            centred = d - d.mean()
            for delta in args.delta:
                for n in args.n:
                    idx = rng.integers(0, len(d), (args.reps, n))
                    samples = np.clip(centred[idx] + delta, -2.0, 2.0)
                    power = float((p_values(samples) < ALPHA).mean())
                    rows.append({"model": model, "pair": f"{a} - {b}", "delta": delta, "n": n, "power": power})
    power = pd.DataFrame(rows)
    sd = pd.DataFrame(sds)
    write_csv(out / f"power{suffix}.csv", power, index=False, float_format="%.4f")
    write_csv(out / f"per_image_sd{suffix}.csv", sd, index=False, float_format="%.4f")
    print(sd.groupby("model")["sd"].describe().to_string(float_format=lambda x: f"{x:.3f}"))
    summary = power.groupby(["model", "delta", "n"])["power"].agg(["median", "min"]).reset_index()
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
