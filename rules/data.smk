# Sample the images: the synthetic benchmark (train / val / test splits, the
# evaluated subset), a seeded sample of ImageNet's validation set (paper
# profile) or your own image folder, and a figure of examples. All write the
# same eval npz.
# External assets (ImageNet, downloaded weights) are inputs only when they exist
# (`present`): a dry-run builds the DAG without them, and a real run stops before
# any job in the Snakefile's onstart asset check, which names what is missing.
# Your own folder was checked when the config was (fudbench.data.folder).
from fudbench.assets.check import present, resolved_imagenet
from fudbench.data.folder import evaluated_files, mask_file, resolved_folder

if config["data"]["source"] == "folder":
    FOLDER = resolved_folder(config["data"]["folder"], REPO)

    rule make_dataset:
        input:
            # the evaluated files themselves: replacing an image reruns what depends on it
            labels=FOLDER["labels"],
            images=[f"{FOLDER['root']}/{f}" for f, _ in evaluated_files(FOLDER, config["data"]["n_eval"])],
            # their object masks (data.folder.masks), if any
            masks=(
                [str(mask_file(FOLDER, f)) for f, _ in evaluated_files(FOLDER, config["data"]["n_eval"])]
                if FOLDER.get("masks")
                else []
            ),
        output:
            eval=f"{RESULTS}/data/eval.npz",
            classes=f"{RESULTS}/data/classes.json",
            manifest=f"{RESULTS}/data/manifest.csv",
            examples=f"{RESULTS}/data/examples.npz",
            summary=f"{RESULTS}/data/folder_sample.json",
        log:
            f"{RESULTS}/logs/make_dataset.log",
        benchmark:
            f"{RESULTS}/benchmarks/make_dataset.tsv"
        conda:
            ENV_TORCH
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            folder=FOLDER,
            n_eval=config["data"]["n_eval"],
        script:
            "../scripts/prepare_folder.py"

    REAL_IMAGES = rules.make_dataset.output.eval
    EXAMPLE_IMAGES = rules.make_dataset.output.examples

elif config["data"]["source"] == "imagenet":
    IMAGENET = resolved_imagenet(config["data"]["imagenet"], REPO)

    rule make_dataset:
        input:
            present(IMAGENET["root"], IMAGENET.get("labels"), IMAGENET.get("synsets")),
        output:
            eval=f"{RESULTS}/data/eval.npz",
            classes=f"{RESULTS}/data/classes.json",
            manifest=f"{RESULTS}/data/manifest.csv",
            examples=f"{RESULTS}/data/examples.npz",
            summary=f"{RESULTS}/data/imagenet_sample.json",
        log:
            f"{RESULTS}/logs/make_dataset.log",
        benchmark:
            f"{RESULTS}/benchmarks/make_dataset.tsv"
        conda:
            ENV_TORCH
        resources:
            mem_mb=4000,
            runtime=30,
        params:
            imagenet=IMAGENET,
            n_eval=config["data"]["n_eval"],
        script:
            "../scripts/prepare_imagenet.py"

    # Real images for the score-model check, and the few shown as examples.
    REAL_IMAGES = rules.make_dataset.output.eval
    EXAMPLE_IMAGES = rules.make_dataset.output.examples

else:

    rule make_dataset:
        output:
            train=f"{RESULTS}/data/train.npz",
            val=f"{RESULTS}/data/val.npz",
            test=f"{RESULTS}/data/test.npz",
            eval=f"{RESULTS}/data/eval.npz",
            classes=f"{RESULTS}/data/classes.json",
        log:
            f"{RESULTS}/logs/make_dataset.log",
        benchmark:
            f"{RESULTS}/benchmarks/make_dataset.tsv"
        conda:
            ENV_TORCH
        params:
            synthetic=config["data"]["synthetic"],
            n_eval=config["data"]["n_eval"],
            eval_offset=config["data"].get("eval_offset", 0),
            seed=config["seed"],
        script:
            "../scripts/make_dataset.py"

    REAL_IMAGES = rules.make_dataset.output.test
    EXAMPLE_IMAGES = rules.make_dataset.output.test


rule plot_dataset_examples:
    input:
        test=EXAMPLE_IMAGES,
        classes=rules.make_dataset.output.classes,
        # the object masks of real data (the examples are the eval set's first images) and your own
        # folder's class names (the labels file's `class` column), for the figure's outlines and titles
        images=rules.make_dataset.output.eval if config["data"]["source"] != "synthetic" else [],
        labels=FOLDER["labels"] if config["data"]["source"] == "folder" else [],
    output:
        reported_figure("dataset_examples"),
    log:
        f"{RESULTS}/logs/plot_dataset_examples.log",
    conda:
        ENV_REPORT
    params:
        plots=config["plots"],
        report_captions={"dataset_examples": report_caption("dataset_examples", config)},
    script:
        "../scripts/plot_dataset_examples.py"
