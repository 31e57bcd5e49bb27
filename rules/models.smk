# Train (or verify) the classifiers and the diffusion score model, then record
# their quality gates.


rule train_classifier:
    input:
        train=rules.make_dataset.output.train,
        val=rules.make_dataset.output.val,
        test=rules.make_dataset.output.test,
        classes=rules.make_dataset.output.classes,
    output:
        model=f"{RESULTS}/models/{{model}}.pt",
        metrics=f"{RESULTS}/models/{{model}}_metrics.json",
    params:
        classifier=lambda w: config["models"]["classifiers"][w.model],
        gates=config["models"]["gates"],
        job=job_params(),
    threads: 2
    resources:
        gpu=GPU,
        mem_mb=4000,
        runtime=60,
    log:
        f"{RESULTS}/logs/train_classifier/{{model}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/train_classifier/{{model}}.tsv"
    conda:
        ENV_TORCH
    script:
        "../scripts/train_classifier.py"


if config["models"]["score_model"]["source"] == "train":

    rule train_score_model:
        input:
            train=rules.make_dataset.output.train,
        output:
            model=f"{RESULTS}/models/score_model.pt",
            manifest=f"{RESULTS}/models/score_model.json",
        params:
            score_model=config["models"]["score_model"],
            job=job_params(),
            training_inputs=score_model_training_inputs(config),
        threads: 2
        resources:
            gpu=GPU,
            mem_mb=8000,
            runtime=240,
        log:
            f"{RESULTS}/logs/train_score_model.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_score_model.tsv"
        conda:
            ENV_TORCH
        script:
            "../scripts/train_score_model.py"

else:

    rule verify_score_model:
        input:
            shipped=repo_path(config["models"]["score_model"]["shipped"]),
        output:
            model=f"{RESULTS}/models/score_model.pt",
            manifest=f"{RESULTS}/models/score_model.json",
        params:
            training_inputs=score_model_training_inputs(config),
        log:
            f"{RESULTS}/logs/verify_score_model.log",
        conda:
            ENV_TORCH
        script:
            "../scripts/verify_score_model.py"


rule check_score_model:
    input:
        score_model=f"{RESULTS}/models/score_model.pt",
        classifiers=expand(f"{RESULTS}/models/{{model}}.pt", model=MODELS),
        test=rules.make_dataset.output.test,
        classes=rules.make_dataset.output.classes,
    output:
        report=f"{RESULTS}/models/score_model_check.json",
        samples=f"{RESULTS}/models/score_model_samples.npz",
    params:
        gates=config["models"]["gates"],
        models=MODELS,
        job=job_params(),
    threads: 2
    resources:
        gpu=GPU,
        mem_mb=4000,
        runtime=60,
    log:
        f"{RESULTS}/logs/check_score_model.log",
    conda:
        ENV_TORCH
    script:
        "../scripts/check_score_model.py"


rule plot_score_model_samples:
    input:
        samples=rules.check_score_model.output.samples,
    output:
        figure_paths("score_model_samples"),
    params:
        plots=config["plots"],
    log:
        f"{RESULTS}/logs/plot_score_model_samples.log",
    conda:
        ENV_REPORT
    script:
        "../scripts/plot_score_model_samples.py"


rule model_quality:
    input:
        classifiers=expand(f"{RESULTS}/models/{{model}}_metrics.json", model=MODELS),
        score_model=rules.check_score_model.output.report,
    output:
        f"{RESULTS}/models/quality.json",
    params:
        models=MODELS,
        gates=config["models"]["gates"],
    log:
        f"{RESULTS}/logs/model_quality.log",
    conda:
        ENV_ANALYSIS
    script:
        "../scripts/model_quality.py"
