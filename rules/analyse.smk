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
    log:
        f"{RESULTS}/logs/table/{{table}}.log",
    wildcard_constraints:
        table="table4_kendall|table7_scores|srg_scores|road_scores|ffidelity_scores|appendix_scores",
    conda:
        ENV_ANALYSIS
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        models=MODELS,
        explainers=EXPLAINERS,
        # the report's caption, naming what ran (fudbench.report.captions)
        report_captions=lambda w: {"table": report_caption(w.table, config)},
    script:
        "../scripts/write_table.py"


rule plot_confidence:
    input:
        records=rules.aggregate_records.output.records,
    output:
        reported_figure("confidence_vs_ratio"),
    log:
        f"{RESULTS}/logs/plot_confidence.log",
    conda:
        ENV_REPORT
    params:
        plots=config["plots"],
        models=MODELS,
        explainers=EXPLAINERS,
        report_captions={"confidence_vs_ratio": report_caption("confidence_vs_ratio", config)},
    script:
        "../scripts/plot_confidence.py"


rule plot_qualitative:
    input:
        gallery=rules.gallery.output[0],
        # class names (the labels file's `class` column for folder data) in the figures' titles
        classes=rules.make_dataset.output.classes,
        labels=FOLDER["labels"] if config["data"]["source"] == "folder" else [],
        images=rules.make_dataset.output.eval,
    output:
        fig4=reported_figure("fig4_qualitative"),
        grid=reported_figure("qualitative_samples"),
    log:
        f"{RESULTS}/logs/plot_qualitative.log",
    conda:
        ENV_REPORT
    params:
        plots=config["plots"],
        models=MODELS,
        curves=qualitative_curves(config),
        report_captions={k: report_caption(k, config) for k in ("fig4_qualitative", "qualitative_samples")},
    script:
        "../scripts/plot_qualitative.py"


# Feature-based OOD detectors of Table 2 (Mahalanobis, k-NN; fudbench.analysis.feature_ood):
# one reference per classifier, fitted on a seeded subset of reference images
# (synthetic: the training split; ImageNet: validation images outside the
# evaluated sample; folder: the listed images after the evaluated ones).
# Settings: analysis.ood_reference, feature_ood's constants where it is silent.
from fudbench.analysis.feature_ood import KNN_K, REFERENCE_IMAGES, RIDGE

_OOD = config["analysis"].get("ood_reference") or {}
OOD_REFERENCE = {
    "n_images": _OOD.get("images", REFERENCE_IMAGES),
    "ridge": _OOD.get("ridge", RIDGE),
    "knn_k": _OOD.get("knn_k", KNN_K),
    "batch_size": 256,
}
OOD_SOURCE = config["data"]["source"]
# the data source's part of the reference spec (feature_ood.reference_images) and the files it reads
OOD_REFERENCE_SOURCE = (
    {"source": OOD_SOURCE, "imagenet": IMAGENET}
    if OOD_SOURCE == "imagenet"
    else (
        {"source": OOD_SOURCE, "folder": FOLDER, "n_eval": config["data"]["n_eval"]}
        if OOD_SOURCE == "folder"
        else {"source": OOD_SOURCE}
    )
)
OOD_REFERENCE_INPUTS = (
    {
        "manifest": rules.make_dataset.output.manifest,
        "imagenet": present(IMAGENET["root"], IMAGENET.get("labels"), IMAGENET.get("synsets")),
    }
    if OOD_SOURCE == "imagenet"
    else (
        {"manifest": rules.make_dataset.output.manifest, "labels": FOLDER["labels"]}
        if OOD_SOURCE == "folder"
        else {"train": rules.make_dataset.output.train}
    )
)


rule ood_reference:
    input:
        unpack(lambda w: OOD_REFERENCE_INPUTS),
        model=f"{RESULTS}/models/{{model}}.pt",
    output:
        f"{RESULTS}/ood_reference/{{model}}.npz",
    log:
        f"{RESULTS}/logs/ood_reference/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/ood_reference/{{model}}.tsv"
    # every evaluate job of the model waits for it, FUD's (the longest) too: without a priority it
    # ran after the other model's short jobs and held one of FUD's two jobs back by a minute
    priority: 20
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=60,
    params:
        reference={**OOD_REFERENCE, "images": OOD_REFERENCE_SOURCE},
        job=job_params(),
    script:
        "../scripts/ood_reference.py"


rule clean_energy:
    # energy, mahalanobis, knn of the clean images and of their 10%-zeroed copies (sanity_*)
    input:
        images=rules.make_dataset.output.eval,
        classifiers=expand(f"{RESULTS}/models/{{model}}.pt", model=MODELS),
        references=expand(rules.ood_reference.output[0], model=MODELS),
    output:
        f"{RESULTS}/analysis/clean_energy.parquet",
    log:
        f"{RESULTS}/logs/clean_energy.log",
    conda:
        ENV_TORCH
    resources:
        gpu=GPU,
    params:
        models=MODELS,
        job=job_params(),
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
    log:
        f"{RESULTS}/logs/table_ood/{{table}}.log",
    wildcard_constraints:
        table="table2_ood|table11_ood",
    conda:
        ENV_ANALYSIS
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci", "ood_pooling")},
        seed=config["seed"],
        models=MODELS,
        explainers=POOLED_EXPLAINERS,
        report_captions=lambda w: {"table_ood": report_caption(w.table, config)},
        tex_caption=lambda w: ood_tex_caption(w.table, config),
    script:
        "../scripts/table_ood.py"


rule table8_ood:
    # Table 2's summary holds all four metrics: Table 8 shows them all.
    input:
        f"{RESULTS}/tables/table2_ood.csv",
    output:
        tex=f"{RESULTS}/tables/table8_ood.tex",
        csv=reported_table(f"{RESULTS}/tables/table8_ood.csv", "table8_ood"),
    log:
        f"{RESULTS}/logs/table_ood/table8_ood.log",
    conda:
        ENV_ANALYSIS
    params:
        models=MODELS,
        report_captions={"table8_ood": report_caption("table8_ood", config)},
    script:
        "../scripts/table8_ood.py"


ALL_QUALITY = expand(
    f"{RESULTS}/quality/{{evaluator}}/shard{{shard}}.parquet",
    evaluator=SAMPLING_EVALUATORS,
    shard=SHARDS,
)


rule table3_quality:
    input:
        ALL_QUALITY,
    output:
        **({"radar": reported_figure("fig2_quality_radar")} if REPORT_ITEMS["fig2_quality_radar"] else {}),
        tex=f"{RESULTS}/tables/table3_quality.tex",
        csv=reported_table(f"{RESULTS}/tables/table3_quality.csv", "table3_quality"),
        # Fig. 2 only where a radar has a shape: 2+ evaluators, 3+ metrics (fudbench.report.captions.applies)
    log:
        f"{RESULTS}/logs/table3_quality.log",
    conda:
        ENV_TORCH
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        plots=config["plots"],
        table="table3_quality",
        explainers=POOLED_EXPLAINERS,
        report_captions={
            k: report_caption(k, config) for k in ("table3_quality", "fig2_quality_radar") if REPORT_ITEMS[k]
        },
    script:
        "../scripts/table_quality.py"


rule table9_quality:
    input:
        ALL_QUALITY,
    output:
        tex=f"{RESULTS}/tables/table9_quality.tex",
        csv=reported_table(f"{RESULTS}/tables/table9_quality.csv", "table9_quality"),
    log:
        f"{RESULTS}/logs/table9_quality.log",
    conda:
        ENV_TORCH
    params:
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
        table="table9_quality",
        explainers=POOLED_EXPLAINERS,
        report_captions={"table9_quality": report_caption("table9_quality", config)},
        tex_caption=quality_tex_caption("table9_quality", config),
    script:
        "../scripts/table_quality.py"
