# Aggregate records into per-image scores, then tables and figures.

ALL_RECORDS = expand(
    f"{RESULTS}/records/{{model}}/{{explainer}}/{{evaluator}}/shard{{shard}}.parquet",
    model=MODELS,
    explainer=EXPLAINERS,
    evaluator=EVALUATORS,
    shard=SHARDS,
)


rule aggregate_records:
    input:
        ALL_RECORDS,
    output:
        records=f"{RESULTS}/analysis/records.parquet",
        per_image=f"{RESULTS}/analysis/per_image.parquet",
    log:
        f"{RESULTS}/logs/aggregate_records.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/aggregate_records.py"


rule table:
    input:
        per_image=rules.aggregate_records.output.per_image,
    output:
        tex=f"{RESULTS}/tables/{{table}}.tex",
        csv=f"{RESULTS}/tables/{{table}}.csv",
    params:
        analysis=config["analysis"],
        seed=config["seed"],
        models=MODELS,
        explainers=EXPLAINERS,
    wildcard_constraints:
        table="table4_kendall|table7_scores",
    log:
        f"{RESULTS}/logs/table/{{table}}.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/write_table.py"


rule plot_confidence:
    input:
        records=rules.aggregate_records.output.records,
    output:
        figure_paths("confidence_vs_ratio"),
    params:
        plots=config["plots"],
        models=MODELS,
        explainers=EXPLAINERS,
    log:
        f"{RESULTS}/logs/plot_confidence.log",
    conda:
        ENV_REPORT
    script:
        "../scripts/plot_confidence.py"


rule plot_qualitative:
    input:
        rules.gallery.output[0],
    output:
        figure_paths("qualitative_samples"),
    params:
        plots=config["plots"],
    log:
        f"{RESULTS}/logs/plot_qualitative.log",
    conda:
        ENV_REPORT
    script:
        "../scripts/plot_qualitative.py"


rule clean_energy:
    input:
        images=rules.make_dataset.output.eval,
        classifiers=expand(f"{RESULTS}/models/{{model}}.pt", model=MODELS),
    output:
        f"{RESULTS}/analysis/clean_energy.parquet",
    params:
        models=MODELS,
        job=job_params(),
    resources:
        gpu=GPU,
    log:
        f"{RESULTS}/logs/clean_energy.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/clean_energy.py"


rule table2_ood:
    input:
        records=rules.aggregate_records.output.records,
        clean_energy=rules.clean_energy.output[0],
    output:
        tex=f"{RESULTS}/tables/table2_ood.tex",
        csv=f"{RESULTS}/tables/table2_ood.csv",
    params:
        analysis=config["analysis"],
        seed=config["seed"],
        models=MODELS,
    log:
        f"{RESULTS}/logs/table2_ood.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/table2_ood.py"


rule table3_quality:
    input:
        expand(
            f"{RESULTS}/quality/{{evaluator}}/shard{{shard}}.parquet",
            evaluator=EVALUATORS,
            shard=SHARDS,
        ),
    output:
        tex=f"{RESULTS}/tables/table3_quality.tex",
        csv=f"{RESULTS}/tables/table3_quality.csv",
        radar=figure_paths("fig2_quality_radar"),
    params:
        analysis=config["analysis"],
        seed=config["seed"],
        plots=config["plots"],
    log:
        f"{RESULTS}/logs/table3_quality.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/table3_quality.py"
