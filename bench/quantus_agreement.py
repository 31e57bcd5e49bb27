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

    ./fud python bench/quantus_agreement.py --part categories [--images 8] [--explainers sm ig]

Second table (`--part categories`; both by default): each robustness, randomisation and complexity metric
of this project against Quantus 0.6's implementation of the same metric, on the same model, images and
maps, with Quantus' explain_func the same explainer (clipped inputs, as the adapter): per metric our mean
value, Quantus', Pearson's r over the (explainer, image) values, the largest |difference|, the seconds per
image of each and their ratio. Matched settings per metric (MATCHED): the sensitivities and the Lipschitz
estimate get Quantus' perturb_func drawing our very noise (same seeds, clipped as ours), so they must agree
to float precision; MPRT and RandomLogit draw their randomised weights / other class each their own way
(Quantus reseeds torch with seed + 1 before each layer and compares flattened maps by 1-D SSIM), so they
agree only in distribution: read r and the means.
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
from fudbench.evaluators import build_evaluator, configured_curves, spec  # noqa: E402
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


# Our metric entry, Quantus' class and constructor keywords, and how their noise is matched
N_SAMPLES = 5
MATCHED = {
    "max_sensitivity": ("MaxSensitivity", {"nr_samples": N_SAMPLES, "lower_bound": 0.2}, "our noise"),
    "avg_sensitivity": ("AvgSensitivity", {"nr_samples": N_SAMPLES, "lower_bound": 0.2}, "our noise"),
    # Quantus normalises the maps by their max by default here; ours compares them as stored
    "local_lipschitz": (
        "LocalLipschitzEstimate",
        {"nr_samples": N_SAMPLES, "perturb_std": 0.1, "normalise": False},
        "our noise",
    ),
    "mprt": ("MPRT", {"return_average_correlation": True}, "own weights"),
    "random_logit": ("RandomLogit", {}, "own class, 1-D SSIM"),  # both divide each map by its max
    "sparseness": ("Sparseness", {}, "deterministic"),
    "complexity": ("Complexity", {}, "deterministic"),
}


def _our_noise(protocol, key: tuple, image_id: int, x: torch.Tensor):
    """Quantus' perturb_func drawing, call after call, the copies our protocol draws for one image."""
    import numpy as np

    calls = iter(range(10**6))

    def perturb(arr, **kwargs):
        k = next(calls)
        g = protocol.copy_generator((*key, protocol.curve), image_id, k)
        noisy = (x + protocol.noise(tuple(x.shape), g)).clamp(0, 1)
        return noisy.numpy().reshape(np.shape(arr)).astype(arr.dtype)

    return perturb


def categories(model, x, y, ids, explainers: list, config: dict) -> pd.DataFrame:
    """The second table: our robustness, randomisation and complexity metrics against Quantus'."""
    import warnings

    import numpy as np
    import quantus

    from fudbench.core.masks import reduce_attribution
    from fudbench.explainers.again import ExplainAgain

    evaluation = {"ratios": config["evaluation"]["ratios"], "reduction": "abs_sum"}
    ours, theirs, seconds = {}, {}, {}
    for explainer in explainers:
        explain = build_explainer(explainer, dict(config["explainers"].get(explainer, {})))
        explain.prepare(x)
        again = ExplainAgain(explainer, explain, {i: i for i in ids})
        a = again(model, x, y, ids)
        for metric, (cls, kwargs, _) in MATCHED.items():
            settings = {"n_samples": N_SAMPLES} if "n_samples" in spec(metric).resolve({}) else {}
            key = (config["seed"], "evaluate", "cnn", metric)
            evaluator = build_evaluator(metric, settings, evaluation, {}, "cpu")
            t0 = time.perf_counter()
            records, _ = evaluator.run(model, x, y, a, ids, key, explainer=again)
            seconds.setdefault((metric, "ours"), []).append((time.perf_counter() - t0) / len(ids))
            first = records[records["curve"] == records["curve"].iloc[0]]
            column = "similarity" if "similarity" in first else "value"
            ours.setdefault(metric, []).extend(first.groupby("image", sort=False)[column].mean().tolist())
            whole = metric.endswith("sensitivity") or metric == "local_lipschitz"
            maps = (a if whole else reduce_attribution(a, "abs_sum")[:, None]).numpy()
            values, t0 = [], time.perf_counter()
            for i, image_id in enumerate(ids):

                def explain_func(model, inputs, targets, _id=image_id, **kw):
                    xi = torch.as_tensor(np.asarray(inputs), dtype=torch.float32).clamp(0, 1)
                    out = again(model, xi, torch.as_tensor(np.asarray(targets)).long().view(-1), [_id] * len(xi))
                    return (out if whole else reduce_attribution(out, "abs_sum")[:, None]).numpy()

                extra = dict(kwargs)
                if whole:
                    extra["perturb_func"] = _our_noise(evaluator.curves[0][0], key, image_id, x[i])
                if cls == "RandomLogit":
                    extra["num_classes"] = int(model(x[:1]).shape[1])
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = getattr(quantus, cls)(**extra, disable_warnings=True, display_progressbar=False)(
                        model=model,
                        x_batch=x[i : i + 1].numpy(),
                        y_batch=y[i : i + 1].numpy(),
                        a_batch=maps[i : i + 1],
                        device="cpu",
                        explain_func=explain_func,
                    )
                values.append(float(np.asarray(out, dtype=float).ravel()[0]))
            seconds.setdefault((metric, "quantus"), []).append((time.perf_counter() - t0) / len(ids))
            theirs.setdefault(metric, []).extend(values)
    rows = []
    for metric, (cls, _, matched) in MATCHED.items():
        o, q = np.asarray(ours[metric]), np.asarray(theirs[metric])
        r = float(np.corrcoef(o, q)[0, 1]) if o.std() > 0 and q.std() > 0 else float("nan")
        s_o, s_q = float(np.mean(seconds[(metric, "ours")])), float(np.mean(seconds[(metric, "quantus")]))
        rows.append(
            {
                "metric": metric,
                "quantus": cls,
                "matched": matched,
                "ours_mean": round(float(o.mean()), 5),
                "quantus_mean": round(float(q.mean()), 5),
                "pearson_r": round(r, 4),
                "max_abs_diff": float(f"{np.abs(o - q).max():.3g}"),
                "ours_s_per_image": round(s_o, 4),
                "quantus_s_per_image": round(s_q, 4),
                "quantus_over_ours": round(s_q / s_o, 2),
            }
        )
    return pd.DataFrame(rows)


def main(argv=None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=16)
    ap.add_argument("--explainers", nargs="+", default=None, help="default: ig sm random (categories: sm ig)")
    ap.add_argument("--part", choices=["faithfulness", "categories", "all"], default="all")
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
    table = None
    if args.part in ("faithfulness", "all"):
        table = faithfulness(model, x, y, ids, args.explainers or ["ig", "sm", "random"], config)
        print(table.to_string(index=False))
    if args.part in ("categories", "all"):
        second = categories(model, x, y, ids, args.explainers or ["sm", "ig"], config)
        print(f"\n# robustness, randomisation, complexity vs Quantus {__import__('quantus').__version__}")
        print(second.to_string(index=False))
        table = second if table is None else pd.concat([table, second], ignore_index=True)
    if args.csv:
        table.to_csv(args.csv, index=False)
    return table


def faithfulness(model, x, y, ids, explainers: list, config: dict) -> pd.DataFrame:
    """The first table: Quantus' faithfulness metrics against the built-in counterparts."""
    evaluation = {"ratios": config["evaluation"]["ratios"], "reduction": config["evaluation"]["reduction"]}
    builtin = {e: {k: v for k, v in config["evaluators"][e].items() if k != "imputer_options"} for _, _, e, _ in PAIRS}
    builtin["srg"] = {
        **config["evaluators"]["srg"],
        "imputers": ["mean"],
        "imputer_options": {"mean": {"mean": [0.0] * 3}},
    }
    entries = {**QUANTUS, **builtin}
    frames, seconds = [], {}
    for explainer in explainers:
        explain = build_explainer(explainer, dict(config["explainers"].get(explainer, {})))
        explain.prepare(x)
        a = explain.explain(model, x, y, seeds=ids).detach()
        for name, settings in entries.items():
            t0 = time.perf_counter()
            records, _ = build_evaluator(name, settings, evaluation, {}, "cpu").run(
                model, x, y, a, ids, (config["seed"], "evaluate", "cnn", name)
            )
            seconds[name] = seconds.get(name, 0.0) + (time.perf_counter() - t0) / (len(ids) * len(explainers))
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
    return pd.DataFrame(rows)


if __name__ == "__main__":
    main()
