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

# A --configfile on the command line replaces the default instead of being
# merged into it (merging would keep explainers the chosen config leaves out).
if not workflow.overwrite_configfiles:
    configfile: str(REPO / "config/config.yaml")


validate_config(config, REPO / "config/schema.yaml")


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/explain.smk"
include: "rules/evaluate.smk"
include: "rules/analyse.smk"


rule all:
    input:
        all_targets(),
    default_target: True
