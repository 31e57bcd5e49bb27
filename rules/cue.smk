# The planted-cue ground truth (data.synthetic.cue; fudbench.meta.cue,
# docs/meta_evaluation.md, "Planted cue"): the intervention check that licenses
# it (with the dose-response), each map's coverage of the cue, each metric's
# agreement with that coverage, and the endpoint cells (FUD symmetric / bottom
# minus paper FUD). Without a cue none of these rules is in the DAG.
CUE = config["data"]["source"] == "synthetic" and bool(config["data"]["synthetic"].get("cue"))
CUE_CHECK = config["analysis"].get("cue") or {}
# rule all's share (the Snakefile)
CUE_TARGETS = table_paths("cue_intervention", "cue_dose", "cue_truth", "cue_verdict", "cue_endpoint") if CUE else []


if CUE:

    rule cue_intervention:
        input:
            models=expand(f"{RESULTS}/models/{{model}}.pt", model=MODELS),
            test=rules.make_dataset.output.test,
            classes=rules.make_dataset.output.classes,
        output:
            tex=f"{RESULTS}/tables/cue_intervention.tex",
            csv=reported_table(f"{RESULTS}/tables/cue_intervention.csv", "cue_intervention"),
            dose_tex=f"{RESULTS}/tables/cue_dose.tex",
            dose_csv=reported_table(f"{RESULTS}/tables/cue_dose.csv", "cue_dose"),
        log:
            f"{RESULTS}/logs/cue_intervention.log",
        conda:
            ENV_TORCH
        params:
            synthetic=config["data"]["synthetic"],
            seed=config["seed"],
            device="cpu",  # 4 x n_test forwards per model: not worth a GPU request (profiles/slurm)
            models=MODELS,
            check=CUE_CHECK,
            ci=config["analysis"]["ci"],
        script:
            "../scripts/cue_intervention.py"

    rule cue_truth:
        input:
            attributions=expand(
                f"{RESULTS}/attributions/{{model}}/{{explainer}}/shard{{shard}}.npz",
                model=MODELS,
                explainer=EXPLAINERS,
                shard=SHARDS,
            ),
            images=rules.make_dataset.output.eval,
        output:
            coverage=f"{RESULTS}/analysis/cue_coverage.parquet",
            tex=f"{RESULTS}/tables/cue_truth.tex",
            csv=reported_table(f"{RESULTS}/tables/cue_truth.csv", "cue_truth"),
        log:
            f"{RESULTS}/logs/cue_truth.log",
        conda:
            ENV_ANALYSIS
        params:
            reduction=config["evaluation"]["reduction"],  # the metrics' per-pixel scores
            analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
            seed=config["seed"],
        script:
            "../scripts/cue_truth.py"

    rule cue_verdict:
        input:
            per_image=rules.aggregate_records.output.per_image,
            coverage=rules.cue_truth.output.coverage,
            intervention=rules.cue_intervention.output.csv,
        output:
            tex=f"{RESULTS}/tables/cue_verdict.tex",
            csv=reported_table(f"{RESULTS}/tables/cue_verdict.csv", "cue_verdict"),
            per_image=f"{RESULTS}/analysis/cue_spearman_per_image.csv",
            endpoint_tex=f"{RESULTS}/tables/cue_endpoint.tex",
            endpoint_csv=reported_table(f"{RESULTS}/tables/cue_endpoint.csv", "cue_endpoint"),
        log:
            f"{RESULTS}/logs/cue_verdict.log",
        conda:
            ENV_ANALYSIS
        params:
            explainers=config["explainers"],
            evaluators=config["evaluators"],
            check=CUE_CHECK,
            analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
            seed=config["seed"],
        script:
            "../scripts/cue_verdict.py"
