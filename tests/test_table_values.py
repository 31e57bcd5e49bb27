"""Tables 2, 3, 4 and 7 from toy records whose every cell is worked out by hand
here, the .tex of each read back and compared with its CSV
(fudbench.report.sanity), and bold-best.

Intervals: with two images per cell the resampled means take three values, the
two images' own and their average, with probabilities 1/4, 1/2, 1/4, so the
95% percentile interval is [smaller, larger] image value (for Tables 2 and 3:
the statistic of each image alone). That makes the intervals hand-computable.
"""

import math

import numpy as np
import pandas as pd
import pytest

from fudbench.report import sanity
from fudbench.analysis.curves import per_image_scores
from fudbench.core.io import write_csv, write_text
from fudbench.report.ood_quality import table2_ood, table3_quality
from fudbench.report.tables import table4_kendall, table7_scores

RATIOS = np.round(np.arange(1, 10) / 10, 1)
N_BOOT = 400


def _write(tmp_path, name, summary, tex):
    """As the workflow's table scripts write them."""
    write_csv(tmp_path / f"{name}.csv", summary, index=False, float_format="%.6g")
    write_text(tmp_path / f"{name}.tex", tex)


def _line(tex, first_cells):
    """The body line of `tex` that starts with these cells."""
    start = " & ".join(first_cells) + " & "
    found = [line for line in tex.splitlines() if line.startswith(start)]
    assert len(found) == 1, (start, tex)
    return found[0]


def _cells(tex, first_cells):
    return [sanity.parse_cell(c) for c in sanity._row(_line(tex, first_cells))[len(first_cells) :]]


def _assert_cell(cell, mean, half):
    assert cell.mean == pytest.approx(mean, abs=0.5 * 10**-cell.decimals), (cell, mean)
    assert cell.half == pytest.approx(half, abs=0.5 * 10**-cell.decimals), (cell, half)


# ------------------------------------------------------------------ Table 4


def _tau_rows(model, explainer, curve, image, confidence):
    return [
        {
            "model": model,
            "explainer": explainer,
            "curve": curve,
            "image": image,
            "step": j,
            "kept": round(1 - r, 1),
            "removed": r,
            "confidence": c,
        }
        for j, (r, c) in enumerate(zip(RATIOS, confidence))
    ]


DECREASING = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
ONE_SWAP = [0.9, 0.8, 0.6, 0.7, 0.5, 0.4, 0.3, 0.2, 0.1]  # 1 of 36 pairs discordant: (35 - 1) / 36
ONE_TIE = [0.9, 0.8, 0.7, 0.7, 0.5, 0.4, 0.3, 0.2, 0.1]  # tau-b: 35 / sqrt(36 * 35)


def _table4_records():
    rows = []
    rows += _tau_rows("cnn", "ig", "fud", 0, DECREASING)  # tau 1
    rows += _tau_rows("cnn", "ig", "fud", 1, ONE_SWAP)  # tau 17/18
    rows += _tau_rows("cnn", "ig", "deletion_ratios", 0, DECREASING[::-1])  # tau -1
    rows += _tau_rows("cnn", "ig", "deletion_ratios", 1, [0.5] * 9)  # constant: 0, counted
    for image in (0, 1):
        rows += _tau_rows("cnn", "sm", "fud", image, ONE_TIE)
        rows += _tau_rows("cnn", "sm", "deletion_ratios", image, DECREASING)
    return pd.DataFrame(rows)


def test_table4_cells_by_hand(tmp_path):
    per_image = per_image_scores(_table4_records())
    summary, tex = table4_kendall(per_image, ["cnn", "vit"], ["ig", "sm"], N_BOOT, 0.95, 0)
    s = summary.set_index(["model", "evaluator", "explainer"])
    tie = 35 / math.sqrt(36 * 35)
    expected = {
        ("cnn", "FUD", "ig"): ((1 + 17 / 18) / 2, 17 / 18, 1.0, 0),
        ("cnn", "INS/DEL", "ig"): (-0.5, -1.0, 0.0, 1),
        ("cnn", "FUD", "sm"): (tie, tie, tie, 0),
        ("cnn", "INS/DEL", "sm"): (1.0, 1.0, 1.0, 0),
    }
    for key, (mean, lo, hi, n_constant) in expected.items():
        assert s.loc[key, "mean"] == pytest.approx(mean)
        assert (s.loc[key, "ci_low"], s.loc[key, "ci_high"]) == pytest.approx((lo, hi))
        assert s.loc[key, "n_constant"] == n_constant and s.loc[key, "n_images"] == 2
    assert _line(tex, ["cnn", "FUD"]) == (
        "cnn & FUD & 0.9722\\,{\\scriptsize$\\pm$0.0278} & 0.9860\\,{\\scriptsize$\\pm$0.0000} \\\\"
    )
    assert _line(tex, ["vit", "INS/DEL"]) == "vit & INS/DEL & -- & -- \\\\"  # no records: no cell
    ins = _cells(tex, ["cnn", "INS/DEL"])
    _assert_cell(ins[0], -0.5, 0.5)
    _write(tmp_path, "table4_kendall", summary, tex)
    assert sanity.tex_matches_csv(tmp_path) == []


# ------------------------------------------------------------------ Table 7


def _curve_rows(model, explainer, image, curve, x_name, xs, ys, **extra):
    other = "removed" if x_name == "kept" else "kept"
    return [
        {
            "model": model,
            "explainer": explainer,
            "curve": curve,
            "image": image,
            "step": j,
            x_name: x,
            other: 1 - x,
            "confidence": y,
            **{k: v[j] for k, v in extra.items()},
        }
        for j, (x, y) in enumerate(zip(xs, ys))
    ]


FIVE = [0.0, 0.25, 0.5, 0.75, 1.0]


def _table7_records():
    """Two images of (cnn, ig). Hand values (normalised trapezoid = (sum - ends/2) * h / span):
    FUD:       rho^2 -> (2.85 - 0.41) * 0.1 / 0.8 = 0.305;  constant 0.6 -> 0.6
    Insertion: [.2 .4 .9 1 1] -> (3.5 - 0.6) / 4 = 0.725;  [0 0 0 0 1] -> 0.125
    Deletion:  [1 .3 .1 0 0] -> (1.4 - 0.5) / 4 = 0.225 for both images
    Sen-N:     mean of [.2 .4 .6] = 0.4;  mean of [-.1 .1 .3] = 0.1
    INFID:     0.3;  0.5"""
    rows = []
    rows += _curve_rows("cnn", "ig", 0, "fud", "kept", RATIOS, RATIOS**2)
    rows += _curve_rows("cnn", "ig", 1, "fud", "kept", RATIOS, [0.6] * 9)
    rows += _curve_rows("cnn", "ig", 0, "insertion", "kept", FIVE, [0.2, 0.4, 0.9, 1.0, 1.0])
    rows += _curve_rows("cnn", "ig", 1, "insertion", "kept", FIVE, [0.0, 0.0, 0.0, 0.0, 1.0])
    for image in (0, 1):
        rows += _curve_rows("cnn", "ig", image, "deletion", "removed", FIVE, [1.0, 0.3, 0.1, 0.0, 0.0])
    rows += _curve_rows(
        "cnn", "ig", 0, "sensitivity_n", "removed", [0.1, 0.5, 0.9], [0.5] * 3, correlation=[0.2, 0.4, 0.6]
    )
    rows += _curve_rows(
        "cnn", "ig", 1, "sensitivity_n", "removed", [0.1, 0.5, 0.9], [0.5] * 3, correlation=[-0.1, 0.1, 0.3]
    )
    rows += _curve_rows("cnn", "ig", 0, "infidelity", "removed", [0.5], [0.5], infidelity=[0.3])
    rows += _curve_rows("cnn", "ig", 1, "infidelity", "removed", [0.5], [0.5], infidelity=[0.5])
    # rows out of order: the AUC must sort by x itself
    return pd.DataFrame(rows).sample(frac=1.0, random_state=0).reset_index(drop=True)


def test_table7_cells_by_hand(tmp_path):
    per_image = per_image_scores(_table7_records())
    summary, tex = table7_scores(per_image, ["cnn"], ["ig"], N_BOOT, 0.95, 0)
    s = summary.set_index("metric")
    expected = {
        "FUD": (0.305, 0.6),
        "Insertion": (0.725, 0.125),
        "Deletion": (0.225, 0.225),
        "Sen-N": (0.4, 0.1),
        "INFID": (0.3, 0.5),
    }
    assert list(s.index) == list(expected)  # the paper's column order
    for metric, (a, b) in expected.items():
        assert s.loc[metric, "mean"] == pytest.approx((a + b) / 2), metric
        assert (s.loc[metric, "ci_low"], s.loc[metric, "ci_high"]) == pytest.approx((min(a, b), max(a, b)))
    assert dict(s["higher_is_better"]) == {
        "FUD": True,
        "Insertion": True,
        "Deletion": False,
        "Sen-N": True,
        "INFID": False,
    }
    cells = _cells(tex, ["cnn", "ig"])
    for cell, (a, b) in zip(cells, expected.values()):
        _assert_cell(cell, (a + b) / 2, abs(a - b) / 2)
    assert "Sen-N $\\uparrow$ & INFID $\\downarrow$" in tex
    assert "0.2500\\,{\\scriptsize$\\pm$0.1500}" in _line(tex, ["cnn", "ig"])  # Sen-N, exactly
    _write(tmp_path, "table7_scores", summary, tex)
    assert sanity.tex_matches_csv(tmp_path) == []


# ------------------------------------------------------------------ Table 2


def _table2_inputs():
    """Clean energies -3 (image 0), -2 (image 1). FUD samples, step 0: -1, -2.5;
    step 1: -4, -5. INS/DEL samples, step 0: 0, 1 (above every clean energy)."""
    rows = [
        ("fud", 0, 0, -1.0),
        ("fud", 0, 1, -2.5),
        ("fud", 1, 0, -4.0),
        ("fud", 1, 1, -5.0),
        ("deletion_ratios", 0, 0, 0.0),
        ("deletion_ratios", 0, 1, 1.0),
    ]
    records = pd.DataFrame(
        [{"model": "cnn", "explainer": "ig", "curve": c, "step": s, "image": i, "energy": e} for c, s, i, e in rows]
    )
    return records, {"cnn": np.array([-3.0, -2.0])}


def test_table2_cells_by_hand(tmp_path):
    """Per run (score = -energy; ID 3, 2):
    FUD step 0, OOD 1, 2.5: AUROC 3/4, FPR95 1/2 (threshold 2 admits 2.5),
      AUPR-In 1/2 * 1 + 1/2 * 2/3 = 5/6, AUPR-Out 5/6;
    FUD step 1, OOD 4, 5: AUROC 0, FPR95 1, AUPR-In 1/2 * 1/3 + 1/2 * 2/4 = 5/12, AUPR-Out 5/12;
    Table value = the mean over runs: 0.375, 0.75, 0.625, 0.625.
    INS/DEL, OOD -0, -1: perfectly separated: 1, 0, 1, 1.
    AUROC interval of FUD: resample image 0 twice -> runs 1 and 0 -> 0.5; image 1
    twice -> runs 0 and 0 -> 0; both -> 0.375: 95% interval [0, 0.5]."""
    records, clean = _table2_inputs()
    evals = {"deletion_ratios": "INS/DEL", "fud": "FUD"}
    summary, tex = table2_ood(
        records,
        clean,
        evals,
        ["cnn"],
        n_boot=N_BOOT,
        ci=0.95,
        seed=0,
        pooling="run",
        columns=["AUROC", "FPR95", "AUPR-Out"],
    )
    v = summary.set_index(["evaluator", "metric"])
    expected = {
        "FUD": {"AUROC": 0.375, "FPR95": 0.75, "AUPR-In": 0.625, "AUPR-Out": 0.625},
        "INS/DEL": {"AUROC": 1.0, "FPR95": 0.0, "AUPR-In": 1.0, "AUPR-Out": 1.0},
    }
    for ev, metrics in expected.items():
        for m, want in metrics.items():
            assert v.loc[(ev, m), "value"] == pytest.approx(want), (ev, m)
    assert (v.loc[("FUD", "AUROC"), "ci_low"], v.loc[("FUD", "AUROC"), "ci_high"]) == pytest.approx((0.0, 0.5))
    assert v.loc[("FUD", "AUROC"), "n_runs"] == 2 and v.loc[("FUD", "AUROC"), "n_ood"] == 4
    assert _line(tex, ["FUD"]).startswith("FUD & 0.3750\\,{\\scriptsize$\\pm$0.2500} & 0.7500")
    assert "AUPR-In" not in tex.split("\\midrule")[1]  # Table 2 leaves AUPR-In to Table 8
    _write(tmp_path, "table2_ood", summary, tex)
    assert sanity.tex_matches_csv(tmp_path) == []


# ------------------------------------------------------------------ Table 3


def _table3_frame():
    """Per evaluator, the image's rows (pooled row mean, not a mean of image means):
    FUD      PSNR image 0: 20, 22; image 1: 30 -> 24 (the image means' mean would be 25.5)
             SSIM 0.5, 0.7; 0.9 -> 0.7 (interval [0.6, 0.9]);   GMSD 0.2, 0.2; 0.2 -> 0.2
    INS/DEL  PSNR 10; 12 -> 11;  SSIM 0.8; 0.8 -> 0.8;  GMSD 0.1; 0.1 -> 0.1
    Best: PSNR FUD (higher), SSIM INS/DEL (higher), GMSD INS/DEL (lower).
    FUD's PSNR interval: image 0 twice -> 21, image 1 twice -> 30: [21, 30]."""
    rows = [
        ("FUD", 0, 20, 0.5, 0.2),
        ("FUD", 0, 22, 0.7, 0.2),
        ("FUD", 1, 30, 0.9, 0.2),
        ("INS/DEL", 0, 10, 0.8, 0.1),
        ("INS/DEL", 1, 12, 0.8, 0.1),
    ]
    return pd.DataFrame(
        [
            {"evaluator": e, "model": "cnn", "explainer": "ig", "image": i, "step": k, "PSNR": p, "SSIM": s, "GMSD": g}
            for k, (e, i, p, s, g) in enumerate(rows)
        ]
    )


def test_table3_cells_and_bold_by_hand(tmp_path):
    summary, tex = table3_quality(
        _table3_frame(), n_boot=N_BOOT, ci=0.95, seed=0, metrics=("PSNR", "SSIM", "GMSD"), evaluators=["INS/DEL", "FUD"]
    )
    s = summary.set_index(["evaluator", "metric"])
    means = {
        ("FUD", "PSNR"): 24,
        ("FUD", "SSIM"): 0.7,
        ("FUD", "GMSD"): 0.2,
        ("INS/DEL", "PSNR"): 11,
        ("INS/DEL", "SSIM"): 0.8,
        ("INS/DEL", "GMSD"): 0.1,
    }
    for key, want in means.items():
        assert s.loc[key, "mean"] == pytest.approx(want), key
    assert (s.loc[("FUD", "PSNR"), "ci_low"], s.loc[("FUD", "PSNR"), "ci_high"]) == pytest.approx((21, 30))
    assert _line(tex, ["FUD"]) == (
        "FUD & \\textbf{24.00\\,{\\scriptsize$\\pm$4.50}} & "
        "0.700\\,{\\scriptsize$\\pm$0.150} & 0.200\\,{\\scriptsize$\\pm$0.000} \\\\"
    )
    ins = _cells(tex, ["INS/DEL"])
    assert [c.bold for c in ins] == [False, True, True]  # SSIM highest, GMSD lowest
    assert tex.index("INS/DEL &") < tex.index("FUD &")  # row order as given
    _write(tmp_path, "table3_quality", summary, tex)
    assert sanity.tex_matches_csv(tmp_path) == [] and sanity.bold_marks_best(tmp_path) == []


# ------------------------------------------------------------------ the checker itself


def _toy_tables(tmp_path):
    per_image = per_image_scores(_table7_records())
    _write(tmp_path, "table7_scores", *table7_scores(per_image, ["cnn"], ["ig"], N_BOOT, 0.95, 0))
    _write(
        tmp_path,
        "table3_quality",
        *table3_quality(_table3_frame(), n_boot=N_BOOT, seed=0, metrics=("PSNR", "SSIM", "GMSD")),
    )
    return tmp_path


def test_a_changed_tex_cell_is_caught(tmp_path):
    """A mean or a half-width one unit off in the last digit shown, and a
    header arrow turned, are each reported; the untouched tables pass."""
    d = _toy_tables(tmp_path)
    assert sanity.tex_matches_csv(d) == []
    path = d / "table7_scores.tex"
    tex = path.read_text()
    for old, new, what in [
        ("0.2500\\,", "0.2501\\,", "Sen-N"),
        ("$\\pm$0.1500", "$\\pm$0.1499", "half-width"),
        ("Deletion $\\downarrow$", "Deletion $\\uparrow$", "arrow"),
    ]:
        assert old in tex
        path.write_text(tex.replace(old, new))
        problems = sanity.tex_matches_csv(d)
        assert len(problems) == 1, (what, problems)
    path.write_text(tex)


def test_a_missing_or_extra_csv_row_is_caught(tmp_path):
    d = _toy_tables(tmp_path)
    csv = pd.read_csv(d / "table7_scores.csv")
    csv[csv.metric != "INFID"].to_csv(d / "table7_scores.csv", index=False)
    assert sanity.tex_matches_csv(d) == ["table7_scores ('cnn', 'ig', 'INFID'): in the .tex, not in the CSV"]


def test_a_row_missing_from_the_tex_is_caught(tmp_path):
    d = _toy_tables(tmp_path)
    path = d / "table3_quality.tex"
    tex = path.read_text()
    path.write_text(tex.replace(_line(tex, ["FUD"]) + "\n", ""))
    problems = sanity.tex_matches_csv(d)
    assert len(problems) == 3 and all("('FUD'" in p and "not in the .tex" in p for p in problems)


def test_bold_on_the_wrong_cell_is_caught(tmp_path):
    d = _toy_tables(tmp_path)
    path = d / "table3_quality.tex"
    tex = path.read_text()
    line = _line(tex, ["INS/DEL"])
    cells = sanity._row(line)
    cells[3] = cells[3].removeprefix("\\textbf{").removesuffix("}")  # GMSD's bold removed ...
    fud = _line(tex, ["FUD"])
    fud_cells = sanity._row(fud)
    fud_cells[3] = "\\textbf{" + fud_cells[3] + "}"  # ... and put on the worse one
    path.write_text(tex.replace(line, " & ".join(cells) + " \\\\").replace(fud, " & ".join(fud_cells) + " \\\\"))
    problems = sanity.bold_marks_best(d)
    assert len(problems) == 1 and "GMSD" in problems[0]
