# fud-repro: Faithfulness Under the Distribution, end to end.
#   snakemake --configfile config/config.yaml      (or ./fud run)
# The config is validated against config/schema.yaml before any job starts.
import sys
from pathlib import Path

from snakemake.utils import min_version

min_version("9.0")

REPO = Path(workflow.basedir)
# Parse-time imports of the library; script jobs get it via scripts/_fudbench_path.py.
sys.path.insert(0, str(REPO / "src"))

from fudbench.config import validate_config
from fudbench.preflight import check_results_path, check_results_writable

# A --configfile on the command line replaces the default instead of being
# merged into it (merging would keep explainers the chosen config leaves out).
if not workflow.overwrite_configfiles:
    configfile: str(REPO / "config/config.yaml")


validate_config(config, REPO / "config/schema.yaml")
check_results_path(f"results/{config['run_name']}")


# `snakemake --report results/<run>/report.html` (or ./fud report): every table
# and figure with a caption saying what it shows and how it was computed.
report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/explain.smk"
include: "rules/evaluate.smk"
include: "rules/analyse.smk"
include: "rules/diagnostics.smk"
include: "rules/ffidelity.smk"
include: "rules/meta.smk"


# Real runs only (Snakemake skips onstart in dry-runs): a read-only results
# directory fails here, before any job, instead of in the first job that writes.
onstart:
    check_results_writable(RESULTS)
    # Paper profile: missing or wrong ImageNet / weights / checkpoint, each named
    # with its fetch command (fudbench.assets); checksums cached by size + mtime.
    from fudbench.assets import check_assets

    for note in check_assets(config, REPO, cache_file=f"{RESULTS}/logs/asset_digests.json"):
        print(f"note: {note}", file=sys.stderr)


rule all:
    input:
        all_targets(),
    default_target: True
