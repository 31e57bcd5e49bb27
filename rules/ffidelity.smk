# F-Fidelity (seeds/004): fine-tune a surrogate of each classifier with random
# removal of up to beta of the pixels. The `ffid` evaluate jobs read it as the
# asset "surrogate". Only beta and the fine-tuning settings reach this rule,
# so changing alpha, n_samples or the sparsities reruns the evaluations only.

# The surrogate is fine-tuned with the settings of the first entry running ffid
# (config checks require its aliases to share beta and finetune).
FFID_ENTRIES = entries_of(config["evaluators"], "ffid")

# A shipped classifier may ship its surrogate too (models.classifiers.<m>.shipped_surrogate).
SHIPPED_SURROGATES = {
    m: CLASSIFIERS[m]["shipped_surrogate"] for m in SHIPPED if CLASSIFIERS[m].get("shipped_surrogate")
}
SURROGATES_TRAINED = [m for m in MODELS if m not in SHIPPED_SURROGATES]

# What the surrogate's weights depend on: beta and the fine-tuning settings of the first ffid entry.
FFID_FINETUNING = (
    {k: v for k, v in resolved_settings(FFID_ENTRIES[0]).items() if k in ("beta", "finetune")} if FFID_ENTRIES else None
)


if FFID_ENTRIES and SHIPPED_SURROGATES:

    rule verify_surrogate:
        input:
            shipped=lambda w: repo_path(SHIPPED_SURROGATES[w.model]),
            classifier=f"{RESULTS}/models/{{model}}.pt",
        output:
            model=f"{RESULTS}/models/{{model}}_surrogate.pt",
            metrics=f"{RESULTS}/models/{{model}}_surrogate_metrics.json",
        log:
            f"{RESULTS}/logs/verify_surrogate/{{model}}.log",
        wildcard_constraints:
            model="|".join(SHIPPED_SURROGATES),
        priority: 20  # a second's check that F-Fidelity's long evaluate jobs wait for
        conda:
            ENV_TORCH
        params:
            training_inputs=lambda w: surrogate_training_inputs(config, w.model, FFID_FINETUNING),
        script:
            "../scripts/verify_surrogate.py"


if FFID_ENTRIES and SURROGATES_TRAINED:

    rule train_surrogate:
        input:
            classifier=f"{RESULTS}/models/{{model}}.pt",
            train=rules.make_dataset.output.train,
            val=rules.make_dataset.output.val,
        output:
            model=f"{RESULTS}/models/{{model}}_surrogate.pt",
            metrics=f"{RESULTS}/models/{{model}}_surrogate_metrics.json",
        log:
            f"{RESULTS}/logs/train_surrogate/{{model}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_surrogate/{{model}}.tsv"
        wildcard_constraints:
            model="|".join(SURROGATES_TRAINED),
        conda:
            ENV_TORCH
        threads: 1  # see train_classifier
        resources:
            gpu=GPU,
            mem_mb=4000,
            runtime=60,
        params:
            ffid=FFID_FINETUNING,
            job=job_params(),
        script:
            "../scripts/train_surrogate.py"
