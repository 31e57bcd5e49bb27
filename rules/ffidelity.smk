# F-Fidelity (seeds/004): fine-tune a surrogate of each classifier with random
# removal of up to beta of the pixels. The `ffid` evaluate jobs read it as the
# asset "surrogate". Only beta and the fine-tuning settings reach this rule,
# so changing alpha, n_samples or the sparsities reruns the evaluations only.

# The surrogate is fine-tuned with the settings of the first entry running ffid
# (config checks require its aliases to share beta and finetune).
FFID_ENTRIES = entries_of(config["evaluators"], "ffid")

if FFID_ENTRIES:

    rule train_surrogate:
        input:
            classifier=f"{RESULTS}/models/{{model}}.pt",
            train=rules.make_dataset.output.train,
            val=rules.make_dataset.output.val,
        output:
            model=f"{RESULTS}/models/{{model}}_surrogate.pt",
            metrics=f"{RESULTS}/models/{{model}}_surrogate_metrics.json",
        params:
            ffid=lambda w: {k: v for k, v in resolved_settings(FFID_ENTRIES[0]).items() if k in ("beta", "finetune")},
            job=job_params(),
        threads: 1  # see train_classifier
        resources:
            gpu=GPU,
            mem_mb=4000,
            runtime=60,
        log:
            f"{RESULTS}/logs/train_surrogate/{{model}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_surrogate/{{model}}.tsv"
        conda:
            ENV_TORCH
        script:
            "../scripts/train_surrogate.py"
