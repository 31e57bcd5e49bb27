# FUD's sampler from the inside (Figs. 3, 5, 6; Table 5) and its cost (Table 10).


rule fud_diagnostics:
    input:
        model=f"{RESULTS}/models/{{model}}.pt",
        score_model=f"{RESULTS}/models/score_model.pt",
        images=rules.make_dataset.output.eval,
        attributions=f"{RESULTS}/attributions/{{model}}/{DIAG['explainer']}/shard0.npz",
    output:
        traces=f"{RESULTS}/diagnostics/{{model}}_traces.parquet",
        constraint=f"{RESULTS}/diagnostics/{{model}}_constraint.npz",
    log:
        f"{RESULTS}/logs/fud_diagnostics/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/fud_diagnostics/{{model}}.tsv"
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=120,
    params:
        diagnostics=DIAG,
        fud=lambda w: config["evaluators"]["fud"],
        evaluation={k: config["evaluation"][k] for k in ("ratios", "reduction")},
        shard_size=config["data"]["shard_size"],
        job=job_params(),
    script:
        "../scripts/fud_diagnostics.py"


rule plot_fud_diagnostics:
    input:
        traces=expand(rules.fud_diagnostics.output.traces, model=MODELS),
        clean_energy=rules.clean_energy.output[0],
    output:
        fig3=reported_figure("fig3_auroc_by_step"),
        fig5=reported_figure("fig5_l2_by_step"),
        fig6=reported_figure("fig6_final_l2"),
    log:
        f"{RESULTS}/logs/plot_fud_diagnostics.log",
    conda:
        ENV_ANALYSIS
    params:
        diagnostics=DIAG,
        fud=lambda w: config["evaluators"]["fud"],
        # absent score model: these rules are not in the DAG (no FUD), the value unused
        num_train_timesteps=(config["models"].get("score_model") or {}).get("num_train_timesteps", 1000),
        models=MODELS,
        plots=config["plots"],
    script:
        "../scripts/plot_fud_diagnostics.py"


rule table5_constraint:
    input:
        images=rules.make_dataset.output.eval,
        constraint=expand(rules.fud_diagnostics.output.constraint, model=MODELS),
    output:
        tex=f"{RESULTS}/tables/table5_constraint.tex",
        csv=reported_table(f"{RESULTS}/tables/table5_constraint.csv", "table5_constraint"),
    log:
        f"{RESULTS}/logs/table5_constraint.log",
    conda:
        ENV_TORCH
    params:
        models=MODELS,
        explainer=DIAG["explainer"],
        quality=config["evaluation"]["quality"],
        analysis={k: config["analysis"][k] for k in ("bootstrap", "ci")},
        seed=config["seed"],
    script:
        "../scripts/table5_constraint.py"


# One job times every step count (issue 47): ten jobs paid ten start-ups, model loads and warm-ups.
rule fud_timing:
    input:
        model=f"{RESULTS}/models/{TIMING['model']}.pt",
        score_model=f"{RESULTS}/models/score_model.pt",
        images=rules.make_dataset.output.eval,
        attributions=f"{RESULTS}/attributions/{TIMING['model']}/{DIAG['explainer']}/shard0.npz",
    output:
        f"{RESULTS}/timing/fud_timing.parquet",
    log:
        f"{RESULTS}/logs/fud_timing.log",
    benchmark:
        f"{RESULTS}/benchmarks/fud_timing.tsv"
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=120,
    params:
        timing=TIMING,
        fud=lambda w: config["evaluators"]["fud"],
        evaluation={k: config["evaluation"][k] for k in ("ratios", "reduction")},
        shard_size=config["data"]["shard_size"],
        job=job_params(),
    script:
        "../scripts/fud_timing.py"


rule table10_timing:
    input:
        rules.fud_timing.output[0],
    output:
        tex=f"{RESULTS}/tables/table10_timing.tex",
        csv=reported_table(f"{RESULTS}/tables/table10_timing.csv", "table10_timing"),
    log:
        f"{RESULTS}/logs/table10_timing.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/table10_timing.py"
