"""report.html describes the run it was made from, and opens on a results page.

- captions (fudbench.report.captions) name only the evaluators, explainers and data that ran; the tables and
  figures that do not apply to a run are left out of its targets (`applies`);
- the results page (fudbench.report.results_page): every explainer x metric with its 95% interval
  (inference.mean_interval), each explainer's paired difference from `random`, oriented by the registry's
  direction, sentences generated from those numbers, and the front page that Snakemake's report opens on;
- end to end (workflow marker): a photo-profile run with ROAD and INS/DEL only, its report.html read back.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest
import yaml

from fudbench.meta.inference import mean_interval
from fudbench.meta.order_stats import pair_images_needed
from fudbench.config.validate import load_config
from fudbench.evaluators import find_curve
from fudbench.report import captions
from fudbench.report import results_page as rp
from fudbench.report.tables import cell_interval

SUBSET = {"_replace": True, "road": {"batch_size": 32}, "insdel": {"n_steps": 4, "batch_size": 64}}


# ------------------------------------------------------------------ a small run's per-image scores


def _per_image(
    n=16, seed=0, curves=("insertion", "deletion"), explainers=("sm", "ig", "random", "ig_d50"), models=("cnn",)
):
    """Per-image scores: `sm` clearly above random on every image under insertion and clearly below it under
    deletion (better on both, the metrics' directions differ); `ig` close to random (noise only)."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in models:
        base = rng.uniform(0.2, 0.6, n)
        for curve in curves:
            spec = find_curve(curve)
            better = 1.0 if spec.higher_is_better else -1.0
            for ex in explainers:
                shift = {"sm": 0.25 * better, "ig": 0.0, "random": 0.0, "ig_d50": 0.1}[ex]
                noise = rng.normal(0, 0.05, n) if ex != "random" else np.zeros(n)
                for i in range(n):
                    rows.append(
                        {
                            "model": model,
                            "explainer": ex,
                            "curve": curve,
                            "image": i,
                            "score": float(np.clip(base[i] + shift + noise[i], 0, 1)),
                        }
                    )
    return pd.DataFrame(rows)


EXPLAINERS = {"sm": {}, "ig": {}, "random": {}, "ig_d50": {"method": "degrade", "base": "ig", "fraction": 0.5}}


def test_results_page_numbers_equal_a_recomputation():
    per_image = _per_image()
    summary, paired = rp.summarise(per_image, EXPLAINERS, {"insdel": {}}, ["cnn"], 0.95)
    # every explainer x metric, the family member (an instrument of the meta-evaluation) left out
    assert set(summary["explainer"]) == {"sm", "ig", "random"}
    assert list(dict.fromkeys(summary["metric"])) == ["Insertion", "Deletion"]  # config order, no curve without a score
    for r in summary.itertuples():
        spec = find_curve(r.curve)
        assert r.higher_is_better == spec.higher_is_better  # direction from the registry
        v = per_image[(per_image.curve == r.curve) & (per_image.explainer == r.explainer)]["score"].to_numpy()
        assert (r.bound_low, r.bound_high, r.bounds_from) == (0.0, 1.0, "metric range")
        # the cell's interval is the score tables' (their bootstrap, resamples and seed)
        mean, low, high = cell_interval(v, ("cnn", r.explainer, r.metric), 1000, 0.95, 0)
        assert (r.mean, r.ci_low, r.ci_high) == pytest.approx((mean, low, high), abs=1e-12)
        if r.explainer == "random":
            assert r.n_pairs == 0 and math.isnan(r.vs_random)
            continue
        rand = per_image[(per_image.curve == r.curve) & (per_image.explainer == "random")]["score"].to_numpy()
        sign = 1.0 if spec.higher_is_better else -1.0
        diff = sign * (v - rand)
        dm, dl, dh, p = mean_interval(diff, (-1.0, 1.0), 0.95)
        assert (r.vs_random, r.vs_random_low, r.vs_random_high, r.p) == pytest.approx((dm, dl, dh, p), abs=1e-12)
        assert r.images_to_decide_z == pair_images_needed(np.sign(dm) * diff)[0]  # claims.py's count
        assert r.images_to_decide == rp.images_to_decide(diff, (-1.0, 1.0), 0.95)
        got = paired[(paired.curve == r.curve) & (paired.explainer == r.explainer)]["difference"].to_numpy()
        assert got == pytest.approx(diff)
    # oriented: sm is better than random under insertion (higher) and deletion (lower) alike
    sm = summary[summary.explainer == "sm"].set_index("metric")
    assert (sm["vs_random"] > 0.2).all() and (sm["verdict"] == rp.BETTER).all()
    ig = summary[summary.explainer == "ig"].set_index("metric")
    assert ig["verdict"].str.startswith("not separated from random at n = 16").all()
    # Holm over the model's 4 comparisons
    assert summary["p_holm"].notna().sum() == 4 and (summary["p_holm"].dropna() >= summary["p"].dropna()).all()


@pytest.mark.parametrize("mean, sd, n_obs", [(0.2, 0.25, 12), (0.05, 0.2, 30), (-0.3, 0.4, 8)])
def test_images_to_decide_is_the_pages_interval_at_80_percent_power(mean, sd, n_obs):
    """At the returned n, mean_interval (variance floor included) excludes 0 in about 80% of samples with
    the measured mean and SD, and one image fewer does not reach it clearly; a zero mean needs no finite
    number, one value gives none."""
    rng = np.random.default_rng(1)
    diff = np.clip(rng.normal(mean, sd, n_obs), -1, 1)
    n = int(rp.images_to_decide(diff, (-1.0, 1.0)))
    m, s = diff.mean(), diff.std(ddof=1)

    def power(k, draws=600):
        hits = 0
        for _ in range(draws):
            x = np.clip(rng.normal(m, s, k), -1, 1)
            _, low, high, _ = mean_interval(x, (-1.0, 1.0), 0.95)
            hits += low > 0 or high < 0
        return hits / draws

    at_n, below = power(n), power(n - 1)
    assert 0.75 <= at_n <= 0.95 and below <= 0.86, (n, at_n, below)
    assert rp.images_to_decide(np.array([0.1, -0.1, 0.2, -0.2]), (-1.0, 1.0)) == math.inf
    assert math.isnan(rp.images_to_decide(np.array([0.3]), (-1.0, 1.0)))


def test_direction_comes_from_the_registry_for_an_aliased_entry():
    """An entry aliasing insdel writes deletion@del2: its direction is the registry's, not a name list's."""
    per_image = _per_image(curves=("deletion",)).assign(curve="deletion@del2")
    summary, _ = rp.summarise(per_image, EXPLAINERS, {"del2": {"method": "insdel"}}, ["cnn"])
    sm = summary[summary.explainer == "sm"].iloc[0]
    assert sm["metric"] == "Deletion [del2]" and not sm["higher_is_better"] and sm["vs_random"] > 0.2


def test_sentences_say_what_the_numbers_say():
    per_image = _per_image()
    summary, _ = rp.summarise(per_image, EXPLAINERS, {"insdel": {}}, ["cnn"])
    text = rp.sentences(summary, "cnn", "random")
    joined = "\n".join(text)
    assert text[0].startswith("Model ``cnn``: 16 images, 2 metrics (2 faithfulness), 3 explainers")
    assert "``sm`` is better than random on 2 of 2 metrics compared with it (Insertion and Deletion)." in joined
    ig_ins = summary[(summary.explainer == "ig") & (summary.metric == "Insertion")].iloc[0]
    ig_del = summary[(summary.explainer == "ig") & (summary.metric == "Deletion")].iloc[0]
    assert (
        f"Insertion (higher is better) separates ``sm`` from random (better: ``sm`` "
        f"{rp.signed(summary[(summary.explainer == 'sm') & (summary.metric == 'Insertion')]['vs_random'].iloc[0])}"
        in joined
    )
    assert (
        f"does not separate ``ig`` from random at n = 16 (images that would decide the difference: ``ig`` "
        f"{rp._images(ig_ins.images_to_decide)})"
    ) in joined
    assert f"``ig`` {rp._images(ig_del.images_to_decide)}" in joined
    assert "of these 4 comparisons with random about 0.2 would exclude 0 by chance alone" in joined
    # a metric that ranks random above a map by mean says so
    flattering = per_image.copy()
    flattering.loc[(flattering.explainer == "ig") & (flattering.curve == "deletion"), "score"] += 0.2
    summary, _ = rp.summarise(flattering, EXPLAINERS, {"insdel": {}}, ["cnn"])
    joined = "\n".join(rp.sentences(summary, "cnn", "random"))
    assert "By mean score Deletion ranks ``random`` 2 of 3, ahead of ``ig``." in joined
    assert "puts random ahead of ``ig``" in joined


def test_without_random_the_page_says_so_and_compares_nothing():
    explainers = {"sm": {}, "ig": {}}
    per_image = _per_image(explainers=("sm", "ig"))
    summary, paired = rp.summarise(per_image, explainers, {"insdel": {}}, ["cnn"])
    assert rp.random_explainer(explainers) is None and paired.empty and (summary["n_pairs"] == 0).all()
    joined = "\n".join(rp.sentences(summary, "cnn", None))
    assert "no ``random`` explainer" in joined and "separate" not in joined
    best = summary[summary.metric == "Insertion"].sort_values("mean").iloc[-1]
    assert f"Insertion (higher is better): best mean ``{best.explainer}``" in joined
    # an entry running method random under another name is the reference too
    assert rp.random_explainer({"sm": {}, "chance": {"method": "random"}}) == "chance"


def _render(front: str) -> str:
    """The front page as Snakemake's report renders it: Jinja, then docutils (html_body)."""
    from docutils.core import publish_parts
    from jinja2 import Environment

    text = Environment(trim_blocks=True, lstrip_blocks=True).from_string(front).render(snakemake=None)
    return publish_parts(text, writer_name="html", settings_overrides={"report_level": 2})["html_body"]


def test_front_page_opens_on_the_results_and_renders_clean():
    config = load_config("config/photos.yaml")
    curves = ("insertion", "deletion", "road_morf")
    per_image = _per_image(curves=curves, explainers=("sm", "ig", "random"))
    explainers = {"sm": {}, "ig": {}, "random": {}}
    summary, paired = rp.summarise(per_image, explainers, config["evaluators"], ["cnn"])
    fig = rp.overview_figure(summary, ["cnn"], list(explainers), "random")
    fig2 = rp.vs_random_figure(summary, paired, ["cnn"], list(explainers), "random")
    front = rp.front_page(
        captions.run_description(config),
        summary,
        ["cnn"],
        list(explainers),
        "random",
        rp.png_bytes(fig),
        rp.png_bytes(fig2),
    )
    html = _render(front)
    assert "System Message" not in html and "docutils" not in html.split("<h1", 1)[0]
    assert html.index("Results of this run") < html.index("How these numbers were computed")
    assert html.count("data:image/png;base64,") == 2
    # the table's numbers are the summary's (formatted), the sentences are on the page
    for r in summary.itertuples():
        assert f"{rp.fmt(r.mean)}<br><span class='fud-ci'>[{rp.fmt(r.ci_low)}, {rp.fmt(r.ci_high)}]</span>" in html
    assert "does not separate" in html or "separates" in html
    assert (
        "Run <tt class=\"docutils literal\">photos</tt>" in html
        or "Run <code>photos</code>" in html
        or "photos" in html.split("Results of this run", 1)[1][:400]
    )


# ------------------------------------------------------------------ captions and what applies


def _config(tmp_path, evaluators, **more):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"run_name": "sub", "evaluators": evaluators, **more}))
    return load_config(tmp_path / "c.yaml", "config/schema.yaml")


def test_photo_profile_captions_name_only_what_ran():
    config = load_config("config/photos.yaml")
    on = captions.applies(config)
    # no FUD: no Table 4 (one removal sequence, nothing to compare); one sampling evaluator: no radar
    assert not on["table4_kendall"] and not on["fig2_quality_radar"]
    assert on["table7_scores"] and on["table11_ood"] and on["table3_quality"]
    t7 = captions.caption("table7_scores", config)
    assert "Insertion" in t7 and "Deletion" in t7 and "n = 5 images" in t7
    for absent in ("FUD", "Sen-N", "Sensitivity", "INFID", "infidelity"):
        assert absent not in t7, absent
    t11 = captions.caption("table11_ood", config)
    assert "ROAD and IROF" in t11
    for absent in ("IDSDS", "Distill", "Gevaert", "FUD", "reference row"):
        assert absent not in t11, absent
    assert "FUD" not in captions.caption("table9_quality", config)
    # the LaTeX captions cite the paper's table ("Table 11 of FUD") but name only the protocols that ran
    t11_tex = captions.ood_tex_caption("table11_ood", config)
    assert t11_tex.endswith("Appendix protocols (ROAD and IROF) (Table 11 of FUD).")
    t9_tex = captions.quality_tex_caption("table9_quality", config)
    assert "(ROAD and IROF)" in t9_tex and "for reference" not in t9_tex
    ex = captions.caption("dataset_examples", config)
    assert "``class`` column" in ex and "outlined" in ex
    desc = captions.run_description(config)
    assert "5 images of your own folder" in desc and "``effnet``" in desc and "``gradcam``" in desc


def test_default_profile_keeps_every_paper_item_and_names_fud():
    config = load_config("config/config.yaml")
    assert all(captions.applies(config).values())
    assert "Removal sequences of FUD and INS/DEL" in captions.caption("table4_kendall", config)
    assert "with FUD as the reference row" in captions.caption("table11_ood", config)
    t7 = captions.caption("table7_scores", config)
    assert all(w in t7 for w in ("FUD", "Sen-N", "INFID", "Insertion", "Deletion"))


def test_an_evaluator_subset_like_photos_road_and_insdel_only(tmp_path):
    config = _config(tmp_path, SUBSET)
    on = captions.applies(config)
    assert on["table7_scores"] and on["road_scores"] and on["table11_ood"] and on["table9_quality"]
    assert not any(
        on[k] for k in ("table4_kendall", "fig2_quality_radar", "appendix_scores", "srg_scores", "ffidelity_scores")
    )
    t11 = captions.caption("table11_ood", config)
    assert "intermediate samples of ROAD (" in t11 and "reference row" not in t11 and "IROF" not in t11
    t9 = captions.caption("table9_quality", config)
    assert "samples of ROAD (" in t9 and "reference" not in t9
    # the results page of such a run: Insertion, Deletion and ROAD's four curves, nothing else
    curves = ("insertion", "deletion", "road_morf", "road_lerf", "road_morf_accuracy", "road_lerf_accuracy")
    summary, _ = rp.summarise(
        _per_image(curves=curves, explainers=("sm", "ig", "random")),
        {"sm": {}, "ig": {}, "random": {}},
        config["evaluators"],
        ["cnn"],
    )
    road = ["ROAD MoRF", "ROAD LeRF", "ROAD MoRF acc.", "ROAD LeRF acc."]
    by_entry = {"road": road, "insdel": ["Insertion", "Deletion"]}
    assert list(dict.fromkeys(summary["metric"])) == [m for e in config["evaluators"] for m in by_entry[e]]


def test_workflow_targets_leave_out_what_does_not_apply(repo, tmp_path):
    """The photo profile's DAG (a dry run from nothing): the results page, no Table 4, no radar."""
    from workflow_support import snakemake

    res = snakemake(repo, "--configfile", str(repo / "config/photos.yaml"), "--directory", str(tmp_path), "-n")
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    out = res.stdout + res.stderr
    assert "results/photos/report/front.rst" in out and "results/photos/figures/results_vs_random.png" in out
    assert "table4_kendall" not in out and "fig2_quality_radar" not in out
    assert "table7_scores.csv" in out and "table11_ood.csv" in out


# ------------------------------------------------------------------ end to end


TINY = {  # a photo-profile run with ROAD and INS/DEL only: three photos, three explainers
    "run_name": "photos_issue46",
    "data": {"n_eval": 3, "shard_size": 3},
    "explainers": {"_replace": True, "gradcam": {"method": "cam"}, "sm": {}, "random": {}},
    "evaluators": {"_replace": True, "insdel": {"n_steps": 4, "batch_size": 64}, "road": {"batch_size": 32}},
    "evaluation": {
        "ratios": [0.25, 0.75],
        "quality": {"metrics": ["PSNR"], "images_per_shard": 1},
        "gallery_images": 1,
    },
    "analysis": {"bootstrap": 20},
    "plots": {"qualitative_explainers": ["gradcam"]},
}


def _report_parts(html: str) -> tuple[str, list[str]]:
    """(front page html, the captions of the report's files) of a Snakemake report.html."""
    m = re.search(r'var workflow_desc = ("(?:[^"\\]|\\.)*")', html)
    assert m, "report.html has no workflow description"
    found = [json.loads(f'"{c}"') for c in re.findall(r'"caption": "((?:[^"\\]|\\.)*)"', html)]
    return json.loads(m.group(1)), found


@pytest.mark.workflow
def test_report_of_a_road_and_insdel_photo_run(repo, tmp_path):
    """A photo-profile run with ROAD and INS/DEL only, its report.html read back: it opens on the results
    page, whose numbers are a recomputation's from the run's per-image scores; every caption names only
    what ran; no Table 4 (one removal sequence), no radar (one sampling evaluator)."""
    from workflow_support import snakemake

    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    args = (
        "--configfile",
        str(repo / "config/photos.yaml"),
        str(tmp_path / "tiny.yaml"),
        "--directory",
        str(tmp_path / "w"),
    )
    res = snakemake(repo, "--cores", "2", *args)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    results = tmp_path / "w/results/photos_issue46"
    assert not (results / "tables/table4_kendall.csv").exists()
    assert not (results / "figures/fig2_quality_radar.png").exists()
    report = tmp_path / "report.html"
    res = snakemake(repo, *args, "--report", str(report))
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    front, caps = _report_parts(report.read_text(errors="replace"))
    # the report opens on this run's results page
    assert front.index("Results of this run") < 200 and "System Message" not in front
    assert "photos_issue46" in front and "3 images of your own folder" in front
    assert front.count("data:image/png;base64,") == 2
    # its numbers: a recomputation from the run's per-image scores (every curve here lies in [0, 1])
    per_image = pd.read_parquet(results / "analysis/per_image.parquet")
    curves = {
        "insertion": "Insertion",
        "deletion": "Deletion",
        "road_morf": "ROAD MoRF",
        "road_lerf": "ROAD LeRF",
        "road_morf_accuracy": "ROAD MoRF acc.",
        "road_lerf_accuracy": "ROAD LeRF acc.",
    }
    written = pd.read_csv(results / "tables/results.csv")
    assert set(written["metric"]) == set(curves.values())
    assert set(written["explainer"]) == {"gradcam", "sm", "random"}
    for curve, label in curves.items():
        d = per_image[per_image.curve == curve].pivot_table(index="image", columns="explainer", values="score")
        sign = 1.0 if find_curve(curve).higher_is_better else -1.0
        for ex in ("gradcam", "sm", "random"):
            # one interval per cell: the score table's (Table 7 or ROAD's), read back from its CSV
            table = pd.read_csv(results / f"tables/{find_curve(curve).table}.csv")
            t = table[(table.metric == label) & (table.explainer == ex)].iloc[0]
            mean, low, high = t["mean"], t["ci_low"], t["ci_high"]
            row = written[(written.metric == label) & (written.explainer == ex)].iloc[0]
            assert (row["mean"], row["ci_low"], row["ci_high"]) == pytest.approx((mean, low, high), rel=1e-5, abs=1e-9)
            assert f"[{rp.fmt(low)}, {rp.fmt(high)}]" in front
            if ex != "random":
                dm, dl, dh, _ = mean_interval(sign * (d[ex] - d["random"]).to_numpy(), (-1.0, 1.0), 0.95)
                assert (row["vs_random"], row["vs_random_low"], row["vs_random_high"]) == pytest.approx(
                    (dm, dl, dh), rel=1e-5, abs=1e-9
                )
                assert rp._interval_text(dm, dl, dh, True) in front
    # captions: only what ran; nothing for what did not
    text = "\n".join(caps)
    assert "Table 7 (scores)" in text and "ROAD (Rong et al. 2022)" in text and "Table 11" in text
    for absent in (
        "Table 4",
        "Fig. 2",
        "FUD",
        "Sen-N",
        "Sensitivity",
        "INFID",
        "IDSDS",
        "Distill",
        "Gevaert",
        "IROF",
        "reference row",
    ):
        assert absent not in text, absent
    assert "n = 3 images" in text


def test_a_run_with_nothing_to_compare_still_gets_its_page():
    """Only `random` scored, or no scored metric at all: the page and figures say so instead of failing."""
    only_random = _per_image(explainers=("random",))
    summary, paired = rp.summarise(only_random, {"random": {}}, {"insdel": {}}, ["cnn"])
    assert set(summary["explainer"]) == {"random"} and paired.empty
    rp.vs_random_figure(summary, paired, ["cnn"], ["random"], "random")
    nothing, _ = rp.summarise(only_random.iloc[:0], {"random": {}}, {"insdel": {}}, ["cnn"])
    rp.overview_figure(nothing, ["cnn"], ["random"], "random")
    html = _render(rp.front_page("Run ``x``.", nothing, ["cnn"], ["random"], "random", None, None))
    assert "System Message" not in html and "has no per-image scores" in html


# ------------------------------------------------------------------ what the photo profile's report read as false


def test_quality_captions_count_the_images_measured_and_name_no_adaptation_that_did_not_happen():
    """Tables 3 and 9 of the photo profile measure one photo (images_per_shard 1, one shard of five): the
    caption says 1 image and no interval, not 'a bootstrap 95% interval over images'; at 224 px no quality
    metric is adapted to a small image, so no MS-SSIM sentence (PSNR and SSIM only ran)."""
    config = load_config("config/photos.yaml")
    assert captions.quality_images(config) == 1
    t3 = captions.caption("table3_quality", config)
    assert "1 image, the first of the run's one shard" in t3 and "no interval: one image" in t3
    assert "bootstrap" not in t3 and "MS-SSIM" not in t3 and "adapted" not in t3
    t9 = captions.caption("table9_quality", config)
    assert "1 image, the first of the run's one shard" in t9 and "no interval" in t9
    # the default profile (8 images in shards of 4, two per shard: 4 images; 32 px) keeps its interval and
    # names the metrics adapted to its small images
    default = load_config("config/config.yaml")
    d = default["data"]
    per = default["evaluation"]["quality"]["images_per_shard"]
    shards = [min(d["shard_size"], d["n_eval"] - s) for s in range(0, d["n_eval"], d["shard_size"])]
    n = sum(shards) if per is None else sum(min(per, k) for k in shards)
    assert captions.quality_images(default) == n
    t3 = captions.caption("table3_quality", default)
    assert "with a bootstrap 95% interval over images" in t3
    assert f"At {d['synthetic']['image_size']} px, adapted to the small image (MS-SSIM: 2 scale(s)" in t3


def test_dataset_caption_says_which_images_the_figure_picks():
    """The examples figure shows up to two images per class in class-index order (figures.dataset_examples),
    not 'the first evaluated images' in file order: the photo profile's shows its five photos sorted by
    class (tabby cat 281 first, the cameraman's tripod 872 fourth)."""
    from fudbench.report.figures import dataset_examples

    config = load_config("config/photos.yaml")
    text = captions.dataset_caption(config)
    assert text.startswith("Up to 2 images of each class among the 5 evaluated images, in class-index order")
    assert "``class`` column" in text and "outlined" in text
    images = np.zeros((5, 3, 8, 8), dtype=np.float32)
    fig = dataset_examples(
        images,
        [872, 281, 967, 665, 657],
        {872: "tripod", 281: "tabby cat", 967: "espresso", 665: "moped", 657: "missile"},
    )
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[0].startswith("tabby cat") and titles[3].startswith("tripod")


def test_a_cell_has_one_interval_the_tables_own_and_the_page_says_so():
    """A cell showed the page's interval ([0.573, 1.097], pseudo-observations at the observed range) while the
    table showed +-0.019 for the same mean. Now the page's cell interval is the tables' bootstrap (Table 7's
    numbers for the same per-image scores), and the page says so with the run's n."""
    from fudbench.report.tables import table7_scores

    per_image = _per_image(n=5)
    summary, _ = rp.summarise(per_image, EXPLAINERS, {"insdel": {}}, ["cnn"], n_boot=200, seed=7)
    front = rp.front_page("Run ``x``.", summary, ["cnn"], ["sm", "ig", "random"], "random", None, None, bootstrap=200)
    assert "the very interval of that cell in the tables" in front and "(n = 5 images here)" in front
    table, _ = table7_scores(per_image, ["cnn"], ["sm", "ig", "random"], 200, 0.95, 7)
    for r in summary.itertuples():
        t = table[(table.explainer == r.explainer) & (table.metric == r.metric)].iloc[0]
        assert (r.mean, r.ci_low, r.ci_high) == pytest.approx((t["mean"], t["ci_low"], t["ci_high"]), abs=1e-12)


def test_sentences_give_the_range_of_n_where_a_map_lacks_some_images():
    """The photo profile's oracle has no Quantus score on the cat (a uniform map): 4 pairs, the others 5. The
    sentences said 'at n = 5' for all; they now say 'n = 4-5' where the counts differ."""
    per_image = _per_image(n=5, curves=("insertion",), explainers=("sm", "ig", "random"))
    per_image = per_image[~((per_image.explainer == "ig") & (per_image.image == 0))]
    summary, _ = rp.summarise(per_image, {"sm": {}, "ig": {}, "random": {}}, {"insdel": {}}, ["cnn"])
    assert summary.set_index("explainer").loc["ig", "n_pairs"] == 4
    joined = "\n".join(rp.sentences(summary, "cnn", "random"))
    if summary.set_index("explainer").loc["sm", "verdict"].startswith("not separated"):
        assert "at n = 4-5" in joined
    else:
        assert "does not separate ``ig`` from random at n = 4 " in joined
    assert rp.n_text([5, 5]) == "n = 5" and rp.n_text([4, 5, 5]) == "n = 4-5"
