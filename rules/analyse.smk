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
        csv=reported_table(f"{RESULTS}/tables/{{table}}.csv", "table"),
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        models=MODELS,
        explainers=EXPLAINERS,
    wildcard_constraints:
        table="table4_kendall|table7_scores|srg_scores|road_scores|ffidelity_scores|appendix_scores",
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
        reported_figure("confidence_vs_ratio"),
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
        fig4=reported_figure("fig4_qualitative"),
        grid=reported_figure("qualitative_samples"),
    params:
        plots=config["plots"],
        models=MODELS,
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


# Tables 2 and 8 (main evaluators; 8 adds AUPR-In) and 11 (appendix protocols).
rule table_ood:
    input:
        records=rules.aggregate_records.output.records,
        clean_energy=rules.clean_energy.output[0],
    output:
        tex=f"{RESULTS}/tables/{{table}}.tex",
        csv=reported_table(f"{RESULTS}/tables/{{table}}.csv", "table_ood"),
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci", "ood_pooling")},
        seed=config["seed"],
        models=MODELS,
        explainers=POOLED_EXPLAINERS,
    wildcard_constraints:
        table="table2_ood|table11_ood",
    log:
        f"{RESULTS}/logs/table_ood/{{table}}.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/table_ood.py"


rule table8_ood:
    # Table 2's summary holds all four metrics: Table 8 shows them all.
    input:
        f"{RESULTS}/tables/table2_ood.csv",
    output:
        tex=f"{RESULTS}/tables/table8_ood.tex",
        csv=reported_table(f"{RESULTS}/tables/table8_ood.csv", "table8_ood"),
    params:
        models=MODELS,
    log:
        f"{RESULTS}/logs/table_ood/table8_ood.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/table8_ood.py"


ALL_QUALITY = expand(
    f"{RESULTS}/quality/{{evaluator}}/shard{{shard}}.parquet",
    evaluator=EVALUATORS,
    shard=SHARDS,
)


rule table3_quality:
    input:
        ALL_QUALITY,
    output:
        tex=f"{RESULTS}/tables/table3_quality.tex",
        csv=reported_table(f"{RESULTS}/tables/table3_quality.csv", "table3_quality"),
        radar=reported_figure("fig2_quality_radar"),
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        plots=config["plots"],
        table="table3_quality",
        explainers=POOLED_EXPLAINERS,
    log:
        f"{RESULTS}/logs/table3_quality.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/table_quality.py"


rule table9_quality:
    input:
        ALL_QUALITY,
    output:
        tex=f"{RESULTS}/tables/table9_quality.tex",
        csv=reported_table(f"{RESULTS}/tables/table9_quality.csv", "table9_quality"),
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        table="table9_quality",
        explainers=POOLED_EXPLAINERS,
    log:
        f"{RESULTS}/logs/table9_quality.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/table_quality.py"
