"""How far Quantus' metrics agree with this project's own implementation of the
same or a related method, on the same model, images, maps and seeds.

    ./fud python bench/quantus_agreement.py [--images 16] [--explainers ig sm random] [--csv out.csv]

The shipped synthetic CNN (assets/) on the default benchmark's first test
images, maps of a few explainers, then per pair of (Quantus metric, built-in
curve): Spearman's rho over all (explainer, image) scores, the explainers'
ranking by each (mean over images) and Kendall's tau between the two
rankings, both signed so that +1 means the two agree on what is better.
Pairs: PixelFlipping vs RISE deletion (zero fill, both lower better; Quantus
flips features in steps of a fixed size from the black baseline), Selectivity
vs SRG's MIF (superpixels / patches removed most relevant first, lower
better), RegionPerturbation vs ROAD MoRF (regions vs pixels removed, AOPC vs
area; opposite directions), Infidelity vs infid (Quantus: unnormalised
square error with patch perturbations; ours: captum's, normalize=True, the
FUD authors' perturbation), FaithfulnessCorrelation vs Sensitivity-N (both a
correlation of attribution sums with output drops over random subsets).
Prints the machine, the table and the seconds per image of each metric.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
import torch
from scipy.stats import kendalltau, spearmanr

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from fudbench.analysis.curves import per_image_scores  # noqa: E402
from fudbench.config.validate import load_config  # noqa: E402
from fudbench.data.synthetic import make_benchmark  # noqa: E402
from fudbench.evaluators import build_evaluator, configured_curves  # noqa: E402
from fudbench.explainers import build_explainer  # noqa: E402
from fudbench.core.hardware import describe_machine  # noqa: E402
from fudbench.models.classifiers import load_classifier  # noqa: E402

QUANTUS = {
    "qt_pf": {"method": "quantus", "metric": "PixelFlipping", "settings": {"features_in_step": 32}},
    "qt_sel": {"method": "quantus", "metric": "Selectivity", "settings": {"patch_size": 4}},
    "qt_rp": {
        "method": "quantus",
        "metric": "RegionPerturbation",
        "settings": {"patch_size": 4, "regions_evaluation": 16},
    },
    "qt_inf": {
        "method": "quantus",
        "metric": "Infidelity",
        "settings": {"n_perturb_samples": 32, "perturb_patch_sizes": [4]},
    },
    "qt_fc": {"method": "quantus", "metric": "FaithfulnessCorrelation", "settings": {"nr_runs": 50, "subset_size": 32}},
}
# (Quantus entry, its curve, built-in entry, its curve)
PAIRS = [
    ("qt_pf", "quantus_pixel_flipping@qt_pf", "insdel", "deletion"),
    ("qt_sel", "quantus_selectivity@qt_sel", "srg", "srg_mif__mean"),
    ("qt_rp", "quantus_region_perturbation@qt_rp", "road", "road_morf"),
    ("qt_inf", "quantus_infidelity@qt_inf", "infid", "infidelity"),
    ("qt_fc", "quantus_faithfulness_correlation@qt_fc", "sensn", "sensitivity_n"),
]


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--explainers", nargs="+", default=["ig", "sm", "random"])
    ap.add_argument("--csv", type=Path)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    config = load_config(REPO / "config/config.yaml")
    print(f"# {describe_machine('cpu')}")
    data = make_benchmark(config["data"]["synthetic"], n_eval=args.images, seed=config["seed"])["splits"]["eval"]
    x = torch.from_numpy(data["images"]).float() / 255
    model = load_classifier(REPO / config["models"]["classifiers"]["cnn"]["shipped"])
    with torch.no_grad():
        y = model(x).argmax(1)
    ids = list(range(args.images))
    evaluation = {"ratios": config["evaluation"]["ratios"], "reduction": config["evaluation"]["reduction"]}
    builtin = {e: {k: v for k, v in config["evaluators"][e].items() if k != "imputer_options"} for _, _, e, _ in PAIRS}
    builtin["srg"] = {
        **config["evaluators"]["srg"],
        "imputers": ["mean"],
        "imputer_options": {"mean": {"mean": [0.0] * 3}},
    }
    entries = {**QUANTUS, **builtin}
    frames, seconds = [], {}
    for explainer in args.explainers:
        explain = build_explainer(explainer, dict(config["explainers"].get(explainer, {})))
        explain.prepare(x)
        a = explain.explain(model, x, y, seeds=ids).detach()
        for name, settings in entries.items():
            t0 = time.perf_counter()
            records, _ = build_evaluator(name, settings, evaluation, {}, "cpu").run(
                model, x, y, a, ids, (config["seed"], "evaluate", "cnn", name)
            )
            seconds[name] = seconds.get(name, 0.0) + (time.perf_counter() - t0) / (len(ids) * len(args.explainers))
            frames.append(records.assign(model="cnn", explainer=explainer))
    per_image = per_image_scores(pd.concat(frames, ignore_index=True))
    curves = configured_curves(entries)
    rows = []
    for q, q_curve, b, b_curve in PAIRS:
        s = per_image.pivot_table(index=["explainer", "image"], columns="curve", values="score")
        # orient both so that higher = better
        qs = s[q_curve] * (1 if curves[q_curve].higher_is_better else -1)
        bs = s[b_curve] * (1 if curves[b_curve].higher_is_better else -1)
        rho = spearmanr(qs, bs).statistic
        qm, bm = qs.groupby("explainer").mean(), bs.groupby("explainer").mean()
        tau = kendalltau(qm, bm).statistic
        rows.append(
            {
                "quantus": q_curve.split("@")[0],
                "built_in": b_curve,
                "spearman_per_image": round(rho, 3),
                "kendall_explainer_ranking": round(tau, 3),
                "quantus_ranking": " > ".join(qm.sort_values(ascending=False).index),
                "built_in_ranking": " > ".join(bm.sort_values(ascending=False).index),
                "quantus_s_per_image": round(seconds[q], 4),
                "built_in_s_per_image": round(seconds[b], 4),
            }
        )
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    if args.csv:
        table.to_csv(args.csv, index=False)
    return table


if __name__ == "__main__":
    main()
