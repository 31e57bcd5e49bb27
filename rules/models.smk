# Train (or verify, or fetch and convert) the classifiers and the diffusion
# score model, then record their quality gates. The small models of the
# synthetic benchmark are trained here; the paper profile's torchvision
# classifiers and guided-diffusion U-Net are pretrained: their files are
# checksum-verified and written in the same checkpoint format, as is your own
# classifier (arch: import), built by its factory.
from fudbench.assets.check import classifier_weights, present, resolve_path, resolved_classifier
from fudbench.core.fingerprint import classifier_training_inputs, surrogate_training_inputs
from fudbench.models.imported import factory_sources, is_imported
from fudbench.models.torchvision_models import is_torchvision

CLASSIFIERS = config["models"]["classifiers"]
PRETRAINED = [m for m in MODELS if is_torchvision(CLASSIFIERS[m]["arch"]) or is_imported(CLASSIFIERS[m]["arch"])]
# source: shipped = the weights this workflow's train_classifier rule produced, shipped in
# assets/ so that every machine starts from the same weights (fudbench.models.shipped).
SHIPPED = [m for m in MODELS if m not in PRETRAINED and CLASSIFIERS[m].get("source", "train") == "shipped"]
TRAINED = [m for m in MODELS if m not in PRETRAINED and m not in SHIPPED]
# None when no evaluator reads the score model: its rules are left out (SCORE_MODEL_USED, rules/common.smk)
SCORE_SOURCE = config["models"]["score_model"]["source"] if SCORE_MODEL_USED else None


if TRAINED:

    rule train_classifier:
        input:
            train=rules.make_dataset.output.train,
            val=rules.make_dataset.output.val,
            test=rules.make_dataset.output.test,
            classes=rules.make_dataset.output.classes,
        output:
            model=f"{RESULTS}/models/{{model}}.pt",
            metrics=f"{RESULTS}/models/{{model}}_metrics.json",
        log:
            f"{RESULTS}/logs/train_classifier/{{model}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_classifier/{{model}}.tsv"
        wildcard_constraints:
            model="|".join(TRAINED),
        priority: 20  # everything downstream waits for the classifiers
        conda:
            ENV_TORCH
        # One thread: a 2-thread job waits for both cores to be free at once, and the
        # stream of 1-thread jobs rarely leaves them so (it starved the second model).
        threads: 1
        resources:
            gpu=GPU,
            mem_mb=4000,
            runtime=60,
        params:
            classifier=lambda w: config["models"]["classifiers"][w.model],
            gates=config["models"]["gates"],
            job=job_params(),
        script:
            "../scripts/train_classifier.py"


if SHIPPED:

    # The shipped checkpoint's sha256 and training fingerprint (the fingerprint is
    # also checked at parse time), then its test accuracy against the manifest's.
    rule verify_classifier:
        input:
            shipped=lambda w: repo_path(CLASSIFIERS[w.model]["shipped"]),
            test=rules.make_dataset.output.test,
        output:
            model=f"{RESULTS}/models/{{model}}.pt",
            metrics=f"{RESULTS}/models/{{model}}_metrics.json",
        log:
            f"{RESULTS}/logs/verify_classifier/{{model}}.log",
        wildcard_constraints:
            model="|".join(SHIPPED),
        priority: 20  # as train_classifier: everything downstream waits for it
        conda:
            ENV_TORCH
        threads: 1
        resources:
            mem_mb=2000,
            runtime=10,
        params:
            training_inputs=lambda w: classifier_training_inputs(config, w.model),
            gates=config["models"]["gates"],
            min_accuracy=lambda w: config["models"]["classifiers"][w.model].get("min_accuracy"),
        script:
            "../scripts/verify_classifier.py"


if PRETRAINED:

    # No training: verify the weights file's checksum (torchvision), build the
    # network (your factory), load the weights strictly, measure top-1 accuracy on
    # the evaluated images (a check of the label mapping). A factory's source files
    # (its module, its package, the local modules it imports) are inputs: editing
    # one rebuilds the checkpoint and what depends on it.
    rule prepare_classifier:
        input:
            weights=lambda w: present(classifier_weights(resolved_classifier(CLASSIFIERS[w.model], REPO))),
            factory=lambda w: present(*factory_sources(CLASSIFIERS[w.model], REPO)),
            images=rules.make_dataset.output.eval,
        output:
            model=f"{RESULTS}/models/{{model}}.pt",
            metrics=f"{RESULTS}/models/{{model}}_metrics.json",
        log:
            f"{RESULTS}/logs/prepare_classifier/{{model}}.log",
        benchmark:
            f"{RESULTS}/benchmarks/prepare_classifier/{{model}}.tsv"
        wildcard_constraints:
            model="|".join(PRETRAINED),
        conda:
            ENV_TORCH
        threads: 2
        resources:
            gpu=GPU,
            mem_mb=8000,
            runtime=30,
        params:
            classifier=lambda w: resolved_classifier(CLASSIFIERS[w.model], REPO),
            gates=config["models"]["gates"],
            job=job_params(),
        script:
            "../scripts/prepare_classifier.py"


if SCORE_SOURCE == "train":

    rule train_score_model:
        input:
            train=rules.make_dataset.output.train,
        output:
            model=f"{RESULTS}/models/score_model.pt",
            manifest=f"{RESULTS}/models/score_model.json",
        log:
            f"{RESULTS}/logs/train_score_model.log",
        benchmark:
            f"{RESULTS}/benchmarks/train_score_model.tsv"
        conda:
            ENV_TORCH
        threads: 2
        resources:
            gpu=GPU,
            mem_mb=8000,
            runtime=240,
        params:
            score_model=config["models"]["score_model"],
            job=job_params(),
            training_inputs=score_model_training_inputs(config),
        script:
            "../scripts/train_score_model.py"

elif SCORE_SOURCE == "shipped":

    rule verify_score_model:
        input:
            shipped=repo_path(config["models"]["score_model"]["shipped"]),
        output:
            model=f"{RESULTS}/models/score_model.pt",
            manifest=f"{RESULTS}/models/score_model.json",
        log:
            f"{RESULTS}/logs/verify_score_model.log",
        priority: 20  # FUD's evaluate jobs, the longest, wait for it
        conda:
            ENV_TORCH
        params:
            training_inputs=score_model_training_inputs(config),
        script:
            "../scripts/verify_score_model.py"

elif SCORE_SOURCE == "guided_diffusion":
    GUIDED_DIFFUSION = {
        **config["models"]["score_model"]["guided_diffusion"],
        "checkpoint": str(resolve_path(config["models"]["score_model"]["guided_diffusion"]["checkpoint"], REPO)),
    }

    # guided-diffusion's .pt -> UNet2DModel weights (safetensors) + a small
    # score_model.pt pointing at them, which load_score_model reads.
    rule convert_score_model:
        input:
            present(GUIDED_DIFFUSION["checkpoint"]),
        output:
            model=f"{RESULTS}/models/score_model.pt",
            weights=f"{RESULTS}/models/score_model.safetensors",
            manifest=f"{RESULTS}/models/score_model.json",
        log:
            f"{RESULTS}/logs/convert_score_model.log",
        benchmark:
            f"{RESULTS}/benchmarks/convert_score_model.tsv"
        conda:
            ENV_TORCH
        resources:
            mem_mb=12000,
            runtime=30,
        params:
            guided_diffusion=GUIDED_DIFFUSION,
        script:
            "../scripts/convert_score_model.py"


if SCORE_MODEL_USED:

    # Unconditional samples vs real images. A pretrained 256 px U-Net samples at
    # its own size; the samples are resized to the images'.
    rule check_score_model:
        input:
            score_model=f"{RESULTS}/models/score_model.pt",
            classifiers=expand(f"{RESULTS}/models/{{model}}.pt", model=MODELS),
            test=REAL_IMAGES,
            classes=rules.make_dataset.output.classes,
        output:
            report=f"{RESULTS}/models/score_model_check.json",
            samples=f"{RESULTS}/models/score_model_samples.npz",
        log:
            f"{RESULTS}/logs/check_score_model.log",
        conda:
            ENV_TORCH
        # One thread: a 2-thread job waits for both cores to be free at once, and the
        # stream of 1-thread jobs rarely leaves them so (it starved the second model).
        threads: 1
        resources:
            gpu=GPU,
            mem_mb=16000 if SCORE_SOURCE == "guided_diffusion" else 4000,
            runtime=60,
        params:
            gates=config["models"]["gates"],
            models=MODELS,
            # the U-Net's precision and layout as FUD runs it (the gate checks that sampler)
            precision={k: config["evaluators"].get("fud", {}).get(k, "auto") for k in ("amp_dtype", "channels_last")},
            job=job_params(),
        script:
            "../scripts/check_score_model.py"

    rule plot_score_model_samples:
        input:
            samples=rules.check_score_model.output.samples,
        output:
            figure_paths("score_model_samples"),
        log:
            f"{RESULTS}/logs/plot_score_model_samples.log",
        conda:
            ENV_REPORT
        params:
            plots=config["plots"],
        script:
            "../scripts/plot_score_model_samples.py"


rule model_quality:
    input:
        classifiers=expand(f"{RESULTS}/models/{{model}}_metrics.json", model=MODELS),
        score_model=rules.check_score_model.output.report if SCORE_MODEL_USED else [],
    output:
        f"{RESULTS}/models/quality.json",
    log:
        f"{RESULTS}/logs/model_quality.log",
    conda:
        ENV_ANALYSIS
    params:
        models=MODELS,
        gates=config["models"]["gates"],
    script:
        "../scripts/model_quality.py"
