# Shared constants, wildcard constraints, resource helpers and targets.
from fudbench.data.shards import n_shards
from fudbench.fingerprint import score_model_training_inputs

RESULTS = f"results/{config['run_name']}"
MODELS = list(config["models"]["classifiers"])
EXPLAINERS = list(config["explainers"])
EVALUATORS = list(config["evaluators"])
SHARDS = list(range(n_shards(config["data"]["n_eval"], config["data"]["shard_size"])))
# GPU rules ask the scheduler for a GPU only when the run is meant for one.
GPU = 1 if config["device"] == "cuda" else 0
ENV_TORCH = "../envs/torch.yaml"
ENV_ANALYSIS = "../envs/analysis.yaml"
ENV_REPORT = "../envs/report.yaml"


wildcard_constraints:
    model="|".join(MODELS),
    explainer="|".join(EXPLAINERS),
    evaluator="|".join(EVALUATORS),
    shard=r"\d+",


def repo_path(p):
    """Config paths are relative to the repository, not the working directory."""
    return str(Path(p) if Path(p).is_absolute() else REPO / p)


def job_params():
    """Values every library job needs (seed, device)."""
    return {"seed": config["seed"], "device": config["device"]}


def evaluator_assets(wildcards):
    """Only FUD needs the score model, so retraining it reruns only FUD jobs."""
    return {"score_model": f"{RESULTS}/models/score_model.pt"} if wildcards.evaluator == "fud" else {}


def figure_paths(stem):
    return expand(f"{RESULTS}/figures/{stem}.{{ext}}", ext=config["plots"]["formats"])


def all_targets():
    return [
        f"{RESULTS}/models/quality.json",
        f"{RESULTS}/tables/table4_kendall.tex",
        f"{RESULTS}/tables/table4_kendall.csv",
        f"{RESULTS}/tables/table7_scores.tex",
        f"{RESULTS}/tables/table7_scores.csv",
        f"{RESULTS}/tables/table2_ood.tex",
        f"{RESULTS}/tables/table2_ood.csv",
        f"{RESULTS}/tables/table3_quality.tex",
        f"{RESULTS}/tables/table3_quality.csv",
        *figure_paths("fig2_quality_radar"),
        *figure_paths("confidence_vs_ratio"),
        *figure_paths("dataset_examples"),
        *figure_paths("score_model_samples"),
        *figure_paths("qualitative_samples"),
    ]
