"""Simulated operating characteristics of round four's statistics (studies/round4/README.md).

Per image, a family of five members (levels 0..4, less is better) gets scores s_m = -beta m + e_m under
each of two metrics, e ~ N(0, 1), the second metric's noise correlated c with the first's (same images,
maps and part of the noise). r_i = Spearman(s, -m) per metric; d_i = r_A,i - r_B,i in [-2, 2]. For each
(beta_A, beta_B, c) the true mean of d comes from 200,000 images; then, over `reps` simulated runs of n
images, this prints the coverage and the mean width of inference.mean_interval at 95% (the endpoint's
interval) and at 90% (the equivalence check's two one-sided tests), and the share of runs that
 - decide the difference (95% interval excludes 0: the endpoint's per-cell decision before Holm), and
 - call the two metrics equivalent within the margin (90% interval inside [-margin, margin]).

    ./fud python studies/round4/round4_simulation.py --n 32 64 --margin 0.25 --reps 2000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))  # studies/round4/this file
from fudbench.meta.inference import mean_interval  # noqa: E402

LEVELS = np.arange(5)


def recoveries(scores: np.ndarray) -> np.ndarray:
    """Per row, Spearman of the scores with -level (ties in scores have probability 0)."""
    ranks = scores.argsort(1).argsort(1).astype(float)
    target = (-LEVELS).argsort().argsort().astype(float)
    rc, tc = ranks - ranks.mean(1, keepdims=True), target - target.mean()
    return (rc * tc).sum(1) / np.sqrt((rc**2).sum(1) * (tc**2).sum())


def draw(rng, n: int, beta_a: float, beta_b: float, c: float) -> np.ndarray:
    e_a = rng.standard_normal((n, len(LEVELS)))
    e_b = c * e_a + np.sqrt(1 - c**2) * rng.standard_normal((n, len(LEVELS)))
    return recoveries(-beta_a * LEVELS + e_a) - recoveries(-beta_b * LEVELS + e_b)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--margin", type=float, default=0.25)
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    cases = [
        (0.3, 0.3, 0.5),
        (0.3, 0.3, 0.8),
        (0.6, 0.6, 0.5),
        (0.3, 0.2, 0.5),
        (0.5, 0.3, 0.5),
        (0.6, 0.3, 0.3),
        (1.0, 0.5, 0.5),
        (0.2, 0.0, 0.5),
        (1.5, 1.5, 0.0),
    ]
    print(
        f"{'beta_a':>6} {'beta_b':>6} {'c':>4} {'true':>7} {'n':>4} {'cov95':>6} {'w95':>6} {'cov90':>6} "
        f"{'w90':>6} {'decided':>7} {'equiv':>6}"
    )
    for beta_a, beta_b, c in cases:
        truth = draw(rng, 200_000, beta_a, beta_b, c).mean()
        for n in args.n:
            hit95 = hit90 = decided = equiv = 0
            w95 = w90 = 0.0
            for _ in range(args.reps):
                d = draw(rng, n, beta_a, beta_b, c)
                _, lo, hi, _ = mean_interval(d, bounds=(-2, 2), ci=0.95)
                _, lo90, hi90, _ = mean_interval(d, bounds=(-2, 2), ci=0.90)
                hit95 += lo <= truth <= hi
                hit90 += lo90 <= truth <= hi90
                w95 += hi - lo
                w90 += hi90 - lo90
                decided += lo > 0 or hi < 0
                equiv += lo90 >= -args.margin and hi90 <= args.margin
            r = args.reps
            print(
                f"{beta_a:6.2f} {beta_b:6.2f} {c:4.1f} {truth:+7.3f} {n:4d} {hit95 / r:6.3f} {w95 / r:6.3f} "
                f"{hit90 / r:6.3f} {w90 / r:6.3f} {decided / r:7.3f} {equiv / r:6.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
