import numpy as np
import pandas as pd
import pytest

from fudbench.analysis.bootstrap import bootstrap_ci
from fudbench.analysis.curves import normalised_auc, per_image_scores
from fudbench.report.tables import table4_kendall, table7_scores


def _records():
    rng = np.random.default_rng(0)
    rows = []
    for model in ("cnn", "vit"):
        for ex in ("sm", "ig"):
            for image in range(5):
                for j, r in enumerate(np.arange(1, 10) / 10):
                    base = {"model": model, "explainer": ex, "image": image, "step": j}
                    rows.append(
                        {**base, "curve": "fud", "kept": r, "removed": 1 - r, "confidence": r + 0.01 * rng.random()}
                    )
                    rows.append(
                        {
                            **base,
                            "curve": "deletion_ratios",
                            "kept": 1 - r,
                            "removed": r,
                            "confidence": 0.5 + 0.1 * rng.random(),
                        }
                    )
                    rows.append(
                        {
                            **base,
                            "curve": "sensitivity_n",
                            "kept": 1 - r,
                            "removed": r,
                            "confidence": 0.5,
                            "correlation": 0.2 + 0.1 * (ex == "ig"),
                        }
                    )
                rows.append(
                    {
                        "model": model,
                        "explainer": ex,
                        "image": image,
                        "step": 0,
                        "curve": "infidelity",
                        "kept": 0.5,
                        "removed": 0.5,
                        "confidence": 0.5,
                        "infidelity": 0.3,
                    }
                )
                for j, f in enumerate(np.linspace(0, 1, 5)):
                    base = {"model": model, "explainer": ex, "image": image, "step": j}
                    rows.append({**base, "curve": "deletion", "kept": 1 - f, "removed": f, "confidence": 1 - f})
                    rows.append({**base, "curve": "insertion", "kept": f, "removed": 1 - f, "confidence": f})
    return pd.DataFrame(rows)


def test_per_image_scores_and_tables_are_finite():
    per_image = per_image_scores(_records())
    fud = per_image[per_image.curve == "fud"]
    assert (fud["tau"] > 0.9).all()  # confidence falls as more is removed
    t4, tex4 = table4_kendall(per_image, ["cnn", "vit"], ["sm", "ig"], 100, 0.95, 0)
    assert len(t4) == 8 and np.isfinite(t4[["mean", "ci_low", "ci_high"]].to_numpy()).all()
    assert "\\toprule" in tex4 and "\\bottomrule" in tex4 and "INS/DEL" in tex4
    t7, tex7 = table7_scores(per_image, ["cnn", "vit"], ["sm", "ig"], 100, 0.95, 0)
    assert set(t7.metric) == {"FUD", "Insertion", "Deletion", "Sen-N", "INFID"}
    d = t7[(t7.model == "cnn") & (t7.explainer == "sm")].set_index("metric")["mean"]
    assert d["Insertion"] == np.float64(0.5) and d["Deletion"] == np.float64(0.5)
    assert d["Sen-N"] == pytest.approx(0.2) and d["INFID"] == pytest.approx(0.3)
    assert t7[(t7.explainer == "ig") & (t7.metric == "Sen-N")]["mean"].iloc[0] == pytest.approx(0.3)
    assert "Deletion $\\downarrow$" in tex7 and "Sen-N $\\uparrow$" in tex7 and "INFID $\\downarrow$" in tex7


def test_normalised_auc_and_bootstrap():
    assert normalised_auc([0.1, 0.5, 0.9], [1, 1, 1]) == 1.0
    assert normalised_auc([0, 1], [0, 1]) == 0.5
    mean, lo, hi = bootstrap_ci(np.arange(100.0), 500, 0.95, 0)
    assert mean == 49.5 and lo < mean < hi
    assert bootstrap_ci([1.0, 2.0], 10, 0.95, 1) == bootstrap_ci([1.0, 2.0], 10, 0.95, 1)


def test_table_headers_and_rows_escape_an_explainer_name_once():
    """`ig_d00` prints as ig\\_d00 in the header (Table 4) and the rows (Table 7), not ig\\\\_d00."""
    per_image = per_image_scores(_records().replace({"explainer": {"ig": "ig_d00"}}))
    _, tex4 = table4_kendall(per_image, ["cnn", "vit"], ["sm", "ig_d00"], 20, 0.95, 0)
    _, tex7 = table7_scores(per_image, ["cnn", "vit"], ["sm", "ig_d00"], 20, 0.95, 0)
    for tex in (tex4, tex7):
        assert "ig\\_d00" in tex and "ig\\\\_d00" not in tex
