# The results page, the top of report.html (fudbench.report.results_page): every explainer x metric with
# its 95% interval, each explainer's paired difference from `random` (where the run has one), plain
# sentences generated from the numbers, and the report's front page (results/<run>/report/front.rst, given
# to `snakemake --report` by the Snakefile's `report:` directive once it exists).
from fudbench.report.captions import run_description

# RANDOM_REFERENCE, results_figure and results_page_targets: rules/common.smk


rule results_page:
    input:
        per_image=rules.aggregate_records.output.per_image,
    output:
        **({"vs_random": results_figure("results_vs_random", "results_vs_random")} if RANDOM_REFERENCE else {}),
        csv=report(f"{RESULTS}/tables/results.csv", caption="../report/captions/results.rst", category="Results"),
        paired=f"{RESULTS}/tables/results_paired.csv",
        front=f"{RESULTS}/report/front.rst",
        overview=results_figure("results_overview", "results_overview"),
    log:
        f"{RESULTS}/logs/results_page.log",
    conda:
        ENV_ANALYSIS  # scipy (inference.mean_interval) and matplotlib
    params:
        description=run_description(config),
        explainers=config["explainers"],
        evaluators=config["evaluators"],
        models=MODELS,
        ci=config["analysis"]["ci"],
        bootstrap=config["analysis"]["bootstrap"],
        seed=config["seed"],
        dpi=config["plots"]["dpi"],
    script:
        "../scripts/results_page.py"
