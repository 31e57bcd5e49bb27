"""The reconstruction-distance diagnostic of the meta-evaluation."""

import pandas as pd
import pytest

from fudbench.meta.reconstruction import main, reconstruction_by_explainer


def _records():
    rows = []
    for explainer, l2 in (("ig", 4.0), ("random", 1.0)):
        for image in (0, 1):
            for kept in (0.1, 0.30000001, 0.5):
                rows.append(
                    {
                        "model": "m",
                        "explainer": explainer,
                        "curve": "fud",
                        "image": image,
                        "kept": kept,
                        "l2": l2 + image,
                        "confidence": 0.5 + 0.1 * image,
                    }
                )
    rows.append(
        {"model": "m", "explainer": "ig", "curve": "deletion", "image": 0, "kept": 0.1, "l2": 9.0, "confidence": 0.0}
    )
    return pd.DataFrame(rows)


def test_means_over_images_per_explainer_and_kept_fraction():
    t = reconstruction_by_explainer(_records(), ["fud"], [0.1, 0.3]).set_index(["explainer", "kept"])
    assert len(t) == 4 and set(t["curve"]) == {"fud"}
    assert t.loc[("ig", 0.3), "l2"] == pytest.approx(4.5)  # 0.30000001 counts for 0.3
    assert t.loc[("random", 0.1), "l2"] == pytest.approx(1.5)
    assert t.loc[("random", 0.1), "confidence"] == pytest.approx(0.55)
    assert (t["n_images"] == 2).all()
    only = reconstruction_by_explainer(_records(), ["fud"], [0.5], explainers=["random"])
    assert only["explainer"].tolist() == ["random"]
    with pytest.raises(ValueError, match="no records of curves"):
        reconstruction_by_explainer(_records(), ["fud"], [0.9])
    # a record counts once, for the nearest requested fraction within the tolerance
    near = reconstruction_by_explainer(_records(), ["fud"], [0.09, 0.2], tolerance=0.015)
    assert near["kept"].tolist() == [0.09, 0.09] and (near["n_images"] == 2).all()


def test_main_reads_the_runs_records(tmp_path, capsys):
    (tmp_path / "analysis").mkdir()
    _records().to_parquet(tmp_path / "analysis" / "records.parquet")
    table = main([str(tmp_path), "--curves", "fud", "--kept", "0.1"])
    assert len(table) == 2 and "random" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="not found"):
        main([str(tmp_path / "missing")])
