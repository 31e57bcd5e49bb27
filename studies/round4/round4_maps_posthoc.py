"""Round four's corrections that need the maps (issue 59; studies/round4/README.md, "Corrections" 6-7),
post hoc: the runs' maps are rebuilt from the profile (the cue data and the map families need no model)
and checked against the committed gate (gate_pairs.csv); then

- road_ties.csv: where ROAD MoRF's own truth (the cue pixels inside its removed sets, which at p = 1 - rho
  are the keep-top sets of the ratios) is exactly tied between cue_d0 and cue_d4, the share of those
  images ROAD MoRF scores d0 better than d4 (and the same for every curve);
- share_partial_r.csv: on the block family, per model and curve, the partial correlation of the
  oriented score with the kept-cue share given image and level fixed effects and the keep-top boundary
  share, with an image-bootstrap 95% interval (--boot; the committed table: 20, for time); and
  symmetric's minus FUD-avg2's.

    ./fud python studies/round4/round4_maps_posthoc.py --out studies/round4/results/corrections
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fudbench.core.io import write_csv  # noqa: E402

_EVAL: dict = {}
RUNS = {  # name: (overlays on the cue profile, per-image file)
    "primary": (["studies/round4/round4.yaml"], "per_image_primary.parquet"),
    "replication": (
        ["studies/round4/round4.yaml", "studies/round4/round4_replication.yaml"],
        "per_image_replication.parquet",
    ),
}
DISPLACED = ["cue_d0", "cue_d4", "cue_d8", "cue_d12", "cue_d16"]
BLOCKS = ["cue_b00", "cue_b25", "cue_b50", "cue_b75", "cue_b100"]
HIGHER = {
    "fud": True,
    "fud_bottom": False,
    "fud_symmetric": True,
    "fud_avg2": True,
    "insertion": True,
    "deletion": False,
    "road_morf": False,
    "road_lerf": True,
}


def rebuild(config: dict, model: str, names: list[str]):
    """(ids, cue masks (N, H, W) bool, {name: reduced maps (N, H, W)}) as the run's explain jobs made them."""
    import torch

    from fudbench.core.seeding import derive_seed, seed_groups
    from fudbench.data.synthetic import make_benchmark
    from fudbench.explainers import build_explainer
    from fudbench.explainers.seeds import explain_seed_key
    from fudbench.meta.cue import reduce_map

    d = config["data"]
    key = (config["seed"], d["n_eval"], d.get("eval_offset", 0))
    if key not in _EVAL:  # the whole benchmark is generated: once per run
        _EVAL[key] = make_benchmark(d["synthetic"], d["n_eval"], config["seed"], d.get("eval_offset", 0))["splits"][
            "eval"
        ]
    ev = _EVAL[key]
    ids = np.arange(len(ev["labels"]))  # the explain job's ids: positions in the evaluated subset
    x = torch.from_numpy(ev["images"]).float().div(255)
    masks = torch.from_numpy(ev["masks"]).float()
    group = seed_groups(config["models"]["classifiers"])[model]
    maps = {}
    for name in names:
        settings = config["explainers"][name]
        key = explain_seed_key(config["seed"], group, name, settings)
        seeds = [derive_seed(*key, int(i)) for i in ids]
        a = build_explainer(name, settings).explain(
            None, x, torch.zeros(len(x), dtype=torch.long), seeds=seeds, masks=masks
        )
        maps[name] = reduce_map(a.numpy(), config["evaluation"]["reduction"])
    return ids, ev["masks"].astype(bool), maps


def kept(values: np.ndarray, counts) -> np.ndarray:
    """(len(counts), H, W) bool keep-top sets (descending, stable)."""
    order = np.argsort(-values.ravel(), kind="stable")
    out = np.zeros((len(counts), values.size), bool)
    for j, k in enumerate(counts):
        out[j, order[:k]] = True
    return out.reshape(len(counts), *values.shape)


def truths(maps, cue, counts):
    """Per member and image: kept cue share and keep-top boundary share, each averaged over the counts."""
    share, boundary = {}, {}
    for name, m in maps.items():
        s, b = [], []
        for i in range(len(cue)):
            sets = kept(m[i], counts)
            s.append(float((sets & cue[i]).sum((1, 2)).mean() / cue[i].sum()))
            h, w = cue[i].shape
            pairs = (h - 1) * w + h * (w - 1)
            b.append(float(np.mean([((k[1:] != k[:-1]).sum() + (k[:, 1:] != k[:, :-1]).sum()) / pairs for k in sets])))
        share[name], boundary[name] = np.array(s), np.array(b)
    return share, boundary


def oriented(per_image: pd.DataFrame, model: str, curve: str, names, ids) -> np.ndarray:
    """(N, members) oriented scores in `names` order for the images `ids` (fud_avg2: the two draws' mean)."""
    d = per_image[per_image["model"] == model]
    if curve == "fud_avg2":
        return (
            oriented(per_image, model, "fud", names, ids) + oriented(per_image, model, "fud@fud_draw1", names, ids)
        ) / 2
    w = (
        d[d["curve"] == curve]
        .pivot_table(index="image", columns="explainer", values="score")
        .reindex(index=ids, columns=names)
    )
    return w.to_numpy() * (1.0 if HIGHER.get(curve, True) else -1.0)


def partial_r(y, share, boundary, images):
    """Partial correlation of y with share given image and level fixed effects and boundary (all (N, L))."""
    n, levels = y.shape
    design = np.c_[
        np.kron(np.eye(n)[images], np.ones((levels, 1))),
        np.tile(np.eye(levels), (len(images), 1))[:, 1:],
        boundary[images].ravel(),
    ]
    res = []
    for v in (y[images].ravel(), share[images].ravel()):
        beta = np.linalg.lstsq(design, v, rcond=None)[0]
        res.append(v - design @ beta)
    return float(np.corrcoef(*res)[0, 1])


def main(argv=None) -> None:
    from fudbench.config.files import resolve_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    ap.add_argument("--boot", type=int, default=2000)
    args = ap.parse_args(argv)
    out = Path(os.environ.get("FUD_CALLER_CWD", ".")) / args.out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(59)
    gate_pairs = pd.read_csv(HERE / "results" / "gate_pairs.csv")
    ties, partials, checks = [], [], []
    for run, (overlays, file) in RUNS.items():
        config = resolve_config([str(REPO / f) for f in ["studies/planted_cue/cue.yaml", *overlays]])
        per_image = pd.read_parquet(HERE / "results" / file)
        from fudbench.core.masks import n_pixels

        for model in config["models"]["classifiers"]:
            ids, cue, maps = rebuild(config, model, DISPLACED[:2] + BLOCKS)
            hw = cue.shape[1] * cue.shape[2]
            counts = [n_pixels(float(r), hw) for r in config["evaluation"]["ratios"]]
            share, boundary = truths(maps, cue, counts)
            # the rebuild matches the run's maps: the committed gate's pair differences come back
            for better, worse in (("cue_d0", "cue_d4"), ("cue_b00", "cue_b25")):
                committed = gate_pairs[(gate_pairs["model"] == model) & (gate_pairs["better"] == better)][
                    "estimate"
                ].iloc[0]
                checks.append(
                    {
                        "run": run,
                        "model": model,
                        "pair": f"{better}-{worse}",
                        "committed": committed,
                        "rebuilt": float((share[better] - share[worse]).mean()),
                    }
                )
            image_ids = np.arange(len(ids))
            tied = np.abs(share["cue_d0"] - share["cue_d4"]) < 1e-12
            for curve in HIGHER:
                s = oriented(per_image, model, curve, DISPLACED[:2], image_ids)
                ties.append(
                    {
                        "run": run,
                        "model": model,
                        "curve": curve,
                        "images": len(ids),
                        "tied_share": float(tied.mean()),
                        "d0_better_among_tied": float((s[tied, 0] > s[tied, 1]).mean()) if tied.any() else np.nan,
                        "d0_equal_among_tied": float((s[tied, 0] == s[tied, 1]).mean()) if tied.any() else np.nan,
                    }
                )
            sh = np.stack([share[b] for b in BLOCKS], 1)
            bd = np.stack([boundary[b] for b in BLOCKS], 1)
            ys = {c: oriented(per_image, model, c, BLOCKS, image_ids) for c in HIGHER}
            boots = rng.integers(0, len(ids), (args.boot, len(ids)))
            for curve, y in ys.items():
                est = partial_r(y, sh, bd, image_ids)
                bs = [partial_r(y, sh, bd, b) for b in boots[: args.boot]]
                partials.append(
                    {
                        "run": run,
                        "model": model,
                        "curve": curve,
                        "partial_r": est,
                        "low": float(np.quantile(bs, 0.025)),
                        "high": float(np.quantile(bs, 0.975)),
                    }
                )
            diff = [partial_r(ys["fud_symmetric"], sh, bd, b) - partial_r(ys["fud_avg2"], sh, bd, b) for b in boots]
            partials.append(
                {
                    "run": run,
                    "model": model,
                    "curve": "fud_symmetric - fud_avg2",
                    "partial_r": partial_r(ys["fud_symmetric"], sh, bd, image_ids)
                    - partial_r(ys["fud_avg2"], sh, bd, image_ids),
                    "low": float(np.quantile(diff, 0.025)),
                    "high": float(np.quantile(diff, 0.975)),
                }
            )
            print(run, model, "done", flush=True)
    for name, rows in (("rebuild_check", checks), ("road_ties", ties), ("share_partial_r", partials)):
        t = pd.DataFrame(rows)
        write_csv(out / f"{name}.csv", t, index=False, float_format="%.4f")
        print(f"{name}.csv\n{t.to_string(index=False, float_format=lambda x: f'{x:.3f}')}\n")


if __name__ == "__main__":
    main()
