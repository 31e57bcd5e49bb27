"""Does FUD's fill complete a partly kept cue? A metric-free audit of round four's fills (issue 44).

Round four's block family is ordered by the kept cue share (the share of the cue's pixels inside the
keep-top set), but not under the "completion" truth (any kept cue pixel counts as the whole cue): if the
fill redraws the cue from a few kept pixels, a keep-top metric cannot see how much of it a map kept.
This tool looks at the fills themselves, not at any classifier's score: it refills the keep-top sets of
the block family's stored maps with the run's FUD keep-top sampler (same data, maps, score model, model
and seeds as the workflow's `fud` entry) and counts, in each fill, the pixels of the cue's square that
show the cue's colour (every channel within `--tolerance` of it). Per member and ratio it reports the
share of cue pixels kept and the share present after the fill, and per image and ratio whether the fill
added cue-coloured pixels that were not kept ("completion"). The detector is checked on the original
images first (hit rate inside the cue, false-positive rate outside).

    ./fud python studies/round4/round4_fill_audit.py --results results/round4 --images 32 \
        --out studies/round4/results
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # studies/round4/this file
sys.path.insert(0, str(REPO / "src"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from fudbench.meta.cue import reduce_map  # noqa: E402
from fudbench.meta.inference import mean_interval  # noqa: E402
from fudbench.meta.gate import keep_top_sets  # noqa: E402,F401  (the protocol's kept sets)
from fudbench.config.files import resolve_config  # noqa: E402
from fudbench.evaluators import build_evaluator  # noqa: E402
from fudbench.core.io import load_npz, write_csv, write_text  # noqa: E402
from fudbench.models.classifiers import load_classifier  # noqa: E402
from fudbench.workflow.pipeline import evaluate_maps, evaluator_noise, paired_seed_key  # noqa: E402

FILES = ["studies/planted_cue/cue.yaml", "studies/round4/round4.yaml"]  # relative to the repository
FAMILY = ["cue_b00", "cue_b25", "cue_b50", "cue_b75", "cue_b100"]


def cue_coloured(images: np.ndarray, colours: np.ndarray, tolerance: float) -> np.ndarray:
    """images (N, 3, H, W) in [0, 1], colours (N, 3): (N, H, W) True where every channel is within
    `tolerance` of the image's cue colour."""
    return (np.abs(images - colours[:, :, None, None]) <= tolerance).all(1)


def reversed_map(scores: np.ndarray, channels: int) -> np.ndarray:
    """(N, channels, H, W) non-negative maps whose abs-sum reduction is max - scores: their keep-top sets
    are the keep-bottom sets of `scores` (tie-free scores)."""
    flipped = scores.max((1, 2), keepdims=True) - scores
    return np.repeat((flipped / channels)[:, None], channels, 1)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", required=True, help="the primary run's folder (results/round4)")
    ap.add_argument("--configfile", nargs="+", default=FILES, help="the run's config files, relative to the repository")
    ap.add_argument("--members", nargs="+", default=FAMILY, help="the family's members audited, best first")
    ap.add_argument("--out", required=True, help="output folder (relative: to where you run the command)")
    ap.add_argument("--images", type=int, default=32, help="the run's first N test images")
    ap.add_argument("--model", default="cnn", help="the classifier the fill's guidance uses")
    ap.add_argument("--tolerance", type=float, default=0.3, help="max per-channel distance to the cue colour")
    ap.add_argument(
        "--side",
        choices=["top", "bottom"],
        default="top",
        help="audit the keep-top fills (curve fud) or the keep-bottom ones (fud_bottom)",
    )
    ap.add_argument("--summary-only", action="store_true", help="rewrite the .md from --out's .csv")
    args = ap.parse_args(argv)
    caller = Path(os.environ.get("FUD_CALLER_CWD", "."))
    results, out = caller / args.results, caller / args.out
    # keep-top with the cnn's guidance is the first audit's name; the others say what they audit
    stem = "fill_audit" if (args.side, args.model) == ("top", "cnn") else f"fill_audit_{args.side}_{args.model}"
    if args.summary_only:
        head = (
            (out / f"{stem}.md").read_text().split("\n\nPartly kept")[0].split("\n")
            if (out / f"{stem}.md").is_file()
            else []
        )
        text = "\n".join([*head, "", *summary_lines(pd.read_csv(out / f"{stem}.csv"))])
        write_text(out / f"{stem}.md", text + "\n")
        print(text)
        return
    if not (results / "data" / "eval.npz").is_file():
        ap.error(f"{results} holds no data/eval.npz: not a finished round-four run")
    out.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(1)

    config = resolve_config([str(REPO / f) for f in args.configfile])
    data = load_npz(results / "data" / "eval.npz")
    n = min(args.images, len(data["labels"]))
    x = torch.from_numpy(data["images"][:n]).float().div(255)
    cue = data["masks"][:n].astype(bool)
    palette = np.array(list(config["data"]["synthetic"]["cue"]["colours"].values()), dtype=float)
    colours = palette[data["labels"][:n]]
    ratios = config["evaluation"]["ratios"]

    seen = cue_coloured(x.numpy(), colours, args.tolerance)
    hit = float(seen[cue].mean())
    false_pos = float(seen[~cue].mean())
    # the tool's path of the time in the title, as in the committed fill_audit*.md
    lines = [
        "# Round four: does the fill complete a partly kept cue? (tools/round4_fill_audit.py)",
        "",
        f"{n} images of {results}, model {args.model} (guidance), FUD keep-{args.side} as the run's `fud` entry; "
        f"cue colour detector (every channel within {args.tolerance}) on the original images: "
        f"{hit:.3f} of cue pixels detected, {false_pos:.4f} of other pixels",
        "",
    ]

    model = load_classifier(results / "models" / f"{args.model}.pt")
    with torch.no_grad():
        y = model(x).argmax(1)
    # the sampler does not hand back its keep-bottom fills, so a bottom audit fills the keep-top sets of the
    # reversed map (max - score: the same sets, the keep-top curve's noise instead of the bottom's)
    settings = {**config["evaluators"]["fud"], "symmetric": False}
    evaluator = build_evaluator(
        "fud", settings, config["evaluation"], {"score_model": str(results / "models" / "score_model.pt")}, "cpu"
    )
    key = paired_seed_key(config["seed"], args.model, evaluator_noise("fud", config["evaluators"]["fud"]))

    rows = []
    for member in args.members:
        maps, ids = [], []
        for shard in sorted((results / "attributions" / args.model / member).glob("shard*.npz")):
            a = load_npz(shard, made_by="explain")
            maps.append(a["attributions"])
            ids.append(a["ids"])
        a, ids = np.concatenate(maps), np.concatenate(ids)
        pick = np.argsort(ids)[:n]
        a, ids = a[pick], ids[pick]
        if not np.array_equal(ids, np.arange(n)):
            raise SystemExit(f"{member}: the stored maps do not cover images 0..{n - 1}")
        scores = reduce_map(a, config["evaluation"]["reduction"])
        # the maps are tie-free (round four's controls), so the bottom set is the top set of -scores
        kept = keep_top_sets(scores if args.side == "top" else -scores, ratios)
        if args.side == "bottom":
            a = reversed_map(scores, a.shape[1])
        _, samples = evaluate_maps(evaluator, model, x, y, torch.from_numpy(a).float(), ids, key)
        fills = np.asarray(samples["fud"], dtype=np.float32)  # (N, R, 3, H, W)
        for r, rho in enumerate(ratios):
            present = cue_coloured(fills[:, r], colours, args.tolerance)
            kept_cue = (kept[:, r] & cue).sum((1, 2))
            present_cue = (present & cue).sum((1, 2))
            added = (present & cue & ~kept[:, r]).sum((1, 2))  # cue-coloured, not kept: drawn by the fill
            outside = (present & ~cue & ~kept[:, r]).sum((1, 2))
            for i in range(n):
                rows.append(
                    {
                        "member": member,
                        "ratio": rho,
                        "image": int(ids[i]),
                        "cue_pixels": int(cue[i].sum()),
                        "kept": int(kept_cue[i]),
                        "present": int(present_cue[i]),
                        "added": int(added[i]),
                        "added_outside_cue": int(outside[i]),
                    }
                )
        print(f"{member}: filled", flush=True)
    table = pd.DataFrame(rows)
    write_csv(out / f"{stem}.csv", table, index=False)
    lines += summary_lines(table)
    write_text(out / f"{stem}.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def summary_lines(table: pd.DataFrame) -> list[str]:
    """The audit's reading of its table (fill_audit.csv's columns)."""
    partly = table[(table["kept"] > 0) & (table["kept"] < table["cue_pixels"])]
    none = table[table["kept"] == 0]
    missing = partly["cue_pixels"] - partly["kept"]
    lines = [
        f"Partly kept cues (0 < kept < all; {len(partly)} fills): kept {partly['kept'].mean():.2f} "
        f"of {partly['cue_pixels'].mean():.1f} pixels on average, present after the fill "
        f"{partly['present'].mean():.2f}; the fill drew {_interval(partly['added'])} cue-coloured "
        f"pixels inside the cue's square that were not kept ("
        f"{(partly['added'] / missing).mean():.2f} of the missing ones per fill on average, "
        f"{partly['added'].sum() / missing.sum():.2f} of all missing ones); "
        f"{(partly['present'] >= partly['cue_pixels']).mean():.2f} of these fills show the whole cue.",
        f"No cue pixel kept ({len(none)} fills): {_interval(none['present'])} cue pixels present after the "
        f"fill; {(none['present'] > 0).mean():.2f} of these fills show any.",
        "",
        "| member | kept share | present share | fills with pixels added in the cue | n |",
        "|---|---|---|---|---|",
    ]
    for member, d in table.groupby("member", sort=False):
        lines.append(
            f"| {member} | {(d['kept'] / d['cue_pixels']).mean():.3f} | "
            f"{(d['present'] / d['cue_pixels']).mean():.3f} | {(d['added'] > 0).mean():.3f} | {len(d)} |"
        )
    lines += [
        "",
        "Partly kept cues by how many pixels were missing (completion is likeliest where few are):",
        "",
        "| missing | fills | share of missing redrawn (pooled) | fills showing the whole cue |",
        "|---|---|---|---|",
    ]
    for lo, hi in ((1, 2), (3, 4), (5, 8), (9, 15)):
        d = partly[(missing >= lo) & (missing <= hi)]
        if len(d):
            gone = d["cue_pixels"] - d["kept"]
            lines.append(
                f"| {lo}-{hi} | {len(d)} | {d['added'].sum() / gone.sum():.2f} | "
                f"{(d['present'] >= d['cue_pixels']).mean():.2f} |"
            )
    return lines


def _interval(values: pd.Series) -> str:
    v = values.to_numpy(dtype=float)
    if len(v) < 2:
        return "n/a"
    hi = max(float(v.max()), 1.0)
    m, lo, up, _ = mean_interval(v, (0.0, hi))
    return f"{m:.2f} [{lo:.2f}, {up:.2f}]"


if __name__ == "__main__":
    main()
