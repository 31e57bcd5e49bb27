# Attributions per model x explainer x shard.


rule explain:
    input:
        unpack(lambda w: plugin_inputs(config["explainers"][w.explainer])),
        model=f"{RESULTS}/models/{{model}}.pt",
        images=rules.make_dataset.output.eval,
    output:
        f"{RESULTS}/attributions/{{model}}/{{explainer}}/shard{{shard}}.npz",
    log:
        f"{RESULTS}/logs/explain/{{model}}/{{explainer}}/shard{{shard}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/explain/{{model}}/{{explainer}}/shard{{shard}}.tsv"
    # Before the other ready jobs: a model's FUD evaluate job, the longest, waits for all of its explainers.
    priority: 10
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=4000,
        runtime=120,
    params:
        explainer=lambda w: explainer_settings(w.explainer),
        target=config["target"],
        seed_group=lambda w: SEED_GROUPS[w.model],  # explain / evaluate noise: fudbench.core.seeding
        shard_size=config["data"]["shard_size"],
        job=job_params(),
    script:
        "../scripts/explain.py"
