"""Round five's pilot read from its FUD records as they stand (studies/round5/README.md, "Pilot"): the
evaluate job writes each map's records when the map is done, so a pilot stopped early is read per map.

    ./fud python studies/round5/round5_pilot_readout.py --results results/round5_pilot

Per model and curve (fud keep-top, fud_bottom) with every main-arm member's records present: each image's
oriented score at the cut (the members differ only there) and its AUC over the ratios (the curve's mean
confidence), the per-image Spearman with the known order on the images the map gate passes, the share of
images perfectly ordered and at the floor (r <= 0),.
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
from scipy.stats import spearmanr  # noqa: E402

MEMBERS = ["cue_g0", "cue_g1", "cue_g2", "cue_g3", "cue_g4"]
CURVES = {"fud": 1.0, "fud_bottom": -1.0}


def main(argv=None) -> None:
    import round5_analysis as r5
    from fudbench.config.files import resolve_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default="results/round5_pilot")
    ap.add_argument("--cut", type=float, default=0.5)
    args = ap.parse_args(argv)
    results = Path(os.environ.get("FUD_CALLER_CWD", ".")) / args.results
    folder, overlays, _ = r5.RUNS["pilot"]
    config = resolve_config([str(REPO / f) for f in (r5.CUE, *overlays)])
    gate, _ = r5.gate(results, config)
    rows = []
    for model in config["models"]["classifiers"]:
        files = [results / "records" / model / m / "fud" / "shard0.parquet" for m in MEMBERS]
        if not all(f.is_file() for f in files):
            print(f"{model}: main-arm FUD records not all written yet ({sum(f.is_file() for f in files)} of 5)")
            continue
        rec = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        ok = set(gate[(gate["model"] == model) & (gate["family"] == "oracle_graded") & gate["passes"]]["image"])
        for curve, sign in CURVES.items():
            d = rec[rec["curve"] == curve]
            at_cut = d[np.isclose(d["kept"], args.cut, atol=0.01)].pivot_table(
                index="image", columns="explainer", values="confidence"
            )
            auc = d.pivot_table(index="image", columns="explainer", values="confidence", aggfunc="mean")
            for what, w in (("at the cut", at_cut), ("AUC", auc)):
                w = sign * w.reindex(columns=MEMBERS).loc[sorted(ok & set(w.index))]
                r = np.array([spearmanr(row, -np.arange(5))[0] if np.ptp(row) > 0 else 0.0 for row in w.to_numpy()])
                rows.append(
                    {
                        "model": model,
                        "curve": curve,
                        "score": what,
                        "images": len(r),
                        "recovery": r.mean(),
                        "perfect": (r > 1 - 1e-9).mean(),
                        "floor": (r <= 0).mean(),
                        "per_image": np.round(r, 2).tolist(),
                    }
                )
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
