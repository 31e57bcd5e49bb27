"""Round five's registered analysis (studies/round5/README.md, "Pre-registration").

    ./fud python studies/round5/round5_analysis.py --results results --out studies/round5/results

Reads the finished runs results/round5 (primary: cnn, vit), results/round5_rep (replication: cnn_seed1,
vit_seed1), results/round5_naive (the cue-naive fill: FUD only) and, for the pilot, results/round5_pilot
(whichever have finished; a run without analysis/per_image.parquet is named and left out). In order:

1. the gate, from the maps and the cue masks only (fudbench.meta.graded.graded_gate at every kept count
   of the run's protocols): an image that fails in an arm is dropped from that arm's cells, and the
   counts are written before any score is read (gate.csv);
2. per image and curve the recovery r_i (claims.per_image_recovery: Spearman of the oriented scores with
   the known order, 0 where a curve ties every member) on each arm's passing images;
3. every pair of the seven ranked curves (RANKED: 21 pairs), per run, model, arm and fill: the mean of
   r_i(a) - r_i(b) with inference.mean_interval (bounds (-2, 2), 95%), Holm over the 21 pairs within
   (run, model, arm, fill) (pairs.csv);
4. the pass rules per pair (verdicts.csv), on the deciding model (DECIDING: vit, its replication
   vit_seed1; the pilot put cnn at ceiling, README "Pilot"): "a over b" where, in the main arm with the cue
   fill, Holm p < .05 on vit; the replication's estimate has that sign; the opposing arm's estimate has
   that sign (not reversed when scatter opposes the evidence); and, for a pair with a FUD curve, the
   cue-naive fill's estimate has that sign, else "fill-dependent". Otherwise "undecided" (or the failing
   rule named). The result is a partial order. cnn and cnn_seed1 are reported beside (pairs.csv), not
   decided;
5. beside, not tested: each curve's mean recovery and share of images perfectly ordered (recovery.csv:
   the ranked curves, the descriptive ones, the scatter-only control computed from the maps), and where
   each curve ranks `random` among the members (random_rank.csv).
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

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fudbench.meta.inference import holm, mean_interval  # noqa: E402

CUE = "studies/planted_cue/cue.yaml"
RUNS = {  # name: (results folder, overlays on CUE, fill)
    "primary": ("round5", ["studies/round5/round5.yaml"], "cue"),
    "replication": ("round5_rep", ["studies/round5/round5.yaml", "studies/round5/round5_replication.yaml"], "cue"),
    "naive": ("round5_naive", ["studies/round5/round5.yaml", "studies/round5/round5_naive.yaml"], "naive"),
    "pilot": ("round5_pilot", ["studies/round5/round5.yaml", "studies/round5/round5_pilot.yaml"], "cue"),
}
RANKED = ("fud", "fud_bottom", "fud_symmetric", "insertion", "deletion", "road_morf", "road_lerf")
FUD_CURVES = ("fud", "fud_bottom", "fud_symmetric")
ARMS = {"oracle_graded": "equal", "oracle_graded_opposing": "opposing"}
SCATTER_ONLY = "scatter_only"
PRIMARY_MODELS, REPLICATION_MODELS = ("cnn", "vit"), ("cnn_seed1", "vit_seed1")
DECIDING, DECIDING_REPLICATION = ("vit",), ("vit_seed1",)  # registered after the pilot (README, "Pre-registration")
ALPHA = 0.05


def higher_is_better(curve: str) -> bool:
    from fudbench.analysis.curves import curve_score

    if curve == SCATTER_ONLY:
        return True
    found = curve_score(curve)
    if found is None:
        raise KeyError(f"no direction known for curve {curve!r}")
    return bool(found[1])


def finished(results: Path) -> bool:
    return (results / "analysis" / "per_image.parquet").is_file()


def member_maps(results: Path, config: dict, model: str, members: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """(ids, [maps (N, H, W) of each member in `members`' order]) from the run's attribution shards."""
    from fudbench.core.io import load_npz
    from fudbench.meta.cue import reduce_map

    out, ids = [], None
    for name in members:
        parts = [
            load_npz(s, made_by="explain") for s in sorted((results / "attributions" / model / name).glob("shard*.npz"))
        ]
        if not parts:
            raise FileNotFoundError(f"{results}/attributions/{model}/{name}: no shards (has the run finished?)")
        these = np.concatenate([p["ids"] for p in parts])
        if ids is not None and not np.array_equal(ids, these):
            raise ValueError(f"{name}: its images differ from the other members'")
        ids = these
        out.append(np.concatenate([reduce_map(p["attributions"], config["evaluation"]["reduction"]) for p in parts]))
    return ids, out


def gate(results: Path, config: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-image gate rows, the scatter-only metric's rows): graded_gate per model and arm from the maps."""
    from fudbench.core.io import load_npz
    from fudbench.core.masks import n_pixels
    from fudbench.meta.families import degraded_explainers, family_members
    from fudbench.meta.graded import graded_gate, keep_top, outline, protocol_counts

    cue_all = load_npz(results / "data" / "eval.npz")["masks"].astype(bool)
    families = family_members(degraded_explainers(config["explainers"]))
    ratios = config["evaluation"]["ratios"]
    steps = (config["evaluators"].get("insdel") or {}).get("n_steps")
    rows, scatter = [], []
    for model in config["models"]["classifiers"]:
        for family, arm in ARMS.items():
            members = families.get(family)
            if not members:
                continue
            ids, maps = member_maps(results, config, model, members)
            cue = cue_all[ids]
            hw = cue.shape[1] * cue.shape[2]
            cut = n_pixels(float(config["explainers"][members[0]].get("cut", 0.5)), hw)
            g = graded_gate(maps, cue, protocol_counts(hw, ratios, steps), cut, arm)
            g["image"] = ids
            rows.append(g.assign(model=model, family=family))
            for name, m in zip(members, maps):  # the scatter-only metric: minus the mean keep-top outline
                for i, image in enumerate(ids):
                    value = -np.mean([outline(keep_top(m[i], n_pixels(float(r), hw))) for r in ratios])
                    scatter.append(
                        {"model": model, "explainer": name, "image": int(image), "curve": SCATTER_ONLY, "score": value}
                    )
    return pd.concat(rows, ignore_index=True), pd.DataFrame(scatter)


def recoveries(per_image: pd.DataFrame, explainers: dict, passing: pd.DataFrame, curves) -> pd.DataFrame:
    """Rows (model, family, curve, image, r) on each (model, family)'s passing images."""
    from fudbench.meta.claims import per_image_recovery
    from fudbench.meta.families import degraded_explainers, family_members

    degraded = degraded_explainers(explainers)
    rows = []
    for family, members in family_members(degraded).items():
        if family not in ARMS:
            continue
        levels = [degraded[e][1] for e in members]
        for model in sorted(per_image["model"].unique()):
            ok = set(passing[(passing["model"] == model) & (passing["family"] == family) & passing["passes"]]["image"])
            for curve in curves:
                if curve not in set(per_image["curve"]):
                    continue
                sign = 1.0 if higher_is_better(curve) else -1.0
                r = per_image_recovery(per_image, model, curve, sign, members, levels, "total")
                rows += [
                    {"model": model, "family": family, "curve": curve, "image": int(i), "r": float(v)}
                    for i, v in r.items()
                    if int(i) in ok
                ]
    return pd.DataFrame(rows)


def with_fill_independent_curves(rec: pd.DataFrame) -> pd.DataFrame:
    """The cue-naive run computes FUD only; the other ranked curves fill with no score model, so their
    recoveries on the same images are the primary's. Copied into the naive run (same model, arm, image;
    on the images both gates pass) so that a FUD-vs-other pair is compared under the naive fill.
    Added after the registration (README, "Changes after the registration"): as registered, those pairs
    had no naive cell and every one would have read "fill-dependent" for want of a cell."""
    naive, primary = rec[rec["run"] == "naive"], rec[rec["run"] == "primary"]
    if naive.empty or primary.empty:
        return rec
    keys = naive[["model", "family", "image"]].drop_duplicates()
    other = primary[~primary["curve"].isin(FUD_CURVES) & primary["curve"].isin(RANKED)]
    copied = other.merge(keys, on=["model", "family", "image"]).assign(run="naive", fill="naive")
    return pd.concat([rec, copied[rec.columns]], ignore_index=True)


def pairs_table(rec: pd.DataFrame, curves=RANKED) -> pd.DataFrame:
    """Every pair of `curves` per (run, model, family): mean r_i(a) - r_i(b), interval, p, Holm within."""
    rows = []
    for (run, model, family), d in rec.groupby(["run", "model", "family"], sort=True):
        w = d.pivot_table(index="image", columns="curve", values="r")
        first = len(rows)
        for a, b in itertools.combinations([c for c in curves if c in w.columns], 2):
            diff = (w[a] - w[b]).dropna().to_numpy()
            est, lo, hi, p = mean_interval(diff, (-2.0, 2.0), 0.95)
            rows.append(
                {
                    "run": run,
                    "model": model,
                    "family": family,
                    "a": a,
                    "b": b,
                    "estimate": est,
                    "ci_low": lo,
                    "ci_high": hi,
                    "p": p,
                    "n_images": len(diff),
                }
            )
        for row, q in zip(rows[first:], holm([r["p"] for r in rows[first:]])):
            row["p_holm"] = float(q)
    return pd.DataFrame(rows)


def sign_of(estimate: float) -> float:
    """The sign of a mean difference, 0 within rounding: a mean of differences that sum to 0 exactly can
    come out as -1.7e-18 (the review's finding 1: a replication read as "same sign" on a zero)."""
    return 0.0 if abs(estimate) < 1e-12 else float(np.sign(estimate))


def verdicts(pairs: pd.DataFrame) -> pd.DataFrame:
    """The registered pass rules per pair (module docstring, 4)."""

    def cell(run, model, family, a, b):
        t = pairs[
            (pairs["run"] == run)
            & (pairs["model"] == model)
            & (pairs["family"] == family)
            & (pairs["a"] == a)
            & (pairs["b"] == b)
        ]
        return t.iloc[0] if len(t) else None

    out = []
    for (a, b), _ in pairs.groupby(["a", "b"], sort=False):
        main = [cell("primary", m, "oracle_graded", a, b) for m in DECIDING]
        row = {"a": a, "b": b}
        for m, c in zip(DECIDING, main):
            row[f"{m}_estimate"] = np.nan if c is None else c["estimate"]
            row[f"{m}_p_holm"] = np.nan if c is None else c["p_holm"]
        if any(c is None for c in main):
            row["verdict"] = "not run"
            out.append(row)
            continue
        signs = {sign_of(c["estimate"]) for c in main}
        decided = all(c["p_holm"] < ALPHA for c in main) and len(signs) == 1 and 0 not in signs
        sign = signs.pop() if decided else 0.0
        checks = {
            "replication": [cell("replication", m, "oracle_graded", a, b) for m in DECIDING_REPLICATION],
            "opposing scatter": [cell("primary", m, "oracle_graded_opposing", a, b) for m in DECIDING],
        }
        if a in FUD_CURVES or b in FUD_CURVES:
            checks["cue-naive fill"] = [cell("naive", m, "oracle_graded", a, b) for m in DECIDING]
        failed = []
        for name, cells in checks.items():
            ok = all(c is not None and sign_of(c["estimate"]) == sign for c in cells)
            row[f"{name} same sign"] = ok if decided else np.nan
            if decided and not ok:
                failed.append(name)
        if not decided:
            row["verdict"] = "undecided"
        elif not failed:
            row["verdict"] = f"{a} over {b}" if sign > 0 else f"{b} over {a}"
        elif failed == ["cue-naive fill"]:
            row["verdict"] = "fill-dependent: " + (f"{a} over {b}" if sign > 0 else f"{b} over {a}")
        else:
            row["verdict"] = "fails: " + ", ".join(failed)
        out.append(row)
    return pd.DataFrame(out)


def random_rank(per_image: pd.DataFrame, explainers: dict, passing: pd.DataFrame, curves=RANKED) -> pd.DataFrame:
    """Where each curve puts the `random` map among a family's members, per (model, family, curve) on the
    passing images: its mean rank (1 = above every member, members + 1 = below all) and the share of
    images where every member beats it."""
    from fudbench.meta.families import degraded_explainers, family_members

    if "random" not in set(per_image["explainer"]):
        return pd.DataFrame()
    rows = []
    for family, members in family_members(degraded_explainers(explainers)).items():
        if family not in ARMS:
            continue
        for model in sorted(per_image["model"].unique()):
            ok = set(passing[(passing["model"] == model) & (passing["family"] == family) & passing["passes"]]["image"])
            for curve in curves:
                d = per_image[(per_image["model"] == model) & (per_image["curve"] == curve)]
                w = d.pivot_table(index="image", columns="explainer", values="score").reindex(
                    columns=[*members, "random"]
                )
                w = w.loc[[i for i in w.index if int(i) in ok]].dropna()
                if w.empty:
                    continue
                w = w if higher_is_better(curve) else -w
                rank = 1 + (w[members].to_numpy() > w[["random"]].to_numpy()).sum(axis=1)
                rows.append(
                    {
                        "model": model,
                        "family": family,
                        "curve": curve,
                        "random_mean_rank": float(rank.mean()),
                        "random_last_share": float((rank == len(members) + 1).mean()),
                        "n_images": len(rank),
                    }
                )
    return pd.DataFrame(rows)


def recovery_summary(rec: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (run, model, family, curve), d in rec.groupby(["run", "model", "family", "curve"], sort=True):
        r = d["r"].to_numpy()
        est, lo, hi, _ = mean_interval(r, (-1.0, 1.0), 0.95)
        rows.append(
            {
                "run": run,
                "model": model,
                "family": family,
                "curve": curve,
                "recovery": est,
                "ci_low": lo,
                "ci_high": hi,
                "perfect_share": float((r > 1 - 1e-9).mean()),
                "floor_share": float((r < 1e-9).mean()),
                "n_images": len(r),
            }
        )
    return pd.DataFrame(rows)


def main(argv=None) -> None:
    from fudbench.config.files import resolve_config
    from fudbench.core.io import write_csv

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    ap.add_argument("--results", default="results", help="the folder holding the runs")
    ap.add_argument("--runs", nargs="+", default=["primary", "replication", "naive"], choices=sorted(RUNS))
    ap.add_argument(
        "--as-registered",
        action="store_true",
        help="the code as registered: no fill-independent curves copied into the cue-naive run",
    )
    args = ap.parse_args(argv)
    caller = Path(os.environ.get("FUD_CALLER_CWD", "."))
    out, base = caller / args.out, caller / args.results
    out.mkdir(parents=True, exist_ok=True)
    gates, recs, randoms = [], [], []
    for name in args.runs:
        folder, overlays, fill = RUNS[name]
        results = base / folder
        if not finished(results):
            print(f"{name} ({results}): not finished; left out")
            continue
        config = resolve_config([str(REPO / f) for f in (CUE, *overlays)])
        g, scatter = gate(results, config)
        gates.append(g.assign(run=name))
        write_csv(
            out / "gate.csv",
            pd.concat(gates, ignore_index=True).astype({"kept_cue_at_cut": str, "outlines_at_cut": str}),
            index=False,
        )
        per_image = pd.read_parquet(results / "analysis" / "per_image.parquet")
        per_image = pd.concat([per_image, scatter.reindex(columns=per_image.columns)], ignore_index=True)
        curves = [c for c in per_image["curve"].unique() if c != "random"]
        named = []
        for c in curves:
            try:
                higher_is_better(c)
                named.append(c)
            except KeyError:
                continue
        recs.append(recoveries(per_image, config["explainers"], g, named).assign(run=name, fill=fill))
        randoms.append(random_rank(per_image, config["explainers"], g).assign(run=name, fill=fill))
    if not recs:
        print("no finished run: nothing computed")
        return
    rec = pd.concat(recs, ignore_index=True)
    if not args.as_registered:
        rec = with_fill_independent_curves(rec)
    pairs = pairs_table(rec)
    write_csv(out / "pairs.csv", pairs, index=False, float_format="%.4f")
    write_csv(out / "verdicts.csv", verdicts(pairs), index=False, float_format="%.4f")
    write_csv(out / "random_rank.csv", pd.concat(randoms, ignore_index=True), index=False, float_format="%.4f")
    summary = recovery_summary(rec)
    write_csv(out / "recovery.csv", summary, index=False, float_format="%.4f")
    print(summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"))


if __name__ == "__main__":
    main()
