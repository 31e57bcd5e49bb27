# Sample the images: the synthetic benchmark (train / val / test splits, the
# evaluated subset) and a figure of examples.


rule make_dataset:
    output:
        train=f"{RESULTS}/data/train.npz",
        val=f"{RESULTS}/data/val.npz",
        test=f"{RESULTS}/data/test.npz",
        eval=f"{RESULTS}/data/eval.npz",
        classes=f"{RESULTS}/data/classes.json",
    params:
        synthetic=config["data"]["synthetic"],
        n_eval=config["data"]["n_eval"],
        seed=config["seed"],
    log:
        f"{RESULTS}/logs/make_dataset.log",
    benchmark:
        f"{RESULTS}/benchmarks/make_dataset.tsv"
    conda:
        ENV_TORCH
    script:
        "../scripts/make_dataset.py"


rule plot_dataset_examples:
    input:
        test=rules.make_dataset.output.test,
        classes=rules.make_dataset.output.classes,
    output:
        figure_paths("dataset_examples"),
    params:
        plots=config["plots"],
    log:
        f"{RESULTS}/logs/plot_dataset_examples.log",
    conda:
        ENV_REPORT
    script:
        "../scripts/plot_dataset_examples.py"
