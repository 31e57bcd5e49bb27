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

from fudbench.config.validate import validate_config
from fudbench.config.files import command_line_config, typed_overrides, with_default
from fudbench.workflow.preflight import check_results_path

# `config` holds the --configfile files merged in order (later keys win, mappings
# merge) and --config. Files that lack a top-level key the schema requires are an
# overlay of config/config.yaml; a complete config is used as it is (the default's
# explainers and evaluators merged into config/meta.yaml would change that run).
# Snakemake's own merge cannot restore an entry an earlier file nulled (`ig: null`, then `ig: {}`
# stays null), so the files are merged again here (fudbench.config.files.command_line_config).
_settings = getattr(workflow, "config_settings", None)
# --config's values are re-read as YAML means them (typed_overrides: Snakemake leaves nested ones strings).
_given = (
    command_line_config(_settings.configfiles or [], typed_overrides(_settings.config))
    if _settings is not None
    else config
)
_merged = with_default(_given, REPO / "config/config.yaml", REPO / "config/schema.yaml")
config.clear()
config.update(_merged)


validate_config(config, REPO / "config/schema.yaml")
check_results_path(f"results/{config['run_name']}")


# `snakemake --report results/<run>/report.html` (or ./fud report): every table
# and figure with a caption saying what it shows and how it was computed. It opens on
# the run's results page (rules/report.smk writes results/<run>/report/front.rst);
# report/workflow.rst stands in for a run that has not made it yet.
_FRONT = Path(f"results/{config['run_name']}/report/front.rst").resolve()


report: str(_FRONT) if _FRONT.is_file() else "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/explain.smk"
include: "rules/evaluate.smk"
include: "rules/analyse.smk"
include: "rules/report.smk"
include: "rules/diagnostics.smk"
include: "rules/ffidelity.smk"
include: "rules/meta.smk"
include: "rules/cue.smk"
include: "rules/provenance.smk"


# Real runs only (Snakemake skips onstart in dry-runs): a read-only results
# directory fails here, before any job, instead of in the first job that writes.
onstart:
    # the checks (results writable, free space, assets), then this invocation's line in
    # results/<run>/invocations.jsonl (its commit, command line and input digests; run_info.json is
    # written by the first only): fudbench.workflow.preflight.start_run. A refused run leaves neither.
    # Paper profile: missing or wrong ImageNet / weights / checkpoint, each named with its fetch command
    # (fudbench.assets.check); checksums cached by size + mtime.
    from fudbench.core.hardware import cpu_info as _cpu_info
    from fudbench.workflow.preflight import start_run

    for note in start_run(RESULTS, config, REPO, machine={"cpu": _cpu_info()["model"]}):
        print(f"note: {note}", file=sys.stderr)


# Intermediates a job found corrupt and deleted (results/<run>/.damaged) are
# requested too, so that Snakemake remakes them and reruns their readers (it
# does not remake a missing intermediate while the tables above it exist):
# fudbench.core.damage explains the choice. Intermediates deleted by hand are found the same
# way, by a presence check of what finished jobs read (fudbench.core.damage.remake_missing;
# the main process only: jobs parse the Snakefile too, and need no targets).
from fudbench.core.damage import remake_damaged, remake_missing


rule all:
    default_target: True
    input:
        all_targets(),
        CUE_TARGETS,  # rules/cue.smk: empty without data.synthetic.cue
        remake_damaged(RESULTS, workflow.rules),
        remake_missing(RESULTS, workflow.rules) if getattr(workflow, "is_main_process", True) else [],
