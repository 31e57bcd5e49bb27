"""Mean confidence per curve, explainer and kept (or removed) ratio of a finished run,
over its images and models: what a curve's area is made of.

    ./fud python studies/round3_endpoint/confidence_by_ratio.py results/endpoint --curves fud fud_bottom -o out.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd


def confidence_by_ratio(records: pd.DataFrame, curves) -> pd.DataFrame:
    """Rows curve x explainer, columns the kept ratio, values the mean confidence."""
    d = records[records["curve"].isin(curves)]
    return d.pivot_table(index=["curve", "explainer"], columns="kept", values="confidence", aggfunc="mean")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))  # studies/round3_endpoint/this file
    from fudbench.config.cli import user_file

    ap.add_argument("results", type=user_file, help="a finished run's results/<run_name>")
    ap.add_argument("--curves", nargs="+", default=["fud", "fud_bottom"])
    ap.add_argument("-o", "--out", type=user_file, required=True, help="CSV to write")
    args = ap.parse_args(argv)
    table = confidence_by_ratio(pd.read_parquet(args.results / "analysis" / "records.parquet"), args.curves)
    table.columns = [f"kept_{k:.2f}" for k in table.columns]
    table.round(4).to_csv(args.out)
    print(f"{len(table)} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
