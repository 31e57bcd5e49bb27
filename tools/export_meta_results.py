"""Copy a finished meta run's verdict into the repository, so a reader sees it
without running: the report card, the claims table, the ground-truth table
(CSV and LaTeX) and the forest plot (PNG), with a README that names the
commit, the command, the machine and the wall time.

    ./fud python tools/export_meta_results.py results/meta studies/meta_profile_runs/results \
        --command "./fud run --configfile config/meta.yaml --cores 2" --wall "1 h 32 min"

The run's own run_info.json gives the commit and the machine; a rerun of that
commit writes the same CSVs (tests/test_meta_results.py checks the copies
against a run when FUD_META_RESULTS points at one).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

TABLES = (
    "report_card",
    "claims",
    "meta_ground_truth",
)  # the agreement matrix (~250 KB + 600 KB figure) stays in the run
FIGURES = ("report_card",)
# copied where the run has them: the family gate and the pre-registered endpoint (studies/round3_endpoint), and
# the per-image scores every claim and endpoint cell is computed from (so a reader can recompute them)
OPTIONAL = (
    "tables/family_gate.csv",
    "tables/family_gate.tex",
    "tables/endpoint.csv",
    "tables/endpoint.tex",
    "analysis/per_image.parquet",
)


def exported_files(results: Path) -> list[tuple[Path, str]]:
    """(source, name in the export) of every file the export copies; a missing one is an error."""
    out = []
    for stem in TABLES:
        for ext in ("csv", "tex"):
            path = results / "tables" / f"{stem}.{ext}"
            out.append((path, path.name))
    out += [(results / "figures" / f"{stem}.png", f"{stem}.png") for stem in FIGURES]
    out.append((results / "run_info.json", "run_info.json"))
    out += [(results / rel, Path(rel).name) for rel in OPTIONAL if (results / rel).is_file()]
    missing = [str(p) for p, _ in out if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"not a finished meta run: missing {missing}")
    return out


def readme(info: dict, command: str, wall: str) -> str:
    return "\n".join(
        [
            "# The meta profile's verdict, as run",
            "",
            "Copied from a finished run by `tools/export_meta_results.py`.",
            "",
            f"- commit: {info.get('commit', '?')}",
            f"- command: `{command}`",
            f"- machine: {info.get('cpu_model') or info.get('gpu') or '?'} ({info.get('cores', '?')} cores; cpu flags "
            f"{info.get('cpu_flags', '?')}); FUD's U-Net {info.get('fud_precision', '?')}; torch {info.get('torch', '?')}",
            f"- wall time: {wall}",
            "",
            "Files: `report_card.csv/.tex/.png` (per model and metric: recovery of each family with its interval, "
            "anchor ranks, agreement, cost), `claims.csv/.tex` (the headline claims decided), "
            "`meta_ground_truth.csv/.tex` (macro and micro recovery), `run_info.json`.",
            "",
        ]
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from fudbench.config.cli import user_file

    ap.add_argument("results", type=user_file, help="a finished meta run's results/<run_name>")
    ap.add_argument("out", type=user_file, help="where to copy it (e.g. studies/<name>/results)")
    ap.add_argument("--command", required=True, help="the command that made the run")
    ap.add_argument("--wall", required=True, help="its wall time")
    args = ap.parse_args(argv)
    try:
        files = exported_files(args.results)
    except FileNotFoundError as exc:
        print(f"export_meta_results: {exc}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    for source, name in files:
        shutil.copyfile(source, args.out / name)
    info = json.loads((args.results / "run_info.json").read_text())
    (args.out / "README.md").write_text(readme(info, args.command, args.wall))
    print(f"{len(files)} files -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
