# Evaluations per model x evaluator x shard, each job covering every explainer
# (one process start and one score-model load instead of one per explainer):
# per-image records and the intermediate images of the first images of the
# shard per explainer, the ones the quality and gallery jobs read (not temp():
# a temp file deleted after use would make every later rerun of quality or
# gallery rerun the evaluate jobs). A new or changed explainer reruns these
# jobs, but only its own work: unchanged explainers are copied from the work
# cache (fudbench.workflow.work_cache), keyed by the content of every input and setting.


# Scheduling priority of the evaluate jobs by the method of their evaluator
# (the longest jobs first; every other method 0). See `priority:` below.
LONG_EVALUATE_PRIORITY = {"fud": 15, "ffid": 12}

from fudbench.report.gallery import FORMAT as GALLERY_FORMAT


rule evaluate:
    input:
        unpack(evaluator_assets),
        unpack(lambda w: plugin_inputs(config["evaluators"][w.evaluator])),
        # an evaluator that explains again (robustness, randomisation) rebuilds each explainer: its plug-ins
        unpack(lambda w: explainer_plugin_inputs(w.evaluator)),
        model=f"{RESULTS}/models/{{model}}.pt",
        # the images with their ground-truth masks: an evaluator that reads masks (EvaluatorSpec.needs_masks)
        # gets its shard's from here, as explainers do (pipeline.ShardEvaluation)
        images=rules.make_dataset.output.eval,
        attributions=expand(
            f"{RESULTS}/attributions/{{{{model}}}}/{{explainer}}/shard{{{{shard}}}}.npz", explainer=EXPLAINERS
        ),
        # feature-OOD reference (rule ood_reference): the records' mahalanobis and knn columns
        ood_reference=f"{RESULTS}/ood_reference/{{model}}.npz",
    output:
        records=evaluate_outputs("records", "parquet"),
        samples=evaluate_outputs("samples", "npz"),
    log:
        f"{RESULTS}/logs/evaluate/{{model}}/{{evaluator}}/shard{{shard}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/evaluate/{{model}}/{{evaluator}}/shard{{shard}}.tsv"
    # Longest first: FUD's jobs (every explainer's masks through the score
    # model), then F-Fidelity's (10 stochastic samples per image, sparsity and
    # explainer) start as soon as their inputs are there, before the short
    # jobs, so the cores are not left with one long job alone at the end.
    priority: lambda w: LONG_EVALUATE_PRIORITY.get(method_of(w.evaluator, config["evaluators"][w.evaluator]), 0)
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=240,
    params:
        evaluator=lambda w: evaluator_settings(w.evaluator),
        # strict_nonfinite only when set: a config without it keeps the params its jobs were run with
        evaluation={
            k: config["evaluation"][k]
            for k in ("ratios", "reduction", "strict_nonfinite")
            if k in config["evaluation"]
        },
        explainers=EXPLAINERS,
        # the explainer entries (as the explain jobs got them) for an evaluator that explains again; else {}
        explainer_entries=lambda w: explainer_entries(w.evaluator),
        shard_size=config["data"]["shard_size"],
        kept_images=samples_kept_per_shard(),
        seed_group=lambda w: SEED_GROUPS[w.model],  # explain / evaluate noise: fudbench.core.seeding
        cache=lambda w: f"{RESULTS}/cache/evaluate/{w.model}/{w.evaluator}/shard{w.shard}",
        job=job_params(),
    script:
        "../scripts/evaluate.py"


rule srg_reference:
    # R-OMS orders superpixels at random: one computation per model x shard
    # serves every explainer's evaluate job of an srg entry.
    input:
        unpack(lambda w: protocol_assets(w.evaluator)),
        unpack(lambda w: plugin_inputs(config["evaluators"][w.evaluator])),
        model=f"{RESULTS}/models/{{model}}.pt",
        images=rules.make_dataset.output.eval,
    output:
        f"{RESULTS}/srg_reference/{{evaluator}}/{{model}}/shard{{shard}}.parquet",
    log:
        f"{RESULTS}/logs/srg_reference/{{evaluator}}/{{model}}/shard{{shard}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/srg_reference/{{evaluator}}/{{model}}/shard{{shard}}.tsv"
    priority: 20  # a second's job that its model's SRG evaluate jobs wait for (as ood_reference)
    conda:
        ENV_TORCH
    threads: 1
    resources:
        gpu=GPU,
        mem_mb=6000,
        runtime=240,
    params:
        evaluator=lambda w: evaluator_settings(w.evaluator),
        target=config["target"],
        shard_size=config["data"]["shard_size"],
        job=job_params(),
    script:
        "../scripts/srg_reference.py"


rule gallery:
    input:
        images=rules.make_dataset.output.eval,
        attributions=expand(
            f"{RESULTS}/attributions/{{model}}/{{explainer}}/shard0.npz",
            model=MODELS,
            explainer=EXPLAINERS,
        ),
        samples=expand(
            f"{RESULTS}/samples/{{model}}/{{explainer}}/{{evaluator}}/shard0.npz",
            model=MODELS,
            explainer=EXPLAINERS,
            evaluator=EVALUATORS,
        ),
    output:
        f"{RESULTS}/gallery/gallery.npz",
    log:
        f"{RESULTS}/logs/gallery.log",
    conda:
        ENV_ANALYSIS
    params:
        n_images=config["evaluation"]["gallery_images"],
        models=MODELS,
        explainers=EXPLAINERS,
        evaluators=EVALUATORS,
        key_format=GALLERY_FORMAT,  # a gallery of an older key layout is remade (a changed param)
    script:
        "../scripts/gallery.py"


# One job per evaluator x shard over all models and the pooled explainers
# (analysis.pooled_explainers: the only ones Tables 3 and 9 read, so the
# meta-evaluation's degraded copies cost no piq time and adding one does not
# rerun these jobs). piq's import costs seconds, so finer jobs would mostly
# pay start-up.
rule quality:
    input:
        images=rules.make_dataset.output.eval,
        samples=expand(
            f"{RESULTS}/samples/{{model}}/{{explainer}}/{{{{evaluator}}}}/shard{{{{shard}}}}.npz",
            model=MODELS,
            explainer=POOLED_EXPLAINERS,
        ),
    output:
        f"{RESULTS}/quality/{{evaluator}}/shard{{shard}}.parquet",
    log:
        f"{RESULTS}/logs/quality/{{evaluator}}/shard{{shard}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/quality/{{evaluator}}/shard{{shard}}.tsv"
    conda:
        ENV_TORCH
    threads: 1
    params:
        quality=config["evaluation"]["quality"],
        models=MODELS,
        explainers=POOLED_EXPLAINERS,
        shard_size=config["data"]["shard_size"],
    script:
        "../scripts/quality.py"
